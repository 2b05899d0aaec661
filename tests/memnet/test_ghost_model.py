"""The analytic models of the ghost routing evaluation (Table II, ghost dummies, network ORAM)
against hand-computed cases, and the derived traces the evaluation replays."""

import numpy as np
import pytest

from veil.memnet import secure_model as sm


def test_h_avg_by_hand():
    # 2x2 mesh, CPU at router 0: modules at 0, 1, 1 and 2 hops
    mesh = sm.network({"topology": "mesh", "k": 2, "n": 2, "cpus": 1})
    assert mesh.modules == 4 and mesh.h_avg == pytest.approx(1.0)
    # 2x2 flattened butterfly: one hop per differing row/column, the same distances
    ff = sm.network({"topology": "flatfly", "k": 2, "cpus": 1})
    assert ff.h_avg == pytest.approx(1.0)
    # 3x3 torus from router 0: 0, four at 1, four at 2
    torus = sm.network({"topology": "torus", "k": 3, "n": 2, "cpus": 1})
    assert torus.h_avg == pytest.approx((4 * 1 + 4 * 2) / 9)
    # dragonfly a=2, h=1, g=3: router 0 owns the link to group 1 (landing on router 2), router 1
    # the one to group 2 (landing on router 4): 0, 1 | 1, 2 | 2, 3 hops
    df = sm.network({"topology": "dragonfly", "a": 2, "h": 1, "g": 3, "cpus": 1})
    assert df.modules == 6 and df.h_avg == pytest.approx(9 / 6)
    assert sorted(df.adjacency[0]) == [1, 2] and sorted(df.adjacency[1]) == [0, 4]


def test_default_dragonfly_h_avg_matches_minimal_routes():
    # 8 groups of 8, one global link per router (one unconnected per group); CPUs at routers 0
    # and 4 of each group. Within a group 7/64 modules at 1 hop; another group: local hop unless
    # the CPU's router owns the link (1 group of 7 for router 0, 1 for router 4), global hop,
    # local hop unless the landing router is the destination (1 of 8).
    net = sm.network({})
    inside = 7 * 1
    other = 7 * 8 * (1 + 1 + 7 / 8) - 8 * 1  # owner of the link to one group: no first local hop
    assert net.h_avg == pytest.approx((inside + other) / 64)


def test_ghost_dummies_markov_chain_by_hand():
    # one module: the next slot is always the destination
    assert sm.ghost_dummies_low_load(1) == pytest.approx(0.0)
    # two modules (worked in docs/memnet.md): stationary (0.6, 0.4), costs (1/2, 3/4) -> 0.6
    assert sm.ghost_dummies_low_load(2) == pytest.approx(0.6)


def test_ghost_dummies_match_a_monte_carlo_walk():
    rng = np.random.default_rng(7)
    n, packets = 8, 40000
    perm, pos, dummies = rng.permutation(n), 0, 0
    for d in rng.integers(0, n, packets):
        while True:
            if pos == n:
                perm, pos = rng.permutation(n), 0
            slot = perm[pos]
            pos += 1
            if slot == d:
                break
            dummies += 1
    assert dummies / packets == pytest.approx(sm.ghost_dummies_low_load(n), rel=0.02)


def test_adaptive_weight_matches_the_declared_share():
    # 4 hot modules of 64 taking half the traffic: 4w / (60 + 4w) = 1/2 -> w = 15
    assert sm.adaptive_hot_weight(64, 4, 0.5) == 15
    assert sm.adaptive_hot_weight(64, 1, 0.0) == 1


def test_table2_on_a_2x2_mesh():
    net = sm.network({"topology": "mesh", "k": 2, "n": 2, "cpus": 1})
    t = sm.table2(net, dummies={"ghost_minimal": 1.5, "ghost_nonminimal": 0.5})
    assert t["minimal"]["injection_packets"] == 1 and t["minimal"]["network_in_h_avg"] == pytest.approx(2)
    assert t["minimal_dummy"]["injection_packets"] == 4 and t["minimal_dummy"]["network_overhead"] == pytest.approx(4)
    # nearest-neighbour tour 0 -> 1 -> 3 -> 2 -> back to 0: four one-hop legs
    assert sm.sequential_tour(net) == [0, 1, 3, 2]
    assert t["sequential"]["network_hops"] == pytest.approx(4)
    assert t["broadcast"]["network_hops"] == pytest.approx(6)      # 3 tree edges, down and up
    assert t["sequential"]["injections_all_legs"] == 5 and t["broadcast"]["injections_all_legs"] == 8
    assert sm.router_links(net) == 8
    assert t["ghost_minimal"]["injection_packets"] == pytest.approx(2.5)
    assert t["ghost_minimal"]["network_in_h_avg"] == pytest.approx(5)
    # Valiant: CPU -> intermediate (mean 1) + intermediate -> final (mean over all pairs 1)
    assert t["ghost_nonminimal"]["network_hops"] == pytest.approx(2 * 1.5 * 2)
    # legs: 4 for i != f (3 of 4 slots), 2 for i = f
    assert t["ghost_nonminimal"]["injections_all_legs"] == pytest.approx(1.5 * (4 * 0.75 + 2 * 0.25))


