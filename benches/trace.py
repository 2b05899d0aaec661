"""`veil bench trace`: how fast the veiltrace tool runs and how fast traces are read.

- Tool: gzip (small input) under veiltrace (raw trace to a temporary file) and under cachegrind
  with the same geometry, one after the other in the same run: data accesses per second of the
  tool and the time ratio to cachegrind (targets: >= 50 M accesses/s, <= 1.5x cachegrind).
- Readers: the mcf trace (4 M records, the suite's densest) read with the Rust reader's
  `next_into` (target >= 100 M records/s) and with the Python numpy reader, same run.
Timings on a shared 2-core machine are noisy: the best of three runs is reported.
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
    ours = min((run_tool_counts(inv.program, list(inv.args), g, wd) for _ in range(3)), key=lambda r: r["seconds"])
    cg = min((run_cachegrind(inv.program, list(inv.args), g, wd) for _ in range(3)), key=lambda r: r["seconds"])
    ctx.report("trace/gzip_accesses_per_s", ours["accesses"] / ours["seconds"], unit="accesses/s",
               target=">= 5e7")
    ctx.report("trace/gzip_seconds", ours["seconds"], unit="s", baseline=cg["seconds"],
               baseline_name="cachegrind", target="<= 1.5x cachegrind")

    path = ensure_trace("mcf")
    rust = min((_native.trace.read_speed(str(path)) for _ in range(3)), key=lambda r: r[1])
    ctx.report("trace/rust_reader_records_per_s", rust[0] / rust[1], unit="records/s", target=">= 1e8")
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        with TraceReader(path) as r:
            n = sum(len(b) for b in r.blocks())
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    ctx.report("trace/python_reader_records_per_s", n / best, unit="records/s",
               baseline=rust[0] / rust[1], baseline_name="rust reader")
