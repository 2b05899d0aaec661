"""`veil bench memnet`: simulator speed.

Two workloads, both with the booksim_compat router and uniform traffic, BookSim2's random draws:
- 8x8 mesh, DOR, 0.25 flits/node/cycle, 4-flit packets, BookSim2's run control (60,117 cycles):
  with a BookSim2 binary built from its public source ($BOOKSIM or $VEIL_BOOKSIM, else
  ../booksim2/src/booksim or ../booksim-build/src/booksim beside the repository; see
  veil.memnet.booksim) BookSim2 and memnet run in interleaved pairs, alone and then beside a CPU
  hog, and the bench prints the median pairwise ratio of BookSim2's whole-process CPU over the
  whole `veil run` process (target >= 10) and over memnet's simulator alone (BookSim2 less its
  start-up; target >= 20). Both must simulate the same cycles and latency. Without a binary it
  says so and divides by the recorded BookSim2 time, printed with its date and machine.
  The simulator alone (in-process cycles/s, fixed run control) is printed too.
- 1056-node dragonfly (p=4, a=8, h=4, 33 groups; local 10 / global 100 cycles, 2 VCs x 256,
  internal speedup 2, min routing) at 0.45 for 60,000 cycles, on 1 thread and on every core
  in the same run (wall time: threads save wall time, never CPU time). Target <= 10 s wall on
  2 cores. BookSim2: 531 CPU-s. CPU efficiency beside wall: CPU-s on every core / CPU-s on 1
  thread for the same result (target <= 1.2: the router pool must not burn a core spinning for
  a descheduled peer), measured alone and again (18,000 cycles) beside a CPU hog (a Python busy
  loop started and killed by the bench).
The load average is printed beside each figure: on a shared machine wall times follow it.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from veil.core import register_benchmark
from veil.memnet import booksim, engine

BOOKSIM_DRAGONFLY_SECONDS = 531.0
# Interleaved BookSim2 / memnet pairs per setting (alone, beside a CPU hog); VEIL_BENCH_PAIRS overrides.
PAIRS = int(os.environ.get("VEIL_BENCH_PAIRS", "5"))


def _fixed(cfg: dict, warmup: int = 10_000, measure: int = 50_000) -> dict:
    cfg["sim"].update(mode="fixed", warmup_cycles=warmup, measure_cycles=measure)
    return cfg


def mesh_config() -> dict:
    return _fixed(engine.booksim_preset("mesh8x8", 0.25))


def dragonfly1056_config(threads: int | None = None, measure: int = 50_000) -> dict:
    cfg = engine.booksim_preset("dragonfly72", 0.45)
    cfg["topology"].update(p=4, a=8, h=4)
    cfg["threads"] = threads
    return _fixed(cfg, measure=measure)


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load average {a:.2f} {b:.2f} {c:.2f} on {os.cpu_count()} cores"


def timed(cfg: dict) -> tuple[dict, float, float]:
    """CPU and wall seconds of one in-process run."""
    t0, w0 = time.process_time(), time.perf_counter()
    r = engine.simulate(cfg)
    return r, time.process_time() - t0, time.perf_counter() - w0


@contextlib.contextmanager
def cpu_hog():
    """A busy loop in another process for the span of the block: a machine with one core taken."""
    p = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def thread_efficiency(ctx, cfg_of, label: str, threads: int, wall_target: str | None = None) -> tuple:
    """One workload on 1 thread and then on `threads`: reports the wall ratio and the CPU
    efficiency (CPU-s on `threads` / CPU-s on 1 thread); raises if the results differ.
    Returns the result, the threads used, then (CPU-s, wall-s) of 1 thread and of those."""
    ctx.log(load())
    one, cpu1, wall1 = timed(cfg_of(1))
    par, cpun, walln = timed(cfg_of(threads))
    ctx.log(load())
    for x in (one, par):
        x.pop("wall_seconds")
    used = par.pop("threads")
    one.pop("threads")
    if one != par:
        raise RuntimeError(f"memnet {label}: results differ between 1 and {used} threads")
    ctx.report(f"memnet/{label}_wall_{used}_threads", walln, unit="s", baseline=wall1, ratio=wall1 / walln,
               baseline_name="1 thread", target=wall_target)
    ctx.report(f"memnet/{label}_cpu_efficiency_{used}_threads", cpun / cpu1, unit="x CPU of 1 thread",
               target="<= 1.2")
    ctx.log(f"{label}: {cpu1:.2f} CPU-s / {wall1:.2f} s wall on 1 thread, {cpun:.2f} CPU-s / {walln:.2f} s "
            f"on {used}; results identical")
    return one, used, cpu1, wall1, cpun, walln


def _mesh_pairs(ctx, binary, d: str, label: str) -> None:
    rows = booksim.pairs(binary, PAIRS, d, ctx.log)
    startup = booksim.booksim_startup_cpu(binary, d) or 0.0
    r = booksim.ratios(rows, startup)
    loads = f"load {r['load_min']:.1f}-{r['load_max']:.1f}"
    ctx.report(f"memnet/mesh8x8_booksim_ratio_process_{label}", r["process"], unit="x",
               target=">= 10", baseline_name="")
    ctx.report(f"memnet/mesh8x8_booksim_ratio_simulator_{label}", r["simulator"], unit="x",
               target=">= 20", baseline_name="")
    ctx.log(f"{label}, median of {len(rows)} interleaved pairs ({loads}): BookSim2 {r['booksim_cpu']:.2f} CPU-s "
            f"whole process (start-up {startup:.3f}), memnet {r['veil_cpu']:.2f} CPU-s whole process, "
            f"{r['veil_sim_cpu']:.3f} simulator alone")


def bench_mesh_process(ctx) -> None:
    """Whole process and simulator against BookSim2 on the 8x8 mesh, in the same run when a
    BookSim2 binary is there (alone, then beside a CPU hog), else against the recorded time."""
    binary = booksim.find_binary()
    with tempfile.TemporaryDirectory() as d:
        if binary is not None:
            ctx.log(f"BookSim2: {binary}; {PAIRS} interleaved pairs alone, then {PAIRS} beside a CPU hog")
            _mesh_pairs(ctx, binary, d, "alone")
            with cpu_hog():
                _mesh_pairs(ctx, binary, d, "beside_hog")
            return
        ctx.log("no BookSim2 binary: set BOOKSIM=path (docs/memnet-network.md says how to build it) for the "
                "same-run ratio; against the recorded time instead: " + booksim.RECORDED["text"])
        ctx.log(load())
        runs = [booksim.run_veil_process(d) for _ in range(2)]
        runs = [r for r in runs if r is not None]
    if not runs:
        ctx.log("veil run failed on the mesh workload")
        return
    base = booksim.RECORDED["cpu_seconds"]
    cpu = min(r["cpu"] for r in runs)
    ctx.report("memnet/mesh8x8_process_cpu_seconds", cpu, unit="CPU-s", baseline=base, ratio=base / cpu,
               baseline_name="BookSim2 (recorded)", target="ratio >= 10")
    ctx.report("memnet/mesh8x8_process_wall_seconds", min(r["wall"] for r in runs), unit="s")
    ctx.log(load())


@register_benchmark("memnet", doc="memnet simulator speed: 8x8 mesh and 1056-node dragonfly")
def bench(ctx):
    bench_mesh_process(ctx)
    r, cpu, _ = timed(mesh_config())
    ctx.report("memnet/mesh8x8_cycles_per_s", r["cycles_simulated"] / cpu, unit="cycles/s",
               baseline=booksim.MESH_CYCLES / booksim.RECORDED["cpu_seconds"], baseline_name="BookSim2 (recorded)")
    ctx.report("memnet/mesh8x8_packets_per_s", r["packets_delivered"] / cpu, unit="packets/s")
    n = os.cpu_count() or 1
    one, used, cpu1, wall1, cpun, _ = thread_efficiency(ctx, dragonfly1056_config, "dragonfly1056", n,
                                                        wall_target="<= 10 (2 cores)")
    ctx.report("memnet/dragonfly1056_wall_1_thread", wall1, unit="s", target="<= 10 (2 cores)")
    ctx.report("memnet/dragonfly1056_cpu_seconds", cpu1, unit="CPU-s", baseline=BOOKSIM_DRAGONFLY_SECONDS,
               ratio=BOOKSIM_DRAGONFLY_SECONDS / cpu1, baseline_name="BookSim2 (recorded)")
    ctx.report(f"memnet/dragonfly1056_cpu_seconds_{used}_threads", cpun, unit="CPU-s")
    ctx.report("memnet/dragonfly1056_cycles_per_s", one["cycles_simulated"] / cpu1, unit="cycles/s")
    with cpu_hog():
        thread_efficiency(ctx, lambda t: dragonfly1056_config(t, measure=8_000), "dragonfly1056_beside_hog", n)


# Memory-centric network (memnet.memsys): a 1,000,000-record trace (veil-trace format, written
# by its deterministic synthetic generator: 16 threads, fills and writebacks, up to 5,000
# instructions between a thread's records) replayed by 16 CPUs on the default 64-module
# dragonfly with source_otp, on one thread and then on every core (same results): wall
# seconds, the ratio, and the load average beside them (wall time on a shared machine is only
# as good as the load it ran beside). Target: <= 6 s wall on 2 idle cores. Then the same million
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
               ratio=wall1 / walln, target="<= 6 on 2 idle cores", baseline_name="1 thread")
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
# measurable against a build without the hooks (docs/memnet-adversary.md gives that comparison); on
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


# A `veil memnet leak` verdict on a traced program (target: under a minute on 2 cores for a
# 100k-cycle trace): the synthetic 1,920-record, 16-thread trace (109,678 cycles under
# minimal; `secure_speed 1920 16` writes the same one). One observed run per algorithm, in CPU
# seconds, against minimal's run on the same trace in the same process; then a whole
# constant_rate verdict (2 x 13 runs, one per core at once, and the analysis), its wall and
# CPU seconds beside the load average. Same-secret: A and B are two copies of the trace.
LEAK_RECORDS = 1_920
LEAK_ALGORITHMS = ("minimal", "broadcast", "constant_rate")


@register_benchmark("memnet", name="memnet_leak_verdict",
                    doc="memnet adversary: one observed run per algorithm and a constant_rate verdict on a "
                        "1,920-record 16-thread trace")
def bench_leak_verdict(ctx):
    import resource

    from veil import _native
    from veil.core.config import validate
    from veil.memnet import memsys
    from veil.memnet.leak import observe, run

    def cpu_now() -> float:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as d:
        a, b = (str(pathlib.Path(d) / f"{x}.vtrace") for x in "ab")
        for p in (a, b):
            _native.memnet.memsys_write_synthetic_trace(p, LEAK_RECORDS, 16, 1)
        secs, cycles = {}, {}
        for alg in LEAK_ALGORITHMS:
            cfg = memsys.default_config()
            cfg["workload"].update(kind="trace", trace=a)
            cfg["cpu"]["count"] = 16
            cfg["encryption"]["uarch"] = "source_otp"
            cfg.update(injection=alg, threads=1)
            c0 = time.process_time()
            o = observe(cfg)
            secs[alg], cycles[alg] = time.process_time() - c0, o.result["runtime_cycles"]
        for alg in LEAK_ALGORITHMS[1:]:
            ctx.report(f"memnet/leak_run_{alg}_cpu_seconds", secs[alg], unit="CPU-s", baseline=secs["minimal"],
                       ratio=secs[alg] / secs["minimal"], baseline_name="minimal, same trace")
        ctx.log("simulated cycles per run: " + ", ".join(f"{k} {v:,}" for k, v in cycles.items()))
        cfg = validate("memnet.leak", {
            "algorithm": "constant_rate", "repeats": 13, "window": 2000,
            "memsys": {"cpus": 16, "encryption": "source_otp"},
            "a": {"label": "copy A", "workload": "trace", "traces": [a] * 13},
            "b": {"label": "copy B", "workload": "trace", "traces": [b] * 13}})
        load0 = os.getloadavg()[0]
        w0, c0 = time.perf_counter(), cpu_now()
        rep = run(cfg)
        wall, cpu = time.perf_counter() - w0, cpu_now() - c0
        load1 = os.getloadavg()[0]
    ctx.report("memnet/leak_verdict_constant_rate_seconds", wall, unit="s wall", target="< 60 on 2 idle cores")
    ctx.report("memnet/leak_verdict_constant_rate_cpu_seconds", cpu, unit="CPU-s",
               baseline=26 * secs["constant_rate"], ratio=26 * secs["constant_rate"] / cpu,
               baseline_name="26 x one run's simulation")
    ctx.log(f"verdict: spatial {rep['spatial']['verdict']}, temporal {rep['temporal']['verdict']}; {cores} cores, "
            f"load average {load0:.1f} before / {load1:.1f} after; on {cores} idle cores about {cpu / cores:.0f} s")
