"""`veil bench memnet`: simulator speed.

Two workloads from the issue, both with the booksim_compat router and uniform traffic:
- 8x8 mesh, DOR, 0.25 flits/node/cycle, 4-flit packets, 60,000 cycles (10,000 warm-up +
  50,000 measured, then the drain); target >= 5x BookSim2 (about 6,500 cycles/s on the 2-core
  CI machine, so >= 32,500 cycles/s).
- 1056-node dragonfly (p=4, a=8, h=4, 33 groups; local 10 / global 100 cycles, 2 VCs x 256,
  internal speedup 2, min routing) at 0.45 for 60,000 cycles; target under 60 s (BookSim2:
  531 CPU-s).

When a BookSim2 binary built from its public source is found (environment variable
VEIL_BOOKSIM, or ../booksim-build/src/booksim or ../booksim2/src/booksim next to the
repository), the mesh workload is also run on it and the same-run ratio is printed.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile
import time

from veil.core import register_benchmark
from veil.memnet import engine

BOOKSIM_MESH_CYCLES_PER_S = 6500.0
BOOKSIM_DRAGONFLY_SECONDS = 531.0


def _fixed(cfg: dict, warmup: int = 10_000, measure: int = 50_000) -> dict:
    cfg["sim"].update(mode="fixed", warmup_cycles=warmup, measure_cycles=measure)
    return cfg


def mesh_config() -> dict:
    return _fixed(engine.booksim_preset("mesh8x8", 0.25))


def dragonfly1056_config() -> dict:
    cfg = engine.booksim_preset("dragonfly72", 0.45)
    cfg["topology"].update(p=4, a=8, h=4)
    return _fixed(cfg)


def find_booksim() -> pathlib.Path | None:
    env = os.environ.get("VEIL_BOOKSIM")
    if env:
        p = pathlib.Path(env)
        return p if p.is_file() else None
    root = pathlib.Path(__file__).resolve().parent.parent
    for cand in (root.parent / "booksim-build" / "src" / "booksim", root.parent / "booksim2" / "src" / "booksim"):
        if cand.is_file() and os.access(cand, os.X_OK):
            return cand
    return None


BOOKSIM_MESH = """topology = mesh; k = 8; n = 2; routing_function = dor; num_vcs = 4; vc_buf_size = 8;
wait_for_tail_credit = 0; vc_allocator = separable_input_first; sw_allocator = separable_input_first;
alloc_iters = 1; credit_delay = 2; routing_delay = 0; vc_alloc_delay = 1; sw_alloc_delay = 1;
st_final_delay = 1; input_speedup = 1; output_speedup = 1; internal_speedup = 1.0; traffic = uniform;
packet_size = 4; injection_rate_uses_flits = 1; sim_type = latency; warmup_periods = 3;
sample_period = 10000; seed = 1; injection_rate = 0.25;
"""


def run_booksim(binary: pathlib.Path) -> tuple[float, int] | None:
    """CPU seconds and cycles of BookSim2 on the mesh workload, or None if it fails."""
    with tempfile.TemporaryDirectory() as d:
        cfg = pathlib.Path(d) / "mesh.cfg"
        cfg.write_text(BOOKSIM_MESH)
        t0 = os.times()
        try:
            out = subprocess.run([str(binary), str(cfg)], capture_output=True, text=True, timeout=600).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        t1 = os.times()
    cycles = None
    for line in out.splitlines():
        if line.startswith("Time taken is"):
            cycles = int(line.split()[3])
    if cycles is None:
        return None
    return (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system), cycles


def timed(cfg: dict) -> tuple[dict, float]:
    """CPU seconds of one run: BookSim2's reference speeds are CPU seconds too, and CPU time
    does not depend on what else the machine is running."""
    t0 = time.process_time()
    r = engine.simulate(cfg)
    return r, time.process_time() - t0


@register_benchmark("memnet", doc="memnet simulator speed: 8x8 mesh and 1056-node dragonfly")
def bench(ctx):
    r, secs = timed(mesh_config())
    cps = r["cycles_simulated"] / secs
    pps = r["packets_delivered"] / secs
    baseline = BOOKSIM_MESH_CYCLES_PER_S
    binary = find_booksim()
    if binary is not None:
        bs = run_booksim(binary)
        if bs is not None and bs[0] > 0:
            baseline = bs[1] / bs[0]
    ctx.report("memnet/mesh8x8_cycles_per_s", cps, unit="cycles/s", baseline=baseline,
               ratio=cps / baseline, target=">= 32500 (5x BookSim2)")
    ctx.report("memnet/mesh8x8_packets_per_s", pps, unit="packets/s")
    r, secs = timed(dragonfly1056_config())
    ctx.report("memnet/dragonfly1056_seconds", secs, unit="s", baseline=BOOKSIM_DRAGONFLY_SECONDS,
               ratio=BOOKSIM_DRAGONFLY_SECONDS / secs, target="< 60")
    ctx.report("memnet/dragonfly1056_cycles_per_s", r["cycles_simulated"] / secs, unit="cycles/s")
    ctx.report("memnet/dragonfly1056_packets_per_s", r["packets_delivered"] / secs, unit="packets/s")


# Memory-centric network (memnet.memsys): a 1,000,000-record trace (veil-trace format, written
# by its deterministic synthetic generator: 16 threads, fills and writebacks, up to 5,000
# instructions between a thread's records) replayed by 16 CPUs on the default 64-module
# dragonfly with source_otp, on one thread and then on every core (same results): wall
# seconds, the ratio, and the load average beside them (wall time on a shared machine is only
# as good as the load it ran beside). Target: <= 15 s wall on 2 cores. Then the same million
# requests as uniform synthetic streams with 100 instructions between misses (a busier network).
MEMSYS_RECORDS = 1_000_000


def _wall(cfg: dict) -> tuple[dict, float, float]:
    """(result, wall seconds, process CPU seconds) of one memory-system run."""
    from veil.memnet import memsys

    t0, c0 = time.perf_counter(), time.process_time()
    r = memsys.simulate(cfg)
    return r, time.perf_counter() - t0, time.process_time() - c0


@register_benchmark("memnet", name="memnet_memsys",
                    doc="memnet memory system: 1M-request trace, 64-module dragonfly, 16 CPUs, 1 thread vs all cores")
def bench_memsys(ctx):
    from veil import _native
    from veil.memnet import memsys

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as d:
        path = str(pathlib.Path(d) / "bench.vtrace")
        _native.memnet.memsys_write_synthetic_trace(path, MEMSYS_RECORDS, 16, 1)
        cfg = memsys.default_config()
        cfg["workload"].update(kind="trace", trace=path)
        cfg["encryption"]["uarch"] = "source_otp"
        load0 = os.getloadavg()[0]
        r1, wall1, cpu1 = _wall({**cfg, "threads": 1})
        rn, walln, cpun = _wall({**cfg, "threads": cores})
        load1 = os.getloadavg()[0]
    same = all(r1[k] == rn[k] for k in r1 if k not in ("wall_seconds", "cycles_per_second"))
    ctx.report("memnet/memsys_trace_1m_seconds", walln, unit="s wall", baseline=wall1,
               ratio=wall1 / walln, target="<= 15 on 2 cores", baseline_name="1 thread")
    ctx.report("memnet/memsys_trace_1m_cpu_seconds", cpun, unit="CPU-s", baseline=cpu1, baseline_name="1 thread")
    ctx.report("memnet/memsys_trace_requests_per_s", (rn["reads"] + rn["writes"]) / walln, unit="requests/s")
    ctx.report("memnet/memsys_trace_simulated_cycles", rn["runtime_cycles"], unit="cycles")
    ctx.log(f"threads: 1 vs {cores} (every core), results identical: {same}; load average {load0:.1f} "
            f"before / {load1:.1f} after on {cores} cores")
    if not same:
        raise RuntimeError("memnet memsys: results differ between 1 and all threads")
    cfg = memsys.default_config()
    cfg["workload"]["requests_per_cpu"] = MEMSYS_RECORDS // 16
    cfg["encryption"]["uarch"] = "source_otp"
    t0 = time.process_time()
    r = memsys.simulate(cfg)
    secs = time.process_time() - t0
    ctx.report("memnet/memsys_uniform_1m_seconds", secs, unit="s", target="< 60")
    ctx.report("memnet/memsys_uniform_cycles_per_s", r["runtime_cycles"] / secs, unit="cycles/s")


# The adversary's record (veil memnet leak): the same uniform run with observation off and on
# (every channel traversal and injection recorded, handed to numpy). Off must cost nothing
# measurable against a build without the hooks (docs/memnet.md gives that comparison); on
# costs the recording and the copy.
OBSERVE_REQUESTS_PER_CPU = 12_500


@register_benchmark("memnet", name="memnet_observe",
                    doc="memnet adversary record: uniform 200k requests with observation off vs on")
def bench_observe(ctx):
    from veil.memnet import memsys
    from veil.memnet.leak import observe

    cfg = memsys.default_config()
    cfg["workload"]["requests_per_cpu"] = OBSERVE_REQUESTS_PER_CPU
    cfg["encryption"]["uarch"] = "source_otp"
    t0 = time.process_time()
    memsys.simulate(cfg)
    off = time.process_time() - t0
    t0 = time.process_time()
    o = observe(cfg)
    on = time.process_time() - t0
    events = len(o.ch_id) + len(o.inj_cycle)
    ctx.report("memnet/observe_off_seconds", off, unit="s")
    ctx.report("memnet/observe_on_seconds", on, unit="s", baseline=off, ratio=off / on, target="ratio >= 0.8")
    ctx.report("memnet/observe_events_per_s", events / on, unit="events/s")
