"""Sampled simulation of `memcrypt.run` (`sampling = "sampled"`): windows of the timed records are
timed in parallel from functionally warmed state (crates/veil-memcrypt/src/sampled.rs) and
combined here into an IPC estimate with a confidence interval.

**Estimator.** The functional pass that warms the windows also counts, over every timed record,
the instructions and the fills and writebacks by kind. Cycles are estimated with the regression
estimator of survey sampling: per window, the measured cycles are regressed on those four counts
(least squares with an intercept), and the regression is evaluated at the whole region's counts
per window-length block. Cycles follow misses and instructions closely, so this removes most of
the spread between windows that a plain ratio (window instructions / window cycles) keeps; on
the suite traces the plain ratio was off by up to 2.4% where this estimate stays within 0.3%
(docs/memcrypt.md, Speed). Its variance is the residual variance over the windows, with the
finite-population correction of sampling a share of the blocks; the interval uses Student's t at
the residual degrees of freedom and is mapped to IPC = instructions / cycles.

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

# Counts known for every timed record (the regression's auxiliary variables).
AUXILIARY = ("insts", "load_fills", "store_fills", "writebacks")
# Results that are not counts over the measured records (kept from one window, or derived).
_NOT_SUMMED = {"ipc", "dram_unloaded", "warmup_records"}


def sampling_options(cfg: Any, first: int = 0, last: int | None = None) -> dict[str, Any]:
    threads = cfg.threads or os.cpu_count() or 1
    return {"window": cfg.sample_window, "warmup": cfg.sample_warmup, "interval": cfg.sample_interval,
            "threads": threads, "first": first, "last": last}


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile by the Cornish-Fisher expansion about the normal one (Abramowitz and
    Stegun 26.7.5; within 0.5% of the exact value from 5 degrees of freedom)."""
    z = NormalDist().inv_cdf(p)
    v = float(df)
    return (z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3))


def estimate(windows: list[dict], totals: dict[str, int], measured: int, confidence: float) -> dict[str, float]:
    """IPC over the timed records, its interval at `confidence`, and the estimated cycles.
    `measured`: measured records per window."""
    n_w = len(windows)
    c = np.array([w["results"]["cycles"] for w in windows], float)
    x = np.array([[w["results"][k] for k in AUXILIARY] for w in windows], float)
    a = np.column_stack([np.ones(n_w), x])
    b, _, rank, _ = np.linalg.lstsq(a, c, rcond=None)
    blocks = totals["records"] / measured
    x_pop = np.array([totals[k] for k in AUXILIARY], float) / blocks
    c_block = float(c.mean() + (x_pop - x.mean(axis=0)) @ b[1:])
    df = max(n_w - int(rank), 1)
    resid = c - a @ b
    f = min(n_w / blocks, 1.0)
    se = math.sqrt(float(resid @ resid) / df / n_w * (1 - f))
    t = t_quantile(0.5 + confidence / 2, df)
    i_block = totals["insts"] / blocks
    lo_c, hi_c = c_block - t * se, c_block + t * se
    return {"ipc": i_block / c_block, "ipc_low": i_block / hi_c, "ipc_high": i_block / lo_c if lo_c > 0 else math.inf,
            "cycles": c_block * blocks, "ipc_rel_se": se / c_block}


def combine(out: dict[str, Any], cfg: Any, warmup_records: int) -> dict[str, Any]:
    """The result of a sampled run: the estimate, and every count of the measured records expanded
    to the timed region (the four auxiliary counts and the instructions are exact)."""
    windows, totals = out["windows"], out["totals"]
    measured = cfg.sample_window - cfg.sample_warmup
    est = estimate(windows, totals, measured, cfg.sample_confidence)
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
    r.update({k: totals[k] for k in (*AUXILIARY, "records")})
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


def run_windows(run: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """The windows and totals of a sampled run, timed locally or on `cfg.scheduler`'s cluster."""
    if not cfg.scheduler:
        run = {**run, "sampling": sampling_options(cfg)}
        return json.loads(_call(_native.memcrypt.sample_windows, json.dumps(run)))
    from veil.core.sweep import connect

    n = len(_call(_native.memcrypt.sample_plan, run["max_records"], json.dumps(sampling_options(cfg))))
    client, own = connect(cfg.scheduler)
    try:
        workers = max(len(client.scheduler_info().get("workers", {})), 1)
        parts = min(n, 2 * workers)
        bounds = [round(i * n / parts) for i in range(parts + 1)]
        futures = []
        for i in range(parts):
            # A task times its windows on one core; the last one reads to the region's end (totals).
            opts = {**sampling_options(cfg, bounds[i], bounds[i + 1]), "threads": 1}
            futures.append(client.submit(_time_part, json.dumps({**run, "sampling": opts}), pure=False))
        try:
            outs = [json.loads(s) for s in client.gather(futures)]
        except ValueError as e:
            raise ConfigError(f"memcrypt.run: {e}") from None
    finally:
        if own:
            client.close()
    return {"windows": [w for o in outs for w in o["windows"]], "totals": outs[-1]["totals"]}


def simulate(run: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """`memcrypt.run`'s result for a sampled run (same keys as a full run, plus the interval)."""
    out = run_windows(run, cfg)
    return combine(out, cfg, run["config"]["warmup_records"])
