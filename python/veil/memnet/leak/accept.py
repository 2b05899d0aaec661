"""Acceptance figures of the adversary on a real traced program, per routing algorithm:

    python -m veil.memnet.leak.accept TRACE --records 500 --algorithms minimal,ghost_minimal \
        [--pool 40] [--tests 100] [--trials 100] [--json out.json]

For each algorithm a **pool** of same-secret runs is simulated: the traced program (its first
`records` LLC misses per thread, `prefix_trace`) with seeds 0, 2, 4, ... (even seeds only: the
network's generator clears a seed's lowest bit, see `pair_seed`), one thread per CPU, at the
default settings of `memnet.leak` (13 seed pairs, 2000-cycle windows, alpha 0.001). Then,
from the pool alone (no more simulation):

- **false-positive rate**: `tests` same-secret verdicts, each on 26 runs drawn from the pool
  without replacement and paired at random (A = first of a pair). Verdicts share runs: two
  draws share 26^2 / pool runs on average, and the pool holds floor(pool / 26) disjoint sets
  (the JSON states both), so the count is not binomial over `tests`; it checks that no pairing
  of seeds is flagged more often than alpha allows, not that 100 independent programs pass;
- **power at effect w**: `trials` plantings, each on a fresh draw of 13 seed pairs from the
  pool, of a redirect of w of the CPUs' packets into a quarter of the modules (the secret
  selecting modules) in pattern B's observations; caught when the `destinations` test's p is
  below Holm's first step alpha / 3 (a lower bound on the spatial family's power: the family
  also has the channel shares and the classifier).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from veil.core.leak import aligned

PAIRS = 13
WINDOW = 2000
ALPHA = 1e-3
EFFECTS = (0.05, 0.2)


def prefix_trace(trace: str, records: int, out_dir: str | Path) -> str:
    """A trace file of the first `records` records of each thread of `trace` (0 = `trace`
    itself), written once into `out_dir` (named by the source's content hash)."""
    from veil.core import ConfigError
    from veil.trace.format import TraceWriter, read_trace

    if records < 0:
        raise ConfigError(f"--records: {records} is negative")
    if records == 0:
        return str(trace)
    try:
        digest = hashlib.sha256(Path(trace).read_bytes()).hexdigest()[:16]
    except OSError as e:
        raise ConfigError(f"trace: {e}") from None
    out = Path(out_dir) / f"{Path(trace).stem}-{digest}-first{records}.vtrace"
    if out.exists():
        return str(out)
    header, recs = read_trace(trace)
    keep = np.zeros(len(recs), dtype=bool)
    for t in np.unique(recs["thread"]):
        keep[np.flatnonzero(recs["thread"] == t)[:records]] = True
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    w = TraceWriter(tmp, header)
    w.write(recs[keep])
    w.finish()
    tmp.replace(out)
    return str(out)


@dataclass
class Meta:
    nodes: int
    cpu_nodes: list
    module_nodes: list


def _save_pool(path: Path, runs: list, meta: Meta, cpu_s: float) -> None:
    arrays = {"nodes": np.array(meta.nodes), "cpu_nodes": np.array(meta.cpu_nodes),
              "module_nodes": np.array(meta.module_nodes), "cpu_s": np.array(cpu_s), "n": np.array(len(runs))}
    for i, w in enumerate(runs):
        arrays.update({f"{i}/channels": w.channels, f"{i}/pairs": w.pairs, f"{i}/per_source": w.per_source})
        if w.dest_seq is not None:
            arrays.update({f"{i}/dest_seq": w.dest_seq, f"{i}/chan_seq": w.chan_seq})
        if w.replies is not None:  # read back, or the REPLY family reads "not recorded" (p = 1)
            arrays[f"{i}/replies"] = w.replies
        arrays.update({f"{i}/s/{k}": v for k, v in w.scalars.items()})
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)


