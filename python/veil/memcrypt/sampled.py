"""Sampled simulation of `memcrypt.run` (`sampling = "sampled"`): windows of the timed records are
timed in parallel from functionally warmed state (crates/veil-memcrypt/src/sampled.rs) and
combined here into an IPC estimate with a confidence interval.

**Estimator.** A run's cycles are exactly its instructions times the dispatch CPI
(1 / min(width, ilp)) plus the cycles it stalled (the core model advances no other way), and the
functional pass that warms the windows counts the instructions and the fills by kind over every
timed record. So only the stalls are estimated: per window, the measured stall cycles are
regressed on its load and store fills (least squares with an intercept; writebacks are the
window's other records, so they add nothing), and the regression is evaluated at the region's
fills per window-sized block (the regression estimator of survey sampling). Instructions are
never a regressor: a few records carry long compute stretches (mgrid), which windows rarely
hold, and extrapolating a stall slope on instructions to them put the estimate 1.7% low;
estimating whole cycles by the plain ratio of window instructions to window cycles was 7% low
there. The variance is that of a stratified sample of one window per unit, from successive
differences of the residuals in unit order, with the finite-population correction of sampling a
share of the blocks; the interval uses Student's t at the residual degrees of freedom and is
mapped to IPC = instructions / cycles. Below `REGRESSION_MIN` windows there are no slopes: the
windows' mean stall (the plain expansion estimator), whose interval held where the regression's
did not (gzip, 8 windows: docs/memcrypt-sampling.md). A run whose interval is wider than
`sample_target` times a second, denser set of windows (SMARTS's tuned sample).

Windows are timed on this machine's cores (`threads`), or, with `scheduler`, by Dask tasks that
each time a contiguous share of the windows (each task re-reads the trace up to its share: the
same windows, the same result as a local run).
"""

from __future__ import annotations

import json
import math
import os
from statistics import NormalDist
from typing import Any

import numpy as np

from veil import _native
from veil.core import ConfigError

# Counts the functional pass knows for every timed record: the regression's auxiliary variables,
# and the totals a sampled result reports exactly.
AUXILIARY = ("load_fills", "store_fills")
EXACT = ("insts", "load_fills", "store_fills", "writebacks", "records")
# Results that are not counts over the measured records (kept from one window, or derived).
_NOT_SUMMED = {"ipc", "dram_unloaded", "warmup_records"}
# Fewest windows for the regression estimator. Its variance (the residuals') leaves out the error
# of the two fitted slopes, a term of relative order p / n, and few residuals make it noisy and
# tied to the error itself. Measured over 5,000 placements of every window of gzip under TDES
# without speculation (examples/sampled_population.rs): at 8 windows the estimate's spread was
# 0.57% of the cycles while the mean standard error was 0.32%, and the 99.99% interval missed
# 3.2% of the time (99.7%: 10%); at 16 windows it missed 1.0%; at 32, 0.02% (99.7%: 0.14%;
# under TDES with speculation 0.03% and 0.83%: 32 is where it nears its coverage, not a margin).
# The plain expansion estimator (the windows' mean stall, no slopes) kept its 99.99% interval at 8
# windows (no miss; 99.7%: 0.02%) with a spread of 0.69%: so below this many windows it is used.
# (Misses with the Cornish-Fisher t quantile of the time.)
REGRESSION_MIN = 32


