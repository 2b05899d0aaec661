"""Acceptance figures of the adversary on a real traced program:

    python -m veil.memnet.leak.calibrate TRACE [--algorithm minimal] [--pairs 13] [--window 2000]

runs the traced program `2 * pairs` times (seeds 0, 1, ...; one thread per CPU), then reports,
at the default settings of `memnet.leak`: the same-secret verdict (A and B are the same program,
only the seed differs: a "leaks" here is a false positive), the smallest redirect caught with
95% power (measured by planting), and whether planted redirects of 5% and 20% of the CPUs'
packets into a quarter of the modules (the secret selecting modules) are flagged.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    from veil.core import ConfigError

    from ..memsys import MemSysConfig, to_rust_config
    from . import analyse, observe, plant_windows, windows

    ap = argparse.ArgumentParser(prog="python -m veil.memnet.leak.calibrate")
    ap.add_argument("trace")
    ap.add_argument("--algorithm", default="minimal")
    ap.add_argument("--pairs", type=int, default=13)
    ap.add_argument("--window", type=int, default=2000)
    ap.add_argument("--plants", default="0.05,0.2")
    args = ap.parse_args(argv)
    from veil import _native

    threads = json.loads(_native.trace.summary(args.trace))["threads"]
    t0 = time.time()
    runs = []
    for seed in range(2 * args.pairs):
        mc = MemSysConfig(workload="trace", trace=args.trace, cpus=threads, injection=args.algorithm,
                          encryption="source_otp", seed=seed)
        o = observe(to_rust_config(mc))
        runs.append(windows(o, args.window))
    sim = time.time() - t0
    a, b = runs[0::2], runs[1::2]
    kw = dict(nodes=o.nodes, cpu_nodes=o.cpu_nodes, module_nodes=o.module_nodes)
    try:
        r = analyse(a, b, **kw)
    except ConfigError as e:
        print(f"error: {e}")
        return 2
    print(f"{args.trace}: {args.algorithm}, {threads} CPUs, {args.pairs} seed pairs, {len(a[0])} windows of "
          f"{args.window} cycles per run ({sim:.0f} s simulated)")
    for fam in ("spatial", "temporal"):
        print(f"  same secret {fam}: p {r[fam]['p']:.3g}: {r[fam]['statement']}")
    for plant in (float(x) for x in args.plants.split(",")):
        rng = np.random.default_rng(1)
        pb = [plant_windows(w, plant, o.cpu_nodes, o.module_nodes, o.nodes, rng) for w in b]
        rp = analyse(a, pb, **kw)
        print(f"  planted redirect {plant:g}: spatial {rp['spatial']['verdict']} (p {rp['spatial']['p']:.3g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
