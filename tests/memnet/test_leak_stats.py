"""The adversary's statistics on synthetic observation streams with known answers: identical
distributions pass at the stated rate, small known differences are flagged, each family sees
only its own kind of difference, and the permutation-stream test tells uniform random
permutations from look-alikes."""

from __future__ import annotations

import numpy as np
import pytest

from veil.core.leak import stats
from veil.memnet.leak import LEAKS, NO_LEAK, Observation, analyse, windows


def clustered_windows(rng, probs, windows_, events, hops=3, step=1):
    """Windows of counts where each event is seen `hops` times, on categories `step` apart (a
    packet crossing several channels; step 0: a burst of packets to one place): far from
    independent events."""
    first = np.stack([rng.multinomial(n, probs) for n in rng.poisson(events, size=windows_)])
    return sum(np.roll(first, h * step, axis=1) for h in range(hops)).astype(float)


def test_homogeneity_holds_its_level_on_clustered_events():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(12))
    for step in (0, 1):
        ps = [stats.homogeneity(clustered_windows(rng, probs, 20, 60, step=step),
                                clustered_windows(rng, probs, 20, 60, step=step), power=None).p for _ in range(200)]
        rate = np.mean(np.array(ps) < 0.05)
        # 200 draws at level 0.05: binomial 99.9% range is about 0.01..0.11.
        assert 0.005 <= rate <= 0.11, (step, rate)
    # A naive chi-square that counts every channel crossing as an independent event is not
    # valid here: it rejects far more often (why the null comes from relabelling windows).
    naive = []
    for _ in range(50):
        a, b = clustered_windows(rng, probs, 20, 60, step=0), clustered_windows(rng, probs, 20, 60, step=0)
        x, df = stats._pearson(np.vstack([a.sum(0), b.sum(0)]))
        naive.append(stats.st.chi2.sf(x, df))
    assert np.mean(np.array(naive) < 0.05) > 0.2


def test_homogeneity_flags_a_small_known_bias():
    rng = np.random.default_rng(2)
    pa = np.full(16, 1 / 16)
    pb = pa.copy()
    pb[0] *= 1.25  # one category 25% more likely
    pb /= pb.sum()
    r = stats.homogeneity(clustered_windows(rng, pa, 60, 1500), clustered_windows(rng, pb, 60, 1500))
    assert r.p < 1e-3, r
    # The detectable effect it states is below the effect it found.
    w = np.sqrt(((pb - pa) ** 2 / ((pa + pb) / 2)).sum()) / 2
    assert r.detail["detectable_w"] < 3 * w


def test_strata_ignore_how_busy_each_source_is():
    """(source, destination) counts: B's source 0 is four times as busy, but every source's
    destinations are drawn alike: the stratified test passes, an unstratified one flags it."""
    rng = np.random.default_rng(3)
    dest = rng.dirichlet(np.ones(8))

    def win(busy0):
        m = np.zeros((30, 16))
        for w in range(30):
            m[w, :8] = rng.multinomial(rng.poisson(40 * busy0), dest)
            m[w, 8:] = rng.multinomial(rng.poisson(40), dest)
        return m

    a, b = win(1), win(4)
    strata = np.repeat([0, 1], 8)
    assert stats.homogeneity(a, b, strata=strata).p > 1e-3
    assert stats.homogeneity(a, b).p < 1e-6


def test_holm_and_wilson():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    lo, hi = stats.wilson(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    assert stats.binomial_p(60, 100) == pytest.approx(0.02844, abs=1e-4)
    a = stats.detectable_accuracy(400, 1e-3)
    assert stats.binomial_p(int(round(a * 400)), 400) < 1e-3 < stats.binomial_p(int(round(a * 400)) - 1, 400)


def test_classifier_at_chance_on_identical_windows_and_above_on_different_ones():
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(8), 25)
    same = stats.classify(rng.normal(size=(200, 20)), rng.normal(size=(200, 20)), groups, groups, "c")
    lo, hi = same.detail["ci95"]
    assert lo <= 0.5 <= hi + 0.02 and same.p > 1e-3, same
    xb = rng.normal(size=(200, 20))
    xb[:, 3] += 1.0
    diff = stats.classify(rng.normal(size=(200, 20)), xb, groups, groups, "c")
    # Eight folds, every relabelling of them tried (fold 0 fixed: swapping all is the same
    # problem): when none scores as well as the observed labels, p is the exact floor 2^-7.
    assert diff.statistic > 0.62 and diff.p == pytest.approx(2.0 ** -7) and diff.detail["ci95"][0] > 0.5, diff
    assert diff.detail["exact"] and diff.detail["relabellings"] == 128