def _load_pool(path: Path):
    from . import Windows

    z = np.load(path)
    meta = Meta(int(z["nodes"]), z["cpu_nodes"].tolist(), z["module_nodes"].tolist())
    runs = []
    for i in range(int(z["n"])):
        sc = {k.split("/")[-1]: z[k] for k in z.files if k.startswith(f"{i}/s/")}
        seq = {k: z[f"{i}/{k}"] for k in ("dest_seq", "chan_seq", "replies") if f"{i}/{k}" in z.files}
        runs.append(Windows(channels=z[f"{i}/channels"], pairs=z[f"{i}/pairs"], per_source=z[f"{i}/per_source"],
                            scalars=sc, **seq))
    return runs, meta, float(z["cpu_s"])


def _pool_key(trace: str) -> str:
    """Names what a cached pool depends on besides the name's fields: the trace's bytes and the
    code (veil_version fingerprints the sources). A pool saved by older code (one that dropped
    the reply profiles, say) or from another trace under the same name is simulated again."""
    import hashlib

    from veil.core.runner import veil_version

    h = hashlib.sha256(veil_version().encode())
    with open(trace, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


def simulate_pool(trace: str, algorithm: str, runs: int, window: int = WINDOW, cache_dir: str | Path | None = None):
    """`runs` same-secret runs (seeds 0, 2, ...): (windows per run, observation metadata, CPU s),
    kept in `cache_dir` (named by the trace, algorithm, runs and window) and read back from it."""
    from ..memsys import MemSysConfig, to_rust_config
    from . import observe, windows

    path = None
    if cache_dir:
        path = Path(cache_dir) / f"{Path(trace).stem}-{algorithm}-{runs}-w{window}-{_pool_key(trace)}.npz"
        if path.exists():
            return _load_pool(path)

    threads = json.loads(_summary(trace))["threads"]
    secure = secure_params(algorithm)
    out, meta = [], None
    c0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    for k in range(runs):
        mc = MemSysConfig.model_validate({"workload": "trace", "trace": str(trace), "cpus": threads,
                                          "injection": algorithm, "encryption": "source_otp", "seed": 2 * k,
                                          "secure": secure})
        o = observe(to_rust_config(mc))
        out.append(windows(o, window))
        meta = Meta(o.nodes, list(o.cpu_nodes), list(o.module_nodes))
    cpu_s = resource.getrusage(resource.RUSAGE_SELF).ru_utime - c0
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _save_pool(path, out, meta, cpu_s)
    return out, meta, cpu_s


def secure_params(algorithm: str) -> dict:
    """The `[secure]` table a user would run: every algorithm its defaults, adaptive ghost the hot
    set and weight of its performance result (with its default empty hot set it is ghost
    minimal)."""
    if algorithm != "adaptive_ghost":
        return {}
    from ..secure_model import HOT_FRACTION, HOT_MODULES, adaptive_hot_weight

    return {"hot_modules": HOT_MODULES, "hot_weight": adaptive_hot_weight(64, len(HOT_MODULES), HOT_FRACTION)}


def _summary(trace: str) -> str:
    from veil import _native

    return _native.trace.summary(str(trace))


def _draw(rng: np.random.Generator, pool: int, pairs: int = PAIRS) -> tuple[np.ndarray, np.ndarray]:
    pick = rng.choice(pool, size=2 * pairs, replace=False)
    return pick[0::2], pick[1::2]


def false_positives(runs: list, meta, tests: int, seed: int = 0, progress=None, classify: bool = True) -> dict:
    """Same-secret verdicts of both families on `tests` random pairings drawn from the pool
    (`progress(result so far)` after every 10; `classify` = False skips the classifiers, which
    do not vote)."""
    from .verdict import analyse

    rng = np.random.default_rng(seed)
    flagged = {"spatial": 0, "temporal": 0, "reply": 0, "either": 0}
    worst = {"spatial": 1.0, "temporal": 1.0, "reply": 1.0}
    # A pool of 26 runs per test: disjoint sets, independent verdicts.
    disjoint = len(runs) >= 2 * PAIRS * tests
    order = rng.permutation(len(runs))
    for t in range(tests):
        if disjoint:
            pick = order[2 * PAIRS * t:2 * PAIRS * (t + 1)]
            ia, ib = pick[0::2], pick[1::2]
        else:
            ia, ib = _draw(rng, len(runs))
        r = analyse([runs[i] for i in ia], [runs[i] for i in ib], nodes=meta.nodes, cpu_nodes=meta.cpu_nodes,
                    module_nodes=meta.module_nodes, alpha=ALPHA, power_trials=0, classify=classify)
        for fam in ("spatial", "temporal", "reply"):
            flagged[fam] += bool(r[fam]["leaks"])
            worst[fam] = min(worst[fam], r[fam]["p"])
        flagged["either"] += any(bool(r[f]["leaks"]) for f in ("spatial", "temporal", "reply"))
        if progress and (t + 1) % 10 == 0 and t + 1 < tests:
            progress(_fp_result(dict(flagged), dict(worst), t + 1, len(runs), disjoint))
    return _fp_result(flagged, worst, tests, len(runs), disjoint)


def _fp_result(flagged: dict, worst: dict, tests: int, n: int, disjoint: bool) -> dict:
    return {"tests": tests, "flagged": flagged, "rate": {k: v / tests for k, v in flagged.items()},
            "smallest_p": worst, "pool": n, "disjoint_sets": n // (2 * PAIRS), "independent": disjoint,
            "mean_shared_runs": 0.0 if disjoint else (2 * PAIRS) ** 2 / n}


def cohens_w(p0: np.ndarray, u: np.ndarray, f: float) -> float:
    """Cohen's w of the two-sample comparison (the 2 x K table of A's and B's packets per
    destination, equal sizes) between shares p0 and p1 = (1 - f) p0 + f u:
    w^2 = (1/4) sum (p1 - p0)^2 / pbar, pbar = (p0 + p1) / 2. Defined where p0 has empty
    categories (a redirect into modules the program never reaches: the one-sample form
    sum (p1 - p0)^2 / p0 is unbounded there), and between 0 and 1."""
    d = f * (u - p0)
    pbar = p0 + d / 2
    keep = pbar > 0
    return float(np.sqrt((d[keep] ** 2 / pbar[keep]).sum() / 4))


def redirect_for_w(runs: list, meta, w: float = 0.2) -> tuple[float, float]:
    """The redirect fraction f into the first quarter of the modules whose Cohen's w
    (`cohens_w`) against the pool's CPU destination shares is `w` (bisection: w grows with f).
    Returns (f, w at f = 1); f = 1 when even a full redirect stays below `w`."""
    from .verdict import cpu_pairs

    cpus = np.asarray(meta.cpu_nodes)
    mods = list(meta.module_nodes)
    tot = sum(cpu_pairs(r, meta.nodes, cpus).sum(axis=(0, 1)) for r in runs)[mods].astype(float)
    p0 = tot / tot.sum()
    u = np.zeros(len(mods))
    u[: max(1, len(mods) // 4)] = 1.0 / max(1, len(mods) // 4)
    w1 = cohens_w(p0, u, 1.0)
    if w1 <= w:
        return 1.0, w1
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cohens_w(p0, u, mid) < w else (lo, mid)
    return hi, w1


def power(runs: list, meta, effect: float, trials: int, seed: int = 0) -> dict:
    """Fraction of `trials` plantings of a redirect of `effect` caught by the destinations test
    at alpha / 3, each on a fresh draw of seed pairs from the pool."""
    from .verdict import cpu_pairs, destinations_test, plant_cpu_pairs

    rng = np.random.default_rng(seed)
    cpus = np.asarray(meta.cpu_nodes)
    targets = list(meta.module_nodes[: max(1, len(meta.module_nodes) // 4)])
    level = ALPHA / 3
    caught = 0
    ps = []
    for _ in range(trials):
        ia, ib = _draw(rng, len(runs))
        ca = [cpu_pairs(runs[i], meta.nodes, cpus) for i in ia]
        cb = [plant_cpu_pairs(cpu_pairs(runs[i], meta.nodes, cpus), effect, targets, rng) for i in ib]
        p = destinations_test(ca, cb, 1, "planted").p
        ps.append(p)
        caught += p < level
    return {"effect": effect, "trials": trials, "caught": caught, "power": caught / trials,
            "median_p": float(np.median(ps))}


def accept(trace: str, algorithm: str, pool: int, tests: int = 100, trials: int = 100,
           effects: tuple[float, ...] = EFFECTS, cache_dir: str | Path | None = None, progress=None) -> dict:
    """Every acceptance figure of one algorithm on one trace (see the module doc)."""
    from veil.core import ConfigError
    from veil.core.leak import power as pw

    for e in effects:
        pw.check_effect(e)
    if pool < 2 * PAIRS:
        raise ConfigError(f"--pool: {pool} runs; a verdict needs {2 * PAIRS} (13 seed pairs at alpha 0.001)")
    t0 = time.time()
    runs, meta, cpu_s = simulate_pool(trace, algorithm, pool, cache_dir=cache_dir)
    sim_wall = time.time() - t0
    f_w, w1 = redirect_for_w(runs, meta, 0.2)
    packets = float(np.mean([w.per_source[:, meta.cpu_nodes].sum() for w in runs]))
    out = {"algorithm": algorithm, "cpus": len(meta.cpu_nodes), "pool": pool,
           "windows_per_run": float(np.mean([len(w) for w in runs])), "cpu_packets_per_run": packets,
           "simulation_cpu_s": round(cpu_s, 1), "simulation_wall_s": round(sim_wall, 1)}
    out["power"] = {f"{e:g}": power(runs, meta, e, trials, seed=1 + i) for i, e in enumerate(effects)}
    out["cohen_w_full_redirect"] = w1
    out["power_w0.2"] = power(runs, meta, f_w, trials, seed=7)
    so_far = progress and (lambda fp: progress({**out, "false_positives": fp}))
    out["false_positives"] = false_positives(runs, meta, tests, seed=99, progress=so_far)
    out["analysis_wall_s"] = round(time.time() - t0 - sim_wall, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    from veil.core import ConfigError
    from veil.core.leak import power as pw

    ap = argparse.ArgumentParser(prog="python -m veil.memnet.leak.accept")
    ap.add_argument("trace")
    ap.add_argument("--records", type=int, default=0, help="replay the first N records of each thread (0: all)")
    ap.add_argument("--algorithms", default="minimal", help="NAME[:POOL],...")
    ap.add_argument("--pool", type=int, default=40, help="same-secret runs per algorithm (>= 26)")
    ap.add_argument("--tests", type=int, default=100, help="same-secret verdicts drawn from the pool")
    ap.add_argument("--trials", type=int, default=100, help="plantings per effect")
    ap.add_argument("--effects", default="0.05,0.2")
    ap.add_argument("--json", default="")
    ap.add_argument("--prefix-dir", default=".veil/traces/prefix")
    ap.add_argument("--pool-dir", default="", help="keep each pool's windows here (npz) and reuse them")
    ap.add_argument("--simulate-only", action="store_true", help="only fill --pool-dir")
    args = ap.parse_args(argv)
    try:
        effects = tuple(float(x) for x in args.effects.split(","))
        for e in effects:
            try:
                pw.check_effect(e)
            except ValueError as err:
                raise ConfigError(f"--effects: {err}") from None
        if args.pool < 2 * PAIRS:
            raise ConfigError(f"--pool: {args.pool} runs; a verdict needs {2 * PAIRS} (13 seed pairs at alpha 0.001)")
        trace = prefix_trace(args.trace, args.records, args.prefix_dir)
        res = {"trace": Path(args.trace).name, "records_per_thread": args.records, "pairs": PAIRS,
               "window": WINDOW, "alpha": ALPHA, "algorithms": {}}
        for spec in args.algorithms.split(","):
            alg, _, pool = spec.partition(":")  # NAME or NAME:POOL
            if args.simulate_only:
                simulate_pool(trace, alg, int(pool) if pool else args.pool, cache_dir=args.pool_dir)
                continue
            def partial(r, alg=alg):  # a long measurement leaves its verdicts so far beside the JSON
                if args.json:
                    Path(args.json + ".partial").write_text(json.dumps({**res, "algorithms": {alg: r}}, indent=1))

            r = accept(trace, alg, int(pool) if pool else args.pool, args.tests, args.trials, effects,
                       cache_dir=args.pool_dir or None, progress=partial)
            res["algorithms"][alg] = r
            print(json.dumps(r), flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ---------------------------------------------------------------------------------------------
# The report's rows, from the committed measurement (measuring took 52 wall minutes on 2 shared cores).

ACCEPT_JSON = Path(__file__).resolve().parents[1] / "data" / "leak_accept.json"
CRITERION = "acceptance criterion of the adversary on real traced programs"


# The acceptance rows check Veil's attacker, not the paper's claims: its power and its false-positive
# rate follow from the test's design (13 seed pairs, alpha / 3) and the redirect planted into the
# observations. Measured once and committed (52 wall minutes), with no perturbation tried, so they
# are counted as self-checks, never as holding.
ATTACKER_CHECK = ("a check of Veil's attacker, not a claim of the paper: power and false-positive rate follow from the "
                  "test's design (13 seed pairs, alpha / 3) and the redirect planted into the observations; measured once "
                  "and committed, no perturbation tried")


def accept_rows(data: dict, labels: dict[str, str]) -> list:
    """Per algorithm: power at Cohen's w = 0.2 and at a 20% redirect (shape >= 0.95) and the
    same-secret false-positive rate (shape <= 0.01), measured (origin measurement)."""
    from veil.core import Row, Shape

    rows = []
    for alg, r in data["algorithms"].items():
        name = labels.get(alg, alg)
        how = (f"{data['trace']}, its first {r['records_per_thread']} misses per thread on {r['cpus']} CPUs; measured "
               f"{data['measured']} with `{r['command']}`")
        pw, p20, fp = r["power_w0.2"], r["power"]["0.2"], r["false_positives"]
        stopped = (f"; stopped after {fp['tests']} of the {fp['planned']} planned verdicts (CPU time on the shared "
                   "machine)" if fp["tests"] < fp.get("planned", fp["tests"]) else "")
        draws = (f"{fp['tests']} disjoint sets of 26 runs" if fp["independent"] else
                 f"{fp['tests']} draws of 26 runs from a pool of {fp['pool']} (two share {fp['mean_shared_runs']:.0f} "
                 f"runs on average; {fp['disjoint_sets']} disjoint)")
        rows += [
            Row(f"{name}: power at Cohen's w = 0.2 (a redirect of {100 * pw['effect']:.2g}% into a quarter of "
                "the modules)",
                pw["power"], shape=Shape(">=", 0.95), source=CRITERION + ": w >= 0.2 caught with >= 95% power",
                origin="measurement", self_check=ATTACKER_CHECK, key=f"memnet/leak/accept/{alg}/power_w02",
                note=f"{pw['caught']}/{pw['trials']} plantings caught by the destinations test at alpha/3, each on "
                     f"13 seed pairs drawn from {r['pool']} same-secret runs; {how}"),
            Row(f"{name}: power at a 20% redirect", p20["power"], shape=Shape(">=", 0.95),
                source=CRITERION + ": a redirect of 20% of the CPUs' packets caught with >= 95% power",
                origin="measurement", self_check=ATTACKER_CHECK, key=f"memnet/leak/accept/{alg}/power_redirect20",
                note=f"{p20['caught']}/{p20['trials']} plantings caught; {how}"),
            Row(f"{name}: false-positive rate over same-secret verdicts", fp["rate"]["either"],
                shape=Shape("<=", 0.01), source=CRITERION + ": at most 1% of same-secret verdicts flagged",
                origin="measurement", self_check=ATTACKER_CHECK, key=f"memnet/leak/accept/{alg}/false_positive_rate",
                note=f"{fp['flagged']['either']}/{fp['tests']} flagged (spatial {fp['flagged']['spatial']}, temporal "
                     f"{fp['flagged']['temporal']}); {draws}{stopped}; {how}"
                     + (f"; false positives re-measured {r['false_positives_remeasured']}"
                        if r.get("false_positives_remeasured") else "")),
        ]
    return rows


def accept_section(ctx, labels: dict[str, str]) -> None:
    """The acceptance figures as report rows, read from the committed measurement."""
    if not ACCEPT_JSON.exists():
        ctx.text("Acceptance figures of the adversary: no stored measurement (" + ACCEPT_JSON.name + ").")
        return
    data = json.loads(ACCEPT_JSON.read_text())
    ctx.table("Adversary acceptance on a traced program: measured power against planted leaks and "
              "false-positive rate over same-secret verdicts, every routing algorithm", accept_rows(data, labels))
