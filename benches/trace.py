"""`veil bench trace`: how fast the veiltrace tool runs and how fast traces are read.

- Tool: gzip (small input) under veiltrace (raw trace to a temporary file) and under cachegrind
  with the same geometry, one after the other in the same run: data accesses per second of the
  tool and the time ratio to cachegrind (targets: >= 50 M accesses/s, <= 1.5x cachegrind).
- Readers: the mcf trace (4 M records, the suite's densest) read with the Rust reader's
  `next_into` (target >= 100 M records/s) and with the Python numpy reader, same run.
Timings on a shared 2-core machine are noisy: CPU seconds (of valgrind for the tool, of this
process for the readers) are reported, the best of three runs, tool and cachegrind alternating.
"""

from __future__ import annotations

import shutil
import time

from veil.core import register_benchmark


@register_benchmark("trace", doc="veiltrace accesses/s on gzip vs cachegrind; trace readers' records/s")
def bench(ctx) -> None:
    if shutil.which("valgrind") is None:
        ctx.log("valgrind is not installed: nothing to measure")
        return
    from veil import _native
    from veil.trace import TraceReader, ensure_trace, get_workload
    from veil.trace.crosscheck import run_cachegrind, run_tool_counts
    from veil.trace.runner import Geometry, cache_dir

    wd = cache_dir() / "inputs" / "gzip"
    inv = get_workload("gzip").prepare("small", None, wd)
    g = Geometry()
    runs = [(run_tool_counts(inv.program, list(inv.args), g, wd), run_cachegrind(inv.program, list(inv.args), g, wd))
            for _ in range(3)]
    ours = min((r[0] for r in runs), key=lambda r: r["cpu_seconds"])
    cg = min((r[1] for r in runs), key=lambda r: r["cpu_seconds"])
    ctx.report("trace/gzip_accesses_per_cpu_s", ours["accesses"] / ours["cpu_seconds"], unit="accesses/s",
               target=">= 5e7 (one core)")
    ctx.report("trace/gzip_cpu_seconds", ours["cpu_seconds"], unit="s", baseline=cg["cpu_seconds"],
               baseline_name="cachegrind", target="<= 1.5x cachegrind")
    ctx.report("trace/gzip_wall_seconds", ours["seconds"], unit="s", baseline=cg["seconds"],
               baseline_name="cachegrind")

    path = ensure_trace("mcf")
    rust = None
    for _ in range(3):
        c0 = time.process_time()
        n, _wall = _native.trace.read_speed(str(path))
        cpu = time.process_time() - c0
        rust = cpu if rust is None else min(rust, cpu)
    ctx.report("trace/rust_reader_records_per_cpu_s", n / rust, unit="records/s", target=">= 1e8")
    best = None
    for _ in range(3):
        c0 = time.process_time()
        with TraceReader(path) as r:
            n = sum(len(b) for b in r.blocks())
        dt = time.process_time() - c0
        best = dt if best is None else min(best, dt)
    ctx.report("trace/python_reader_records_per_cpu_s", n / best, unit="records/s",
               baseline=n / rust, baseline_name="rust reader")