def random_permutation_stream(rng, sources, m, blocks):
    src, dst = [], []
    for s in sources:
        for _ in range(blocks):
            src += [s] * m
            dst += list(rng.permutation(m) + 100)
    return np.array(src), np.array(dst)


def test_permutation_stream_accepts_uniform_permutations_at_its_level():
    rng = np.random.default_rng(5)
    m, alphabet = 8, list(range(100, 108))
    ps = []
    for _ in range(150):
        s, d = random_permutation_stream(rng, [0, 1, 2], m, 40)
        ps.append(stats.permutation_stream(s, d, [0, 1, 2], alphabet).p)
    assert np.mean(np.array(ps) < 0.05) <= 0.11
    # The position statistic, rescaled, has the chi-square's mean (M-1)^2.
    s, d = random_permutation_stream(rng, list(range(40)), m, 50)
    r = stats.permutation_stream(s, d, list(range(40)), alphabet)
    assert r.detail["non_permutation_blocks"] == 0
    assert abs(r.detail["positions_chi2"] - 49) < 5 * np.sqrt(2 * 49)


def test_permutation_stream_rejects_look_alikes():
    rng = np.random.default_rng(6)
    m, alphabet = 8, list(range(100, 108))
    # A fixed cyclic order started at a random point: every block is a permutation and every
    # position is uniform, but successors are not.
    src, dst = [], []
    for s in range(3):
        start = rng.integers(m)
        for i in range(40 * m):
            src.append(s)
            dst.append(100 + (start + i) % m)
    r = stats.permutation_stream(np.array(src), np.array(dst), [0, 1, 2], alphabet)
    assert r.detail["non_permutation_blocks"] == 0 and r.p < 1e-6, r.detail
    # Independent uniform destinations: not permutations.
    d = rng.integers(100, 108, size=3 * 40 * m)
    s = np.repeat([0, 1, 2], 40 * m)
    assert stats.permutation_stream(s, d, [0, 1, 2], alphabet).p < 1e-6
    # Permutations whose first slot favours module 100: positions are biased.
    src, dst = [], []
    for s_ in range(3):
        for _ in range(200):
            p = list(rng.permutation(m) + 100)
            if rng.random() < 0.3:
                i = p.index(100)
                p[0], p[i] = p[i], p[0]
            src += [s_] * m
            dst += p
    r = stats.permutation_stream(np.array(src), np.array(dst), [0, 1, 2], alphabet)
    assert r.detail["non_permutation_blocks"] == 0 and r.detail["positions_p"] < 1e-6


def synthetic_observation(rng, cycles=40_000, rate=0.02, dest_bias=0.0, hops=3, nodes=8, channels=24):
    """A fake run: each of `nodes` sources injects with probability `rate` per cycle toward a
    destination (node 0 favoured by `dest_bias`), and the packet crosses `hops` channels that
    depend on (source, destination)."""
    t = np.flatnonzero(rng.random(cycles * nodes) < rate)
    cyc, src = t // nodes, t % nodes
    p = np.full(nodes, 1.0 / nodes)
    p[0] += dest_bias
    p /= p.sum()
    dst = rng.choice(nodes, size=len(t), p=p)
    ch = np.concatenate([(src * 3 + dst * 5 + h) % channels for h in range(hops)])
    ch_cycle = np.concatenate([cyc + h for h in range(hops)])
    o = np.argsort(ch_cycle, kind="stable")
    return Observation(ch_cycle=ch_cycle[o].astype(np.uint64), ch_id=ch[o].astype(np.uint32),
                       ch_flits=np.ones(len(o), np.uint16), inj_cycle=cyc.astype(np.uint64),
                       inj_src=src.astype(np.uint32), inj_dst=dst.astype(np.uint32),
                       inj_flits=np.ones(len(t), np.uint16), complete_until=2**64 - 1,
                       channel_kind=["local"] * channels, channel_from=[0] * channels, channel_to=[0] * channels,
                       cpu_nodes=list(range(nodes)), module_nodes=list(range(nodes)), nodes=nodes,
                       result={"runtime_cycles": cycles})


