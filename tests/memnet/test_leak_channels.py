"""Channel attribution: the spatial family compares where packets go independently of when, the
temporal family when. Phased synthetic traces (identity page mapping, so an address names its
module: module = line / 4 mod 64), 4 threads, the same records in A and B except for what the
secret changes."""

from __future__ import annotations

import numpy as np
import pytest

from veil.core.config import validate
from veil.memnet.leak import LEAKS, NO_LEAK, run

THREADS = 4
RECORDS = 160  # per thread


def phased_trace(path, phases: list[list[int]], insts: int, seed: int = 0) -> str:
    """Each thread's records go through `phases` in order (equal parts), a phase's misses spread
    over its modules; `insts` instructions before each miss (the program's rate)."""
    from veil.trace.format import LOAD_FILL, TraceWriter, record_dtype

    rng = np.random.default_rng(seed)
    per = RECORDS // len(phases)
    recs = np.zeros(RECORDS * THREADS, dtype=record_dtype(64))
    i = 0
    for k in range(RECORDS):
        mods = phases[min(k // per, len(phases) - 1)]
        for t in range(THREADS):
            m = mods[(k + t) % len(mods)]
            line = (m + 64 * int(rng.integers(0, 1 << 12))) * 4
            recs[i] = (t, LOAD_FILL, 0, line * 64, insts, 0)
            i += 1
    w = TraceWriter(str(path), {"workload": "", "program": "phased", "args": [], "input_hash": "",
                                "l1": {"size": 8192, "assoc": 1}, "llc": {"size": 262144, "assoc": 4},
                                "line_size": 64, "tool_version": "", "threads": THREADS, "extra": {}})
    w.write(recs)
    w.finish()
    return str(path)


def leak_run(a: str, b: str, algorithm: str = "minimal", **memsys):
    cfg = validate("memnet.leak", {
        "memsys": {"cpus": THREADS, "encryption": "source_otp", "page_mapping": "identity", **memsys},
        "algorithm": algorithm, "repeats": 13, "window": 2000 if algorithm == "adaptive_ghost" else 500,
        "power_trials": 5,
        "a": {"label": "A", "workload": "trace", "trace": a}, "b": {"label": "B", "workload": "trace", "trace": b}})
    return run(cfg)


def test_a_rate_only_secret_is_temporal_not_spatial(tmp_path):
    """The same modules in the same order; B computes five times as much between misses. Cycle
    windows cut to the shorter run compared B's first phase with all of A (flagged spatially at
    the floor); blocks cut by packet count compare the same stretch of the program."""
    phases = [list(range(0, 16)), list(range(32, 48))]
    a = phased_trace(tmp_path / "fast.vtrace", phases, insts=100)
    b = phased_trace(tmp_path / "slow.vtrace", phases, insts=2000)
    rep = leak_run(a, b)
    assert rep["runtime_b"] > 3 * rep["runtime_a"]
    assert rep["temporal"]["verdict"] == LEAKS, rep["temporal"]
    assert rep["spatial"]["verdict"] == NO_LEAK, rep["spatial"]


def test_a_module_only_secret_is_spatial_not_temporal(tmp_path):
    """The same rate; B's misses go to other modules, each as far from every CPU as A's: on an
    8 x 8 torus with the CPUs at x = 0 (routers 0, 16, 32, 48), the modules at x = 1 and their
    mirror images at x = 7. (On the default dragonfly the sets tried, groups 1 and 3 or positions
    4-7 and 8-11 of every group, are reached in other hops by some CPU, which changes that CPU's
    rate: a real timing leak, which the temporal family reports.)"""
    a = phased_trace(tmp_path / "a.vtrace", [[r for r in range(64) if r % 8 == 1]], insts=100)
    b = phased_trace(tmp_path / "b.vtrace", [[r for r in range(64) if r % 8 == 7]], insts=100)
    rep = leak_run(a, b, topology="torus", k=8, n=2, routing="dor")
    assert rep["spatial"]["verdict"] == LEAKS, rep["spatial"]
    assert rep["temporal"]["verdict"] == NO_LEAK, rep["temporal"]


def test_reply_profile_matches_a_modules_departures_with_its_arrivals_in_order():
    """Module node 1 receives packets at cycles 10 and 20 (its ejection channel) and sends at 15
    and 90: delays 5 and 70, bins [0, 8) and [64, 96). Node 2 receives nothing."""
    from veil.memnet.leak.observe import REPLY_BINS, Observation, reply_profile

    o = Observation(ch_cycle=np.array([10, 20, 30], np.uint64), ch_id=np.array([0, 0, 1], np.uint32),
                    ch_flits=np.ones(3, np.uint16), inj_cycle=np.array([15, 90, 5], np.uint64),
                    inj_src=np.array([1, 1, 0], np.uint32), inj_dst=np.array([0, 0, 1], np.uint32),
                    inj_flits=np.ones(3, np.uint16), complete_until=2**64 - 1,
                    channel_kind=["ejection", "local"], channel_from=[0, 0], channel_to=[1, 2],
                    cpu_nodes=[0], module_nodes=[1, 2], nodes=3, result={"runtime_cycles": 100})
    r = reply_profile(o, 100)
    assert r.shape == (2, len(REPLY_BINS))
    assert r[0, 0] == 1 and r[0, list(REPLY_BINS).index(64)] == 1 and r[0].sum() == 2
    assert r[1].sum() == 0


@pytest.mark.slow
def test_mirrored_replies_leak_their_timing_and_a_dwell_closes_it():
    """ghost_minimal at its defaults answers a dummy at once and a real request after the DRAM
    access: uniform vs hotspot traffic is flagged by the reply family (spatial passes); with a
    dwell of the idle access time (44 cycles) the reply family passes too, and its measured
    detectable effect is small."""
    small = {"memsys": {"requests_per_cpu": 60, "cpus": 4, "encryption": "source_otp"}, "repeats": 13,
             "window": 500, "algorithm": "ghost_minimal"}
    rep = run(validate("memnet.leak", small))
    assert rep["spatial"]["verdict"] == NO_LEAK
    assert rep["reply"]["verdict"] == LEAKS and rep["reply"]["p"] <= 1 / 2048, rep["reply"]
    dwell = {**small, "memsys": {**small["memsys"], "secure": {"dwell_cycles": 44}}}
    rep = run(validate("memnet.leak", dwell))
    assert rep["reply"]["verdict"] == NO_LEAK, rep["reply"]
    assert rep["reply"]["detectable"]["effect"] <= 0.05


@pytest.mark.slow
def test_adaptive_ghost_with_the_programs_real_hot_set_leaks_when_not_where(tmp_path):
    """The issue's program outside the suite, in miniature: the secret picks the modules a
    program reads, and adaptive ghost declares the first secret's modules (3, 19, 35, 51) hot.
    The second secret's misses wait their turn in longer rounds (runtime several times A's):
    a real timing leak, flagged temporally (and through reply timing); the spatial family, which
    the cut to the shorter run used to flag through the channel shares, passes."""
    hot = [3, 19, 35, 51]
    a = phased_trace(tmp_path / "hot.vtrace", [hot], insts=100)
    b = phased_trace(tmp_path / "cold.vtrace", [[13, 29, 45, 61]], insts=100)
    rep = leak_run(a, b, "adaptive_ghost", secure={"hot_modules": hot, "hot_weight": 15})
    assert rep["runtime_b"] > 2 * rep["runtime_a"]
    assert rep["temporal"]["verdict"] == LEAKS and rep["reply"]["verdict"] == LEAKS
    assert rep["spatial"]["verdict"] == NO_LEAK, rep["spatial"]
