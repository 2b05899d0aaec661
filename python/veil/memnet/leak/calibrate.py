"""Acceptance figures of the adversary on a real traced program:

    veil memnet leak --calibrate TRACE [--algorithm minimal] [--pairs 13] [--plants 0.05,0.2]
    python -m veil.memnet.leak.calibrate TRACE [--algorithm minimal] [--pairs 13] [--window 2000]
    python -m veil.memnet.leak.calibrate --false-positives 100 [--algorithm minimal]

runs the traced program `2 * pairs` times (seeds 0, 1, ...; one thread per CPU), then reports,
at the default settings of `memnet.leak`: the same-secret verdict (A and B are the same program,
only the seed differs: a "leaks" here is a false positive), the smallest redirect caught with
95% power (measured by planting), and whether planted redirects of 5% and 20% of the CPUs'
packets into a quarter of the modules (the secret selecting modules) are flagged. The
acceptance figures over every algorithm (power over 100 plantings, false-positive rate over 100
same-secret verdicts drawn from a pool of runs) are `python -m veil.memnet.leak.accept`.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def calibrate(trace: str, algorithm: str = "minimal", pairs: int = 13, window: int = 2000,
              plants: tuple[float, ...] = (0.05, 0.2)):
    """Yields the report's lines (`veil memnet leak --calibrate TRACE`)."""
    from veil import _native
    from veil.core import ConfigError

    from ..memsys import MemSysConfig, to_rust_config
    from veil.core.leak import aligned, power

    from . import analyse, observe, pair_seed, plant_windows, windows

    for p in plants:
        try:
            power.check_effect(p)
        except ValueError as e:
            raise ConfigError(f"--plants: {e}") from None
    need = aligned.min_units(1e-3 / 3)
    if pairs < need:
        raise ConfigError(f"--pairs: {pairs} seed pair(s); at alpha 0.001 (over 3 tests) the exact sign-flip test "
                          f"needs at least {need}")
    try:
        threads = json.loads(_native.trace.summary(str(trace)))["threads"]
    except (ValueError, OSError) as e:
        raise ConfigError(f"--calibrate: {e}") from None
    t0 = time.time()
    runs = []
    for seed in [pair_seed(0, i, side) for i in range(pairs) for side in (0, 1)]:
        mc = MemSysConfig(workload="trace", trace=str(trace), cpus=threads, injection=algorithm,
                          encryption="source_otp", seed=seed)
        o = observe(to_rust_config(mc))
        runs.append(windows(o, window))
    a, b = runs[0::2], runs[1::2]
    kw = dict(nodes=o.nodes, cpu_nodes=o.cpu_nodes, module_nodes=o.module_nodes)
    r = analyse(a, b, **kw)
    yield (f"{trace}: {algorithm}, {threads} CPUs, {pairs} seed pairs, {len(a[0])} windows of {window} cycles "
           f"per run ({time.time() - t0:.0f} s simulated)")
    for fam in ("spatial", "temporal"):
        yield f"  same secret {fam}: p {r[fam]['p']:.3g}: {r[fam]['statement']}"
    for plant in plants:
        rng = np.random.default_rng(1)
        pb = [plant_windows(w, plant, o.cpu_nodes, o.module_nodes, o.nodes, rng) for w in b]
        rp = analyse(a, pb, **kw)
        yield f"  planted redirect {plant:g}: spatial {rp['spatial']['verdict']} (p {rp['spatial']['p']:.3g})"


def false_positives(algorithm: str, verdicts: int):
    """Same-secret verdicts on synthetic uniform traffic (4 CPUs x 60 records, the tests' size):
    verdict v runs seeds 100000 v + pair_seed(0, i, side); yields a progress line per 10."""
    from ..memsys import MemSysConfig, to_rust_config
    from . import analyse, observe, pair_seed, windows

    fp = {"spatial": 0, "temporal": 0}
    for v in range(verdicts):
        runs = []
        for seed in [100000 * v + pair_seed(0, i, side) for i in range(13) for side in (0, 1)]:
            mc = MemSysConfig(requests_per_cpu=60, cpus=4, encryption="source_otp", injection=algorithm, seed=seed)
            o = observe(to_rust_config(mc))
            runs.append(windows(o, 500))
        r = analyse(runs[0::2], runs[1::2], nodes=o.nodes, cpu_nodes=o.cpu_nodes, module_nodes=o.module_nodes,
                    power_trials=5)
        for fam in fp:
            fp[fam] += bool(r[fam]["leaks"])
        if (v + 1) % 10 == 0 or v + 1 == verdicts:
            yield (f"{algorithm}: {v + 1} same-secret verdicts, flagged spatially {fp['spatial']}, "
                   f"temporally {fp['temporal']}")


def main(argv: list[str] | None = None) -> int:
    from veil.core import ConfigError

    ap = argparse.ArgumentParser(prog="python -m veil.memnet.leak.calibrate")
    ap.add_argument("trace", nargs="?", default="")
    ap.add_argument("--false-positives", type=int, default=0, metavar="N",
                    help="instead: N same-secret verdicts on synthetic uniform traffic")
    ap.add_argument("--algorithm", default="minimal")
    ap.add_argument("--pairs", type=int, default=13)
    ap.add_argument("--window", type=int, default=2000)
    ap.add_argument("--plants", default="0.05,0.2")
    args = ap.parse_args(argv)
    if args.false_positives:
        for line in false_positives(args.algorithm, args.false_positives):
            print(line, flush=True)
        return 0
    try:
        for line in calibrate(args.trace, args.algorithm, args.pairs, args.window,
                              tuple(float(x) for x in args.plants.split(","))):
            print(line, flush=True)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