@pytest.mark.parametrize("case,spatial,temporal", [
    ("identical", NO_LEAK, NO_LEAK),
    ("where", LEAKS, NO_LEAK),      # B favours destination 0: only *where* differs
    ("how_many", NO_LEAK, LEAKS),   # B injects 40% more often: only *how many* differs
])
def test_each_family_sees_only_its_own_kind_of_difference(case, spatial, temporal):
    rng = np.random.default_rng(7)
    kb = {"identical": {}, "where": {"dest_bias": 0.08}, "how_many": {"rate": 0.028}}[case]
    runs_a = [windows(synthetic_observation(rng, cycles=20_000), 1000) for _ in range(13)]
    runs_b = [windows(synthetic_observation(rng, cycles=20_000, **kb), 1000) for _ in range(13)]
    r = analyse(runs_a, runs_b, nodes=8, cpu_nodes=list(range(8)), module_nodes=list(range(8)), alpha=1e-3,
                power_trials=10)
    assert r["windows_a"] == r["windows_b"] == 13 * 20
    assert r["spatial"]["verdict"] == spatial, r["spatial"]
    assert r["temporal"]["verdict"] == temporal, r["temporal"]


def test_windows_count_every_event_once():
    rng = np.random.default_rng(8)
    o = synthetic_observation(rng, cycles=10_500)
    w = windows(o, 1000)
    assert len(w) == 10
    inside = o.inj_cycle < 10_000
    assert w.pairs.sum() == inside.sum() == w.per_source.sum() == w.scalars["packets"].sum()
    assert w.channels.sum() == (o.ch_cycle < 10_000).sum()
    # Packets per (source, destination) in window 3, recomputed directly.
    sel = (o.inj_cycle >= 3000) & (o.inj_cycle < 4000)
    direct = np.zeros((8, 8))
    np.add.at(direct, (o.inj_src[sel], o.inj_dst[sel]), 1)
    assert (w.pairs[3].reshape(8, 8) == direct).all()


def test_permutation_stream_of_multisets():
    """Blocks where every symbol appears k times (ghost non-minimal's intermediates): random
    arrangements pass, the same stream read as plain permutations does not."""
    rng = np.random.default_rng(9)
    m, k, alphabet = 6, 6, list(range(100, 106))
    ps = []
    for _ in range(60):
        src, dst = [], []
        for s in range(4):
            for _ in range(30):
                src += [s] * (m * k)
                dst += list(rng.permutation(np.repeat(np.arange(m), k)) + 100)
        r = stats.permutation_stream(np.array(src), np.array(dst), [0, 1, 2, 3], alphabet, multiplicity=k)
        assert r.detail["non_permutation_blocks"] == 0
        ps.append(r.p)
    assert np.mean(np.array(ps) < 0.05) <= 0.15
    assert stats.permutation_stream(np.array(src), np.array(dst), [0, 1, 2, 3], alphabet).p < 1e-6


def test_planted_shares_are_the_shares_of_the_planted_array_draw_for_draw():
    """The power search plants B's runs straight into shares (PlantedShares); it must give the
    shares of plant_cpu_pairs' array exactly, and leave the generator where that left it."""
    from veil.memnet.leak.verdict import PlantedShares, _run_shares, plant_cpu_pairs

    g = np.random.default_rng(3)
    for blocks, segments in ((0, 1), (1, 1), (700, 1), (701, 3)):
        c = g.poisson(0.05, size=(blocks, 4, 20))
        c[:, 1, :] = 0  # a CPU that sent nothing
        for effect, targets in ((0.05, [0]), (0.5, [2, 5, 7]), (1.0, list(range(10, 20)))):
            r1, r2 = np.random.default_rng(8), np.random.default_rng(8)
            want = _run_shares(plant_cpu_pairs(c, effect, targets, r1), segments)
            got = PlantedShares(c, segments).shares(effect, targets, r2)
            assert got.shape == want.shape and np.array_equal(got, want), (blocks, segments, effect)
            assert r1.integers(1 << 31) == r2.integers(1 << 31)
