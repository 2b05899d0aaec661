"""The reply-timing features travel with a run's windows wherever they go: through a planted
redirect (`plant = FRACTION`) and through an acceptance pool saved to and read back from its
cache. Where they were dropped the REPLY family fell back to "not recorded" (p = 1, "no leak
detected") without saying so: a planted config, or a same-secret measurement over a cached pool,
could never flag reply timing."""

from __future__ import annotations

import numpy as np

from veil.memnet.leak import Windows, plant_windows
from veil.memnet.leak.accept import Meta, _load_pool, _save_pool
from veil.memnet.leak.observe import REPLY_BINS
from veil.memnet.leak.verdict import analyse

NODES, CPUS, MODULES = 8, [0, 1], [4, 5, 6, 7]


def run_windows(rng: np.random.Generator, slow: float = 0.0) -> Windows:
    """A run of 6 windows; `slow` moves that share of every module's replies into the last bin."""
    n = 6
    pairs = np.zeros((n, NODES, NODES), dtype=np.int64)
    for c in CPUS:
        pairs[:, c, MODULES] = rng.integers(5, 15, size=(n, len(MODULES)))
    per_source = pairs.sum(axis=2)
    replies = rng.multinomial(400, [0.5, 0.3, 0.1, 0.05, 0.05] + [0.0] * (len(REPLY_BINS) - 5), size=len(MODULES))
    moved = (replies * slow).astype(np.int64)
    replies = replies - moved
    replies[:, -1] += moved.sum(axis=1)
    scalars = {k: rng.random(n) for k in ("packets", "flits", "traversals", "gap_mean", "gap_cv", "replies")}
    dest = rng.integers(0, 10, size=(4, len(CPUS), NODES))
    return Windows(channels=rng.integers(0, 9, size=(n, 12)), pairs=pairs.reshape(n, NODES * NODES),
                   per_source=per_source, scalars=scalars, dest_seq=dest, chan_seq=rng.integers(0, 9, size=(3, 12)),
                   replies=replies)


def test_a_planted_redirect_keeps_the_reply_profile():
    rng = np.random.default_rng(1)
    w = run_windows(rng)
    p = plant_windows(w, 0.3, CPUS, MODULES, NODES, rng)
    assert p.replies is not None and np.array_equal(p.replies, w.replies)


def test_a_cached_pool_reads_back_its_reply_profiles(tmp_path):
    rng = np.random.default_rng(2)
    runs = [run_windows(rng) for _ in range(3)]
    path = tmp_path / "pool.npz"
    _save_pool(path, runs, Meta(NODES, CPUS, MODULES), 1.5)
    back, meta, cpu_s = _load_pool(path)
    assert cpu_s == 1.5 and meta.module_nodes == MODULES
    for a, b in zip(runs, back):
        assert b.replies is not None and np.array_equal(a.replies, b.replies)


def test_the_reply_family_still_tests_after_the_pool_cache(tmp_path):
    """13 pairs whose B replies are much slower: flagged from the runs themselves, and from the
    same runs read back from a pool file (before: p = 1 there)."""
    rng = np.random.default_rng(3)
    a = [run_windows(rng) for _ in range(13)]
    b = [run_windows(rng, slow=0.5) for _ in range(13)]
    path = tmp_path / "pool.npz"
    _save_pool(path, a + b, Meta(NODES, CPUS, MODULES), 0.0)
    back, _, _ = _load_pool(path)
    kw = dict(nodes=NODES, cpu_nodes=CPUS, module_nodes=MODULES, alpha=1e-3, power_trials=0, classify=False)
    assert analyse(a, b, **kw)["reply"]["leaks"]
    assert analyse(back[:13], back[13:], **kw)["reply"]["leaks"]