def sampling_options(cfg: Any, first: int = 0, last: int | None = None,
                     interval: int | None = None) -> dict[str, Any]:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    # Unset: every core this process may run on (a sweep sets a share per point).
    threads = cfg.threads or cores
    return {"window": cfg.sample_window, "warmup": cfg.sample_warmup, "interval": interval or cfg.sample_interval,
            "threads": threads, "first": first, "last": last, "seed": cfg.seed}


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t at `df` degrees of freedom: the finite series of Abramowitz and
    Stegun 26.7.3-4 in theta = atan(t / sqrt(df)) (exact for integer df)."""
    th = math.atan(t / math.sqrt(df))
    c2, term, total = math.cos(th) ** 2, 1.0, 1.0
    if df % 2 == 0:
        for k in range(2, df - 1, 2):  # terms (1.3...(k-1)) / (2.4...k) cos^k
            term *= (k - 1) / k * c2
            total += term
        return math.sin(th) * total
    if df == 1:
        return 2 * th / math.pi
    for k in range(3, df - 1, 2):  # terms (2.4...(k-1)) / (3.5...k) cos^(k-1)
        term *= (k - 1) / k * c2
        total += term
    return 2 / math.pi * (th + math.sin(th) * math.cos(th) * total)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (p > 0.5). Up to 200 degrees of freedom by bisection on the exact
    distribution; above, the Cornish-Fisher expansion about the normal quantile (Abramowitz and
    Stegun 26.7.5), which is low in the far tail at few degrees of freedom (at the 0.99995 quantile
    6.1% at 5, 2.0% at 7, 0.6% at 10) and within 0.1% from 30."""
    z = NormalDist().inv_cdf(p)
    v = float(df)
    cf = (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
          + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3))
    if df > 200:
        return cf
    lo, hi, goal = 0.0, max(cf, z) * 2 + 1, 2 * p - 1
    while _t_central(hi, df) < goal:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_central(mid, df) < goal else (lo, mid)
    return (lo + hi) / 2


def estimate(windows: list[dict], totals: dict[str, int], measured: int, confidence: float,
             cpi: float) -> dict[str, float]:
    """IPC over the timed records, its interval at `confidence`, and the estimated cycles.
    `measured`: measured records per window; `cpi`: the core's dispatch cycles per instruction."""
    n_w = len(windows)
    ins = np.array([w["results"]["insts"] for w in windows], float)
    stall = np.array([w["results"]["cycles"] for w in windows], float) - cpi * ins
    # Below REGRESSION_MIN windows the fitted slopes are too uncertain for the regression's
    # variance (which treats them as known): the plain expansion estimator instead (see above).
    aux = AUXILIARY if n_w >= REGRESSION_MIN else ()
    x = np.array([[w["results"][k] for k in aux] for w in windows], float).reshape(n_w, len(aux))
    a = np.column_stack([np.ones(n_w), x])
    b, _, rank, _ = np.linalg.lstsq(a, stall, rcond=None)
    blocks = totals["records"] / measured
    x_pop = np.array([totals[k] for k in aux], float) / blocks
    i_block = totals["insts"] / blocks
    c_block = cpi * i_block + float(stall.mean() + (x_pop - x.mean(axis=0)) @ b[1:])
    df = max(n_w - int(rank), 1)
    resid = stall - a @ b
    f = min(n_w / blocks, 1.0)
    # One window per unit, in the units' order: the variance of a stratified sample of one per
    # stratum, estimated from successive differences of the residuals (Cochran, Sampling
    # Techniques, 8.11), which leaves out the trend between units that the strata already remove.
    # Against the spread of the errors over 10 seeds on each suite trace (AES-256, whole trace),
    # treating the windows as a simple random sample overstated the error 1.0-3.0x; these
    # differences 1.0-1.9x (each spread is itself uncertain by about a quarter).
    d = np.diff(resid)
    se = math.sqrt(float(d @ d) / (2 * max(n_w - 1, 1)) / n_w * (1 - f)) * math.sqrt((n_w - 1) / df)
    t = t_quantile(0.5 + confidence / 2, df)
    lo_c, hi_c = c_block - t * se, c_block + t * se
    return {"ipc": i_block / c_block, "ipc_low": i_block / hi_c, "ipc_high": i_block / lo_c if lo_c > 0 else math.inf,
            "cycles": c_block * blocks, "ipc_rel_se": se / c_block}


def half_width(est: dict[str, float]) -> float:
    """The interval's larger half-width, relative to the estimate."""
    return max(est["ipc_high"] / est["ipc"] - 1, 1 - est["ipc_low"] / est["ipc"])


