"""Execution-to-execution variation and the adversary's null.

Two tracings of one multi-threaded program made without `--replay` differ: which thread takes
Valgrind's lock after a wake-up decides the order of the threads at the tool's shared LLC, so
the fills differ (a 16-thread program: 2 LLC fills and 16 instructions; per-module request
shares TV 0.03-0.04 between tracings against 0.008 between seeds of one tracing). The seed-pair
null (sign flips of seed pairs) holds seed-to-seed variation only, so one tracing as A and
another as B were told apart at the floor in 3 of 3 seeds. Two ways out, both here:

- `varies(path)`: whether one tracing stands for the program (single-threaded, or replayed with
  `--replay`, whose tracings are byte-identical) or not; `veil memnet leak` refuses one tracing
  per side of a program whose tracings differ;
- a pattern's `traces`: several independent tracings, run i replaying tracing i, so each seed
  pair holds two executions and the exchangeable unit is the execution.

    python -m veil.memnet.leak.executions TRACING... --records 500 [--tests 100] [--trials 100]

measures, from a pool of same-secret runs with run k replaying tracing k (seed 2k): the
false-positive rate of verdicts drawn from it (13 tracings a side), the power against planted
redirects, and, for contrast, how often one tracing per side is flagged (13 seeds each).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["threads", "varies", "simulate_tracings", "one_tracing_per_side", "measure"]


def _header_summary(path: str) -> tuple[dict, dict]:
    from veil import _native
    from veil.core import ConfigError
    from veil.trace.format import TraceFormatError, TraceReader

    try:
        with TraceReader(path) as r:
            head = dict(r.header)
        return head, json.loads(_native.trace.summary(str(path)))
    except (ValueError, OSError, TraceFormatError) as e:
        raise ConfigError(f"trace: {path}: {e}") from None


def threads(path: str) -> int:
    """Threads the trace holds records of (its summary), else its header's count."""
    head, summ = _header_summary(path)
    return int(summ.get("threads") or head.get("threads") or 1)


def varies(path: str) -> str | None:
    """Why another tracing of the same program would differ ("a 16-thread program traced without
    --replay"), or None where one tracing stands for the program: single-threaded, replayed
    (`extra.replay`: byte-identical tracings), or not made by the tracer (no `tool_version`:
    written by a program, e.g. a synthetic trace)."""
    head, summ = _header_summary(path)
    n = int(summ.get("threads") or head.get("threads") or 1)
    extra = head.get("extra") or {}
    if n <= 1 or not head.get("tool_version") or extra.get("replay"):
        return None
    return f"a {n}-thread program traced without --replay"


def simulate_tracings(tracings: list[str], algorithm: str = "minimal", window: int = 2000, seed0: int = 0):
    """One run per tracing (run k: tracing k, seed seed0 + 2k; even seeds, see `pair_seed`), one
    CPU per thread, the algorithm's defaults: (windows per run, metadata, CPU s)."""
    from ..memsys import MemSysConfig, to_rust_config
    from . import observe, windows
    from .accept import Meta

    out, meta = [], None
    c0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    for k, t in enumerate(tracings):
        mc = MemSysConfig.model_validate({"workload": "trace", "trace": str(t), "cpus": threads(t),
                                          "injection": algorithm, "encryption": "source_otp", "seed": seed0 + 2 * k})
        o = observe(to_rust_config(mc))
        out.append(windows(o, window))
        meta = Meta(o.nodes, list(o.cpu_nodes), list(o.module_nodes))
    return out, meta, resource.getrusage(resource.RUSAGE_SELF).ru_utime - c0


def one_tracing_per_side(tracings: list[str], sides: int, algorithm: str = "minimal", pairs: int = 13,
                         window: int = 2000) -> dict:
    """The design the refusal prevents: A = tracing 2v, B = tracing 2v + 1, 13 seeds each
    (`sides` verdicts, disjoint tracings): how many are flagged."""
    from .accept import ALPHA
    from .verdict import analyse

    flagged = {"spatial": 0, "temporal": 0, "reply": 0, "either": 0}
    ps = []
    for v in range(sides):
        ta, tb = tracings[2 * v], tracings[2 * v + 1]
        a, meta, _ = simulate_tracings([ta] * pairs, algorithm, window)
        b, _, _ = simulate_tracings([tb] * pairs, algorithm, window, seed0=2 * pairs)
        r = analyse(a, b, nodes=meta.nodes, cpu_nodes=meta.cpu_nodes, module_nodes=meta.module_nodes, alpha=ALPHA,
                    power_trials=0, classify=False)
        for fam in ("spatial", "temporal", "reply"):
            flagged[fam] += bool(r[fam]["leaks"])
        flagged["either"] += any(bool(r[f]["leaks"]) for f in ("spatial", "temporal", "reply"))
        ps.append({f: r[f]["p"] for f in ("spatial", "temporal", "reply")})
    return {"verdicts": sides, "flagged": flagged, "p": ps}


def measure(tracings: list[str], algorithm: str = "minimal", tests: int = 100, trials: int = 100,
            contrast: int = 0) -> dict:
    """False-positive rate over same-secret verdicts whose units are executions, power against
    planted redirects on the same pool, and the one-tracing-per-side contrast."""
    from .accept import PAIRS, false_positives, power, redirect_for_w

    t0 = time.time()
    runs, meta, cpu_s = simulate_tracings(tracings, algorithm)
    f_w, _ = redirect_for_w(runs, meta, 0.2)
    out = {"algorithm": algorithm, "tracings": len(tracings), "cpus": len(meta.cpu_nodes),
           "cpu_packets_per_run": float(np.mean([w.per_source[:, meta.cpu_nodes].sum() for w in runs])),
           "simulation_cpu_s": round(cpu_s, 1), "pairs": PAIRS,
           "false_positives": false_positives(runs, meta, tests, seed=99, classify=False),
           "power": {f"{e:g}": power(runs, meta, e, trials, seed=1 + i) for i, e in enumerate((0.05, 0.2))},
           "power_w0.2": power(runs, meta, f_w, trials, seed=7)}
    if contrast:
        out["one_tracing_per_side"] = one_tracing_per_side(tracings, contrast, algorithm)
    out["wall_s"] = round(time.time() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    from veil.core import ConfigError

    from .accept import PAIRS, prefix_trace

    ap = argparse.ArgumentParser(prog="python -m veil.memnet.leak.executions")
    ap.add_argument("tracings", nargs="+", help="independent tracings of one program (at least 26)")
    ap.add_argument("--records", type=int, default=0, help="replay the first N records of each thread (0: all)")
    ap.add_argument("--algorithm", default="minimal")
    ap.add_argument("--tests", type=int, default=100)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--contrast", type=int, default=0, help="also N verdicts of one tracing per side")
    ap.add_argument("--prefix-dir", default=".veil/traces/prefix")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    try:
        if len(args.tracings) < 2 * PAIRS:
            raise ConfigError(f"tracings: {len(args.tracings)}; a verdict needs {2 * PAIRS} (13 a side)")
        if args.contrast * 2 > len(args.tracings):
            raise ConfigError(f"--contrast: {args.contrast} verdicts need {2 * args.contrast} tracings")
        tr = [prefix_trace(t, args.records, args.prefix_dir) for t in args.tracings]
        r = measure(tr, args.algorithm, args.tests, args.trials, args.contrast)
        r["records_per_thread"] = args.records
        r["sources"] = [Path(t).name for t in args.tracings]
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(r), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
