"""The tool's cache model against Valgrind's own cachegrind on the same program and geometry.

cachegrind (`--cache-sim=yes`) simulates a private I1 and D1 and a unified LL with LRU and
write-allocate; veiltrace's LLC changes its LRU order only on L1 misses, as cachegrind's does,
so its fills (loads, stores and instruction fetches) should be cachegrind's LL misses.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from veil.core import VeilError

from .runner import RUN_ENV, TOOL_NAME, Geometry, ensure_tool, isolation, valgrind_path


def _timed(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float, float]:
    """Runs `cmd`; (result, wall seconds, CPU seconds of the child). CPU time is what a loaded
    shared machine disturbs least: it is what the speed comparisons use."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, **kw)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _count(text: str, label: str) -> int:
    m = re.search(rf"{re.escape(label)}:\s+([\d,]+)", text)
    if not m:
        raise VeilError(f"cachegrind printed no '{label}' line")
    return int(m.group(1).replace(",", ""))


def run_cachegrind(program: str, args: list[str], geometry: Geometry, cwd: Path | None = None) -> dict:
    g = geometry
    cmd = [*isolation(), valgrind_path(), "--tool=cachegrind", "--cache-sim=yes",
           f"--I1={g.l1_bytes},{g.l1_assoc},{g.line_size}", f"--D1={g.l1_bytes},{g.l1_assoc},{g.line_size}",
           f"--LL={g.llc_bytes},{g.llc_assoc},{g.line_size}", "--cachegrind-out-file=/dev/null", program, *args]
    r, seconds, cpu = _timed(cmd, cwd=cwd, env=dict(RUN_ENV), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise VeilError(f"{Path(program).name} exited with status {r.returncode} under cachegrind")
    return {"insts": _count(r.stderr, "I   refs"), "ll_misses": _count(r.stderr, "LL misses"),
            "d1_misses": _count(r.stderr, "D1  misses"), "seconds": seconds, "cpu_seconds": cpu}


def run_tool_counts(program: str, args: list[str], geometry: Geometry, cwd: Path | None = None) -> dict:
    """The tool alone (raw trace to a temporary file, no packing): its counts and wall time."""
    from veil import _native

    lib = ensure_tool()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "raw.vtrace"
        cmd = [*isolation(), valgrind_path(), f"--tool={TOOL_NAME}", "-q", f"--out={out}", *geometry.tool_args(),
               program, *args]
        r, seconds, cpu = _timed(cmd, cwd=cwd, env=dict(RUN_ENV, VALGRIND_LIB=str(lib)), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise VeilError(f"{Path(program).name} exited with status {r.returncode} under veiltrace")
        s = json.loads(_native.trace.summary(str(out)))
    threads = s["stats"]["threads"]
    tot = {k: sum(t[k] for t in threads) for k in threads[0]}
    return {"insts": tot["insts"], "ll_misses": tot["load_fills"] + tot["store_fills"],
            "d1_misses": tot["l1d_misses"], "accesses": tot["loads"] + tot["stores"], "records": s["records"],
            "seconds": seconds, "cpu_seconds": cpu}


def compare(program: str, args: list[str], geometry: Geometry, cwd: Path | None = None) -> dict:
    ours = run_tool_counts(program, args, geometry, cwd)
    cg = run_cachegrind(program, args, geometry, cwd)
    return {"ours": ours, "cachegrind": cg,
            "ll_miss_error": abs(ours["ll_misses"] - cg["ll_misses"]) / max(1, cg["ll_misses"]),
            "insts_error": abs(ours["insts"] - cg["insts"]) / max(1, cg["insts"]),
            "time_ratio": ours["seconds"] / cg["seconds"], "cpu_ratio": ours["cpu_seconds"] / cg["cpu_seconds"]}