def tuned_interval(est: dict[str, float], interval: int, window: int, target: float) -> int | None:
    """SMARTS's tuned sample size: the interval between windows that brings the interval's
    half-width to `target` (the variance goes as the number of windows, the finite-population
    correction aside), or None when the first windows already meet it. Never shorter than a
    window."""
    hw = half_width(est)
    if target <= 0 or hw <= target:
        return None
    return max(window, int(interval * (target / hw) ** 2 * 0.9))


def combine(out: dict[str, Any], cfg: Any, warmup_records: int) -> dict[str, Any]:
    """The result of a sampled run: the estimate, and every count of the measured records expanded
    to the timed region (instructions, fills and writebacks are the pass's exact totals)."""
    windows, totals = sorted(out["windows"], key=lambda w: w["index"]), out["totals"]
    measured = cfg.sample_window - cfg.sample_warmup
    est = estimate(windows, totals, measured, cfg.sample_confidence, 1.0 / min(cfg.width, cfg.ilp))
    scale = totals["records"] / (len(windows) * measured)
    r: dict[str, Any] = {}
    for k, v in windows[0]["results"].items():
        if k in _NOT_SUMMED:
            continue
        s = sum(w["results"][k] for w in windows)
        r[k] = s * scale if isinstance(v, float) else round(s * scale)
    load_fills = sum(w["results"]["load_fills"] for w in windows)
    for k in ("mean_memory_cycles", "mean_crypto_cycles"):  # sums in each window
        r[k] = sum(w["results"][k] for w in windows) / max(load_fills, 1)
    r.update({k: totals[k] for k in EXACT})
    r.update(est)
    r["dram_unloaded"] = windows[0]["results"]["dram_unloaded"]
    r["warmup_records"] = warmup_records
    r["sample_windows"] = len(windows)
    r["sampled_records"] = len(windows) * cfg.sample_window
    return r


