"""One adversary for every system: run a registered observer under two secret patterns, seed
pair by seed pair, and give each feature family a verdict with measured power.

Per family (spatial, temporal, volume) the main test is the exact aligned sign-flip test over
whole seed pairs (aligned.py): run i of A against run i of B, window by window. The families'
tests are Holm-adjusted together; a family leaks when its adjusted p is below alpha. Beside it
stands a held-out classifier (folds are seed pairs, p and interval by relabelling them). Power
is measured, never assumed: an effect of known size is planted into pattern B's own
observations (counts families: a fraction of the events redirected to a quarter of the columns;
others: a fraction added) and the smallest effect caught in 95% of plantings at Holm's first
level is the family's detectable effect. For a family that leaks, the power of the difference
itself is measured too: the test re-run on seed pairs drawn with replacement (bootstrap), the
fraction flagged.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from veil.core.errors import ConfigError

from . import aligned, power, stats
from .observer import FAMILIES, Observer, Run, observer

__all__ = ["LEAKS", "NO_LEAK", "pair_seed", "find_observer", "observe_one", "analyse", "analyse_runs",
           "min_repeats", "statement"]

LEAKS = "leaks"
NO_LEAK = "no leak detected"
#: The defended families' tests are Holm-adjusted together: at most one per family.
MAX_TESTS = len(FAMILIES)


def pair_seed(seed: int, i: int, side: int) -> int:
    """Seed of run i of pattern A (side 0) or B (side 1): memnet's pairing (two apart, never 2k
    and 2k + 1, whose generator streams are related there), used for every system alike."""
    return seed + 4 * i + 2 * side


def min_repeats(alpha: float) -> int:
    """Seed pairs for the exact test to reach alpha / MAX_TESTS (Holm's first step)."""
    return aligned.min_units(alpha / MAX_TESTS)


def _systems_with_observers() -> list[str]:
    from veil.core.registry import VEIL_DIR  # the package's folder, without importing the package

    root = str(VEIL_DIR)
    return sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "observer.py"))
                  or os.path.exists(os.path.join(root, d, "observer", "__init__.py")))


def find_observer(system: str, name: str) -> Observer:
    """The observer `name` of `system`, importing `veil.<system>.observer` (only that system)."""
    known = _systems_with_observers()
    if system not in known:
        raise ConfigError(f"system: unknown {system!r} (no observer); known: {', '.join(known) or 'none'}")
    importlib.import_module(f"veil.{system}.observer")
    return observer(system, name)


def observe_one(system: str, name: str, setting: str, pattern: str, seed: int, size: int) -> dict[str, Any]:
    """One run's view as plain data. Top-level, so worker processes and Dask can call it."""
    r = find_observer(system, name).run(setting, pattern, seed, size)
    return {"features": {k: np.asarray(v, dtype=float) for k, v in r.features.items()}, "counts": list(r.counts),
            "cost": dict(r.cost)}


def _as_run(d: dict[str, Any]) -> Run:
    return Run({k: np.asarray(v, dtype=float) for k, v in d["features"].items()}, tuple(d["counts"]),
               dict(d.get("cost", {})))


def _fractions(m: np.ndarray) -> np.ndarray:
    tot = m.sum(axis=1, keepdims=True)
    return np.divide(m, tot, out=np.zeros(m.shape, dtype=float), where=tot > 0)


def _test(fa: list[np.ndarray], fb: list[np.ndarray], is_count: bool, name: str, seed: int,
          stop_above: float | None = None) -> aligned.SignFlip:
    if is_count:
        fa, fb = [_fractions(x) for x in fa], [_fractions(x) for x in fb]
    s = aligned.block_differences(fa, fb, 0, 1)
    return aligned.signflip(s, name, seed=seed, stop_above=stop_above, pooled=is_count)