def test_network_oram_by_hand():
    # 4 modules in heap order: leaves 2 and 3, paths [0, 2] and [0, 1, 3]
    assert sm.oram_tree_paths(4) == [[0, 2], [0, 1, 3]]
    assert [len(p) for p in sm.oram_tree_paths(64)].count(6) == 31
    net = sm.network({"topology": "mesh", "k": 2, "n": 2, "cpus": 1})
    o = sm.network_oram(net)
    assert o["path_modules"] == pytest.approx(2.5)
    assert o["packets_injected"] == pytest.approx(5) and o["packets_total"] == pytest.approx(10)
    # hops from router 0: path [0, 2] 0 + 1, path [0, 1, 3] 0 + 1 + 2; mean 2, four packets each
    assert o["network_hops"] == pytest.approx(8)
    assert o["flits_total"] == pytest.approx(2.5 * 12)
    # fine grain: 64 GiB of 64-byte lines, Z = 4: 2^28 leaves, L = 28, 2 * 4 * 29 transfers
    assert sm.fine_grain_path_oram(64 << 30) == {"levels": 28, "transfers_per_access": 232}


def test_default_line_address_decodes_to_its_module():
    a = sm.default_line_address(np.array([5, 63]), np.array([3, 0]), np.array([2, 15]), np.array([1, 3]), modules=64)
    # RW:VL:CB:LY:CLL: module = (addr / 64 / 4) % 64
    assert list((a // 64 // 4) % 64) == [5, 63]
    with pytest.raises(ValueError):
        sm.default_line_address(64, 0, 0, 0, modules=64)


def _toy_trace(path, records=40, threads=2):
    from veil.trace.format import LOAD_FILL, TraceWriter, record_dtype

    recs = np.zeros(records, dtype=record_dtype(64))
    recs["thread"] = np.arange(records) % threads
    recs["kind"] = LOAD_FILL
    recs["addr"] = np.arange(records) * 64
    recs["insts"] = 100 + np.arange(records)
    w = TraceWriter(path, {"line_size": 64, "threads": threads})
    w.write(recs)
    w.finish()
    return recs


def test_trace_prefix_and_oram_trace(tmp_path):
    from veil.memnet.oram_trace import oram_trace, trace_prefix
    from veil.trace.format import LOAD_FILL, WRITEBACK, read_trace

    src = tmp_path / "toy.trc"
    orig = _toy_trace(src)
    _, cut = read_trace(trace_prefix(src, 7))
    assert [int((cut["thread"] == t).sum()) for t in (0, 1)] == [7, 7]
    assert list(cut["insts"][cut["thread"] == 1]) == list(orig["insts"][orig["thread"] == 1][:7])

    out = oram_trace(src, modules=4, seed=3)
    assert out == oram_trace(src, modules=4, seed=3)     # written once, then reused
    _, o = read_trace(out)
    mods = (o["addr"] // 64 // 4) % 4
    i, seen = 0, 0
    while i < len(o):
        k = 2 if mods[i + 1] == 2 else 3     # after the root: module 2 is a leaf, module 1 leads to 3
        path = list(mods[i:i + k])
        assert path in ([0, 2], [0, 1, 3])
        assert list(o["kind"][i:i + 2 * k]) == [LOAD_FILL] * k + [WRITEBACK] * k
        assert list(mods[i + k:i + 2 * k]) == path
        assert o["insts"][i] == orig["insts"][seen] and not o["insts"][i + 1:i + 2 * k].any()
        i += 2 * k
        seen += 1
    assert seen == len(orig)


def test_the_two_derivations_of_ghost_dummies_agree():
    # The simulator's crate (Rust, used by its own tests) and the evaluation's closed-form model
    # (numpy) derive the same Markov chain independently; each checks the other.
    from veil.memnet.memsys import ghost_dummies_analytic

    for n in (1, 2, 3, 5, 16, 64, 100):
        assert ghost_dummies_analytic(n) == pytest.approx(sm.ghost_dummies_low_load(n), rel=1e-9, abs=1e-12)
