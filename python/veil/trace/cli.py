"""`veil trace list | run | stats`."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from veil.core import ConfigError, register_cli

from .format import TraceFormatError


def cmd_list(args) -> int:
    from .workloads import WORKLOADS

    print(f"{'workload':13} {'family':7} {'threads':>7}  {'small input':38} stands for")
    for w in sorted(WORKLOADS.values(), key=lambda w: (w.family, w.name)):
        print(f"{w.name:13} {w.family:7} {w.threads:>7}  {w.sizes['small']:38} {w.stands_for}")
    return 0


def _geometry(args):
    from .runner import Geometry, parse_bytes

    return Geometry(parse_bytes(args.l1, "--l1"), args.l1_assoc, parse_bytes(args.llc, "--llc"), args.llc_assoc,
                    args.line, not args.no_ifetch)


def _progress(elapsed: float, nbytes: int) -> None:
    # The cursor goes back to the line's start: what comes next (the summary, or an error) overwrites it.
    print(f"  tracing: {elapsed:5.0f} s, {nbytes / 1e6:8.1f} MB written\r", end="", file=sys.stderr, flush=True)


def _quantum(args) -> int:
    from veil import _native

    return _native.trace.REPLAY_QUANTUM if args.quantum is None else args.quantum


def cmd_run(args) -> int:
    from .runner import _check_writable, ensure_trace, run_trace
    from .workloads import get_workload

    geom = _geometry(args)
    out = Path(args.out) if args.out else None
    if out is not None:
        _check_writable(out)
    if args.cmd:
        prog = ([args.workload] if args.workload else []) + list(args.rest)
        if not prog:
            raise ConfigError("--cmd: no program given (veil trace run --cmd --out FILE -- PROG ARGS)")
        if out is None:
            raise ConfigError("--out: required with --cmd")
        summary = run_trace(prog[0], prog[1:], out, geom, cwd=Path.cwd(), progress=_progress,
                            quantum=_quantum(args) if args.replay or args.quantum is not None else None)
        path = out
    else:
        if not args.workload:
            raise ConfigError("give a WORKLOAD (see `veil trace list`) or --cmd -- PROG ARGS")
        if args.rest:
            raise ConfigError(f"unexpected arguments {' '.join(args.rest)} (a command needs --cmd)")
        get_workload(args.workload)
        path = ensure_trace(args.workload, size=args.size, threads=args.threads, llc_bytes=geom.llc_bytes,
                            llc_assoc=geom.llc_assoc, l1_bytes=geom.l1_bytes, l1_assoc=geom.l1_assoc,
                            line_size=geom.line_size, ifetch=geom.ifetch, progress=_progress,
                            quantum=args.quantum)
        if out is not None:
            shutil.copyfile(path, out)
            path = out
        from veil import _native
        summary = json.loads(_native.trace.summary(str(path)))
    print(file=sys.stderr)
    threads = summary["stats"].get("threads", []) if isinstance(summary.get("stats"), dict) else []
    insts = sum(t.get("insts", 0) for t in threads)
    fills = sum(t.get("load_fills", 0) + t.get("store_fills", 0) for t in threads)
    wbs = sum(t.get("writebacks", 0) for t in threads)
    mpki = fills * 1000 / insts if insts else 0.0
    print(f"{path}: {summary['records']} records, {len(threads)} threads, {insts} instructions, "
          f"{fills} LLC fills ({mpki:.3f} MPKI), {wbs} writebacks")
    if args.cmd and not args.replay and args.quantum is None and len(threads) > 1:
        print(f"note: {len(threads)} threads traced without --replay: another tracing of this program will differ "
              "(the host's thread order decides the LLC's), so an adversary comparing one tracing per secret reads "
              "that difference as the secret; `veil memnet leak` refuses one such tracing a side (give several "
              "independent tracings, `traces = [...]`, or trace with --replay)", file=sys.stderr)
    return 0


def cmd_stats(args) -> int:
    from .stats import trace_stats

    if not 1 <= args.top <= 1 << 20:
        raise ConfigError(f"--top {args.top}: must be in 1..1048576")
    if Path(args.file).is_dir():
        raise ConfigError(f"{args.file}: is a directory, expected a trace file (.vtr)")
    try:
        s = trace_stats(args.file, tuple(sorted({8, 16, 32, args.top})))
    except TraceFormatError as e:
        raise ConfigError(f"{args.file}: {e}") from None
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    h = s["header"]
    print(f"{args.file}: {h['workload'] or h['program']} {' '.join(h['args'])}")
    print(f"  L1 {h['l1']['size']} B {h['l1']['assoc']}-way, LLC {h['llc']['size']} B {h['llc']['assoc']}-way, "
          f"{h['line_size']} B lines; {h['tool_version']}")
    print(f"  {'thread':>6} {'instructions':>14} {'accesses':>12} {'load fills':>11} {'store fills':>11} "
          f"{'writebacks':>11} {'MPKI':>8}")
    tool = s["summary"]["stats"].get("threads", []) if isinstance(s["summary"].get("stats"), dict) else []
    for t in s["threads"]:
        acc = tool[t["thread"]]["loads"] + tool[t["thread"]]["stores"] if t["thread"] < len(tool) else None
        print(f"  {t['thread']:>6} {t['insts']:>14} {acc if acc is not None else '-':>12} {t['load_fills']:>11} "
              f"{t['store_fills']:>11} {t['writebacks']:>11} {t['mpki']:>8.3f}")
    print(f"  total: {s['insts']} instructions, {s['fills']} fills, {s['writebacks']} writebacks, "
          f"{s['mpki']:.3f} MPKI, {s['llc_hits']} L1 misses hit the LLC")
    straddles = sum(t.get("straddles", 0) for t in tool)
    if tool and all("straddles" in t for t in tool):  # traces from a tool before the count: no line
        print(f"  straddling accesses: {straddles} (each fills both its lines; cachegrind counts one miss)")
    print(f"  fetched words: {s['fetched_words']} ({s['distinct_values']} distinct values)")
    for n, c in sorted(s["coverage"].items()):
        print(f"  top-{n} frequent values cover {100 * c:.1f}% of fetched words")
    for v, c in s["top_values"][:args.top]:
        print(f"    {v:#018x} {c:>12} ({100 * c / max(1, s['fetched_words']):.2f}%)")
    return 0


@register_cli("trace")
def add_commands(sub) -> None:
    p = sub.add_parser("trace", help="memory and value traces of real programs (Valgrind tool)")
    tsub = p.add_subparsers(dest="trace_command", required=True)
    q = tsub.add_parser("list", help="the workload suite")
    q.set_defaults(handler=cmd_list)
    q = tsub.add_parser("run", help="trace a workload (cached) or any command (--cmd -- PROG ARGS)")
    q.add_argument("workload", nargs="?", help="a workload from `veil trace list`")
    q.add_argument("--size", default="small", help="input size: small or medium")
    q.add_argument("--threads", type=int, default=None, help="worker threads (multi-threaded workloads)")
    q.add_argument("--l1", default="8KB", help="each thread's L1 (data and instruction) size")
    q.add_argument("--l1-assoc", type=int, default=1, help="L1 ways")
    q.add_argument("--llc", "--l2", default="256KB", help="shared last-level cache size")
    q.add_argument("--llc-assoc", type=int, default=4, help="LLC ways")
    q.add_argument("--line", type=int, default=64, help="line size in bytes (8..64)")
    q.add_argument("--no-ifetch", action="store_true", help="leave instruction fetches out of the model")
    q.add_argument("--out", help="trace file to write (default: the cache, path printed)")
    q.add_argument("--replay", action="store_true",
                   help="with --cmd: stream per-thread L1 events and replay the shared LLC offline "
                        "(byte-identical traces of multi-threaded programs; suite workloads: automatic)")
    q.add_argument("--quantum", type=int, default=None,
                   help="instructions per round-robin quantum of the offline LLC replay (multi-threaded)")
    q.add_argument("--cmd", action="store_true",
                   help="trace a command instead: veil trace run --cmd --out FILE -- PROG ARGS")
    q.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    q.set_defaults(handler=cmd_run)
    q = tsub.add_parser("stats", help="per-thread misses, MPKI, frequent values of a trace")
    q.add_argument("file")
    q.add_argument("--top", type=int, default=8, help="frequent values to list")
    q.add_argument("--json", action="store_true", help="everything as JSON")
    q.set_defaults(handler=cmd_stats)