def _classifier(xa: list[np.ndarray], xb: list[np.ndarray], is_count: bool, block: int, alpha: float) -> dict:
    if is_count:
        xa, xb = [_fractions(x) for x in xa], [_fractions(x) for x in xb]
    ga = np.concatenate([r * 1_000_000 + np.arange(len(x)) // block for r, x in enumerate(xa)])
    gb = np.concatenate([r * 1_000_000 + np.arange(len(x)) // block for r, x in enumerate(xb)])
    res = stats.classify(np.vstack(xa), np.vstack(xb), ga, gb, "classifier", alpha=alpha,
                         folds_a=ga // 1_000_000, folds_b=gb // 1_000_000)
    d = res.as_dict()
    lo, hi = d["detail"].get("ci95", [0.0, 1.0])
    return {"accuracy": d["statistic"], "p": d["p"], "ci95": [lo, hi], "n": d["detail"].get("n", 0)}


def _planted(xb: list[np.ndarray], is_count: bool, effect: float, rng: np.random.Generator) -> list[np.ndarray]:
    if is_count:
        # A hot quarter of the columns B's events actually fall in (empty columns, e.g. writes a
        # setting never makes, would make the redirect a weaker effect than its size says).
        used = np.flatnonzero(np.sum([x.sum(axis=0) for x in xb], axis=0) > 0)
        used = used if len(used) else np.arange(xb[0].shape[1])
        targets = used[: max(1, len(used) // 4)].tolist()
        return [power.plant_redirect(x, effect, targets, rng).astype(float) for x in xb]
    return [power.plant_volume(x, effect) for x in xb]


def _observed_effect(fa: list[np.ndarray], fb: list[np.ndarray], is_count: bool) -> float:
    """How far apart A and B are, in the planted effect's units: for counts the total-variation
    distance between the two patterns' mean shares (a redirect of a fraction e moves at most e);
    otherwise the largest relative difference of a feature's mean (an added fraction e is e)."""
    if is_count:
        ma = np.vstack([_fractions(x) for x in fa]).mean(axis=0)
        mb = np.vstack([_fractions(x) for x in fb]).mean(axis=0)
        return float(0.5 * np.abs(ma - mb).sum())
    ma, mb = np.vstack(fa).mean(axis=0), np.vstack(fb).mean(axis=0)
    scale = np.maximum(np.abs(ma), 1e-12)
    return float(np.max(np.abs(mb - ma) / scale)) if len(ma) else 0.0


def _bootstrap_power(fa, fb, is_count: bool, level: float, trials: int, seed: int) -> float:
    """Fraction of seed-pair resamples (with replacement) whose test is below `level`."""
    rng = np.random.default_rng(seed)
    j = len(fa)
    hits = 0
    for _ in range(trials):
        pick = rng.integers(0, j, size=j)
        t = _test([fa[i] for i in pick], [fb[i] for i in pick], is_count, "bootstrap", int(rng.integers(1 << 31)),
                  stop_above=level)
        hits += t.p < level
    return hits / trials


def analyse_runs(runs_a: list[Run], runs_b: list[Run], *, alpha: float = 1e-3, power_target: float = 0.95,
                 power_trials: int = 20, block: int = 4, seed: int = 0) -> dict[str, Any]:
    """Per-family verdicts from aligned runs (run i of A with run i of B)."""
    if len(runs_a) != len(runs_b) or len(runs_a) < min_repeats(alpha):
        raise ConfigError(f"repeats: {len(runs_a)} seed pair(s); at alpha {alpha:g} over {MAX_TESTS} families the "
                          f"exact sign-flip test needs at least {min_repeats(alpha)} (p >= 2^-(pairs - 1))")
    fams = [f for f in FAMILIES if f in runs_a[0].features]
    counts = set(runs_a[0].counts)
    level = alpha / len(fams)  # Holm's first step: a p below it is flagged whatever the others say
    out: dict[str, Any] = {}
    for n, fam in enumerate(fams):
        fa = [r.features[fam] for r in runs_a]
        fb = [r.features[fam] for r in runs_b]
        is_count = fam in counts
        t = _test(fa, fb, is_count, fam, seed + n)

        def caught(effect: float, rng: np.random.Generator, fa=fa, fb=fb, is_count=is_count) -> bool:
            return _test(fa, _planted(fb, is_count, effect, rng), is_count, "planted", int(rng.integers(1 << 31)),
                         stop_above=level).p < level

        det = power.detectable_effect(caught, power_target, power_trials, seed=seed + 10 * n)
        det["tried"] = {str(k): v for k, v in det["tried"].items()}
        det["what"] = ("fraction of B's events redirected to a quarter of the columns they fall in" if is_count
                       else "fraction added to B's values")
        out[fam] = {"test": t.as_dict(), "p_raw": t.p, "counts": is_count, "detectable": det,
                    "effect": _observed_effect(fa, fb, is_count),
                    "classifier": _classifier(fa, fb, is_count, block, alpha)}
    adj = stats.holm([out[f]["p_raw"] for f in fams])
    for fam, p in zip(fams, adj):
        f = out[fam]
        f["p"] = p
        f["leaks"] = p < alpha
        f["verdict"] = LEAKS if f["leaks"] else NO_LEAK
        fa = [r.features[fam] for r in runs_a]
        fb = [r.features[fam] for r in runs_b]
        f["power"] = (_bootstrap_power(fa, fb, f["counts"], level, power_trials, seed + 7) if f["leaks"]
                      else f["detectable"]["power"])
        f["statement"] = statement(f, power_target)
    return {"families": out, "alpha": alpha, "repeats": len(runs_a), "power_target": power_target,
            # rows of each run's first feature family: windows of time for most observers, blocks
            # of packets cut by count for memnet's channels (so not "windows")
            "rows_a": int(sum(len(next(iter(r.features.values()))) for r in runs_a)),
            "rows_b": int(sum(len(next(iter(r.features.values()))) for r in runs_b)),
            "cost_a": _mean_cost(runs_a), "cost_b": _mean_cost(runs_b)}


def _mean_cost(runs: list[Run]) -> dict[str, float]:
    keys = sorted({k for r in runs for k in r.cost})
    return {k: float(np.mean([r.cost.get(k, 0.0) for r in runs])) for k in keys}


def statement(fam: dict, power_target: float) -> str:
    """The verdict in words: "leaks (p, effect)" or "no leak of effect >= X detected"."""
    det = fam["detectable"]
    pw = f"{100 * power_target:.0f}%"
    if fam["leaks"]:
        what = "total-variation distance of the shares" if fam["counts"] else "largest relative difference of a mean"
        return (f"leaks (p {fam['p']:.3g}, effect {fam['effect']:.3g}: {what}; the difference is caught in "
                f"{100 * fam['power']:.0f}% of seed-pair resamples)")
    if det["effect"] is None:
        return (f"no leak detected, and the test is blind here: even an effect of 1 is caught in only "
                f"{100 * det['power']:.0f}% of plantings")
    return f"no leak of effect >= {det['effect']:g} detected ({det['what']}; {pw} power, measured by planting)"


def analyse(obs: Observer, setting: str, a: str, b: str, repeats: int, seed: int, size: int, *,
            alpha: float = 1e-3, power_target: float = 0.95, power_trials: int = 20,
            runner: Callable[[list[tuple]], list[dict]] | None = None) -> dict[str, Any]:
    """Runs `obs` for `repeats` seed pairs (A with seed pair_seed(seed, i, 0), B with
    pair_seed(seed, i, 1), or A's seed too when the observer is `paired_seed`) and analyses them. `runner` maps a list of `observe_one` argument
    tuples to their results (a process pool or Dask; in this process by default)."""
    obs.check(setting, a, b)
    if repeats < min_repeats(alpha):
        raise ConfigError(f"repeats: {repeats} seed pair(s); at alpha {alpha:g} over {MAX_TESTS} families the exact "
                          f"sign-flip test needs at least {min_repeats(alpha)} (p >= 2^-(pairs - 1))")
    tasks = [(obs.system, obs.name, setting, pat, pair_seed(seed, i, 0 if obs.paired_seed else side), size)
             for i in range(repeats) for side, pat in ((0, a), (1, b))]
    if runner is None:
        from veil.core.runner import report_progress

        done = []
        for t in tasks:
            done.append(_local(obs, t))
            report_progress(len(done), len(tasks), "runs")
    else:
        done = runner(tasks)
    runs = [_as_run(d) for d in done]
    report = analyse_runs(runs[0::2], runs[1::2], alpha=alpha, power_target=power_target,
                          power_trials=power_trials, seed=seed)
    report.update({"system": obs.system, "observer": obs.name, "setting": setting, "a": a, "b": b, "size": size,
                   "seed": seed, "negative_control": setting in obs.leaky, "defence": setting in obs.defences})
    return report


def _local(obs: Observer, task: tuple) -> dict[str, Any]:
    _, _, setting, pattern, seed, size = task
    r = obs.run(setting, pattern, seed, size)
    return {"features": r.features, "counts": list(r.counts), "cost": dict(r.cost)}