def _call(fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        raise ConfigError(f"memcrypt.run: {e}") from None


def _time_part(run_json: str) -> str:
    """One Dask task: a share of the windows (module level, so that workers can import it)."""
    return _native.memcrypt.sample_windows(run_json)


def run_windows(run: dict[str, Any], cfg: Any, interval: int | None = None) -> dict[str, Any]:
    """The windows and totals of a sampled run, timed locally or on `cfg.scheduler`'s cluster, one
    window per `interval` records (default: the config's)."""
    if not cfg.scheduler:
        run = {**run, "sampling": sampling_options(cfg, interval=interval)}
        return json.loads(_call(_native.memcrypt.sample_windows, json.dumps(run)))
    from veil.core.sweep import connect

    plan = sampling_options(cfg, interval=interval)
    n = len(_call(_native.memcrypt.sample_plan, run["max_records"], json.dumps(plan)))
    client, own = connect(cfg.scheduler)
    try:
        workers = max(len(client.scheduler_info().get("workers", {})), 1)
        parts = min(n, 2 * workers)
        bounds = [round(i * n / parts) for i in range(parts + 1)]
        futures = []
        for i in range(parts):
            # A task times its windows on one core; the last one reads to the region's end (totals).
            opts = {**sampling_options(cfg, bounds[i], bounds[i + 1], interval), "threads": 1}
            futures.append(client.submit(_time_part, json.dumps({**run, "sampling": opts}), pure=False))
        try:
            outs = [json.loads(s) for s in client.gather(futures)]
        except ValueError as e:
            raise ConfigError(f"memcrypt.run: {e}") from None
    finally:
        if own:
            client.close()
    return {"windows": [w for o in outs for w in o["windows"]], "totals": outs[-1]["totals"]}


# What each part of a run costs, in timed steps of the model (CPU time over that of a timed step,
# AES-256 direct with speculation and re-ordering), fitted by least squares to the process CPU of
# full runs and of sampled passes at three window spacings from the trace file (decoding
# included), 28 Nov 2026 at load average ~14 on 2 cores: decoding 0.27-0.35 per record,
# functional warm-up 0.09-0.30 per record, and 420-1,400 per window (forking the warmed machine,
# handing the window to a thread, its detailed warm-up) on the runs stream, mcf, bzip2 and
# python (benches/memcrypt.py reports the measured cost of a sampled run against the full one).
# The largest of each is kept, so that the rule errs towards the full run. With them a pass at the
# default spacing (a 400-record window per 1,500) costs 1.85 steps per record against the full
# run's 1.35: it falls back to the full run; one window per 4,000 records costs 1.10.
COST_DECODE = 0.35
COST_FUNCTIONAL = 0.30
COST_FORK = 1400.0


def full_cost(records: int, warmup: int) -> float:
    """A full run's CPU cost in timed steps: every record decoded, warm-up trained, the rest timed."""
    return (records + warmup) * COST_DECODE + warmup * COST_FUNCTIONAL + records


def pass_cost(records: int, warmup: int, windows: int, window: int) -> float:
    """One sampled pass's CPU cost in timed steps: every record decoded and functionally warmed
    (the pass reads the whole region), and each window forked and timed in detail."""
    return (records + warmup) * (COST_DECODE + COST_FUNCTIONAL) + windows * (window + COST_FORK)


def window_count(records: int, cfg: Any, interval: int) -> int:
    """Windows a pass at one window per `interval` records times (the native plan, exactly)."""
    plan = sampling_options(cfg, interval=interval)
    return len(_call(_native.memcrypt.sample_plan, records, json.dumps(plan)))


def second_pass_interval(tuned: int, interval: int, budget: float, records: int, warmup: int,
                         cfg: Any) -> int | None:
    """The interval of a second pass that costs at most `budget` timed steps: `tuned` if it fits,
    else the shortest interval between `tuned` and `interval` that does (windows grow as the
    interval shrinks: bisection on the exact window count), else None (no second pass)."""
    def cost(i: int) -> float:
        return pass_cost(records, warmup, window_count(records, cfg, i), cfg.sample_window)

    if cost(tuned) <= budget:
        return tuned
    lo, hi = tuned, interval - 1  # cost(lo) > budget
    if hi <= lo or cost(hi) > budget:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cost(mid) <= budget:
            hi = mid
        else:
            lo = mid
    return hi


def simulate_full(run: dict[str, Any]) -> dict[str, Any]:
    return json.loads(_call(_native.memcrypt.simulate, json.dumps(run)))


def simulate(run: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """`memcrypt.run`'s result for a sampled run (same keys as a full run, plus the interval).
    When the first windows leave the interval wider than `sample_target`, a second pass times
    windows closer together (SMARTS's tuned sample) and its estimate is the result.

    A sampled run never costs more CPU than the full run it replaces (by the per-record costs
    above, decided from record and window counts, never from timing): when even its first pass
    would cost as much, the full run is made instead (`sampling_used` says so); a second pass is
    sized to what the full run's cost leaves, or skipped (`sample_target_met` False)."""
    warm = run["config"]["warmup_records"]
    records, interval = run["max_records"], cfg.sample_interval
    full = full_cost(records, warm)
    first = pass_cost(records, warm, window_count(records, cfg, interval), cfg.sample_window)
    if first >= full:
        r = simulate_full(run)
        r.update(ipc_low=r["ipc"], ipc_high=r["ipc"], ipc_rel_se=0.0, sample_windows=0, sampled_records=records,
                 sample_interval_used=0)
        r.update(sampling_used="full (a sampled pass would cost as much)", sample_cost=first, full_cost=full,
                 sample_target_met=True)
        return r
    r = combine(run_windows(run, cfg), cfg, warm)
    detailed, cost = r["sampled_records"], first
    tuned = tuned_interval(r, interval, cfg.sample_window, cfg.sample_target)
    if tuned is not None and tuned < interval:
        second = second_pass_interval(tuned, interval, full - first, records, warm, cfg)
        if second is not None:
            interval = second
            r = combine(run_windows(run, cfg, interval), cfg, warm)
            detailed += r["sampled_records"]
            cost += pass_cost(records, warm, r["sample_windows"], cfg.sample_window)
    met = tuned is None or half_width(r) <= cfg.sample_target
    r["sampled_records"] = detailed
    r["sample_interval_used"] = interval
    r.update(sampling_used="sampled", sample_cost=cost, full_cost=full, sample_target_met=met)
    return r
