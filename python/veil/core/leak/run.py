"""`veil leak CONFIG`: one config shape for every system's adversary, runs spread over local
processes or a Dask cluster like sweeps, the verdict stored keyed by config hash and version.

CONFIG (TOML): system, observer, setting, a, b, repeats, seed, size, alpha (and power,
power_trials); `key=value` overrides as for `veil run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from veil.core.config import ExperimentConfig, apply_overrides, format_validation_error, read_toml
from veil.core.errors import ConfigError

__all__ = ["LeakConfig", "load", "execute", "EXPERIMENT"]

#: Experiment name a stored verdict is keyed under (with the config hash and Veil's version).
EXPERIMENT = "leak"


class LeakConfig(ExperimentConfig):
    """One adversary, one setting, two secrets."""

    system: str = Field(..., description="the system whose attacker watches (oram, memnet, ...)")
    observer: str = Field(..., description="the observer (attacker) of that system")
    setting: str = Field(..., description="the defence under test (or a negative control)")
    a: str = Field(..., description="secret pattern A")
    b: str = Field(..., description="secret pattern B")
    repeats: int = Field(14, ge=2, le=64, description="seed pairs: run i of A and run i of B compared window by window")
    size: int = Field(0, ge=0, description="work per run (requests, records); 0 = the observer's default")
    alpha: float = Field(1e-3, gt=0, lt=0.5, description="family-wise significance level")
    power: float = Field(0.95, gt=0.5, lt=1, description="power at which the detectable effect is measured")
    power_trials: int = Field(20, ge=5, le=1000, description="plantings per effect size when measuring power")


def load(path: str | Path | None, overrides: list[str] | None = None, data: dict[str, Any] | None = None) -> LeakConfig:
    """The validated config; unknown system, observer, setting or pattern, identical patterns and
    too few seed pairs for alpha are one-line ConfigErrors, found before any run."""
    from .analyse import find_observer, min_repeats

    raw = read_toml(path) if path is not None else dict(data or {})
    raw = apply_overrides(raw, overrides or [])
    where = str(path) if path is not None else "leak"
    try:
        cfg = LeakConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, LeakConfig, where)) from None
    obs = find_observer(cfg.system, cfg.observer)
    obs.check(cfg.setting, cfg.a, cfg.b)
    if cfg.size and cfg.size < obs.min_size:
        raise ConfigError(f"size: {cfg.size} is too small for {cfg.system}.{cfg.observer}; at least {obs.min_size}")
    if cfg.repeats < min_repeats(cfg.alpha):
        raise ConfigError(f"repeats: {cfg.repeats} seed pair(s); at alpha {cfg.alpha:g} the exact sign-flip test "
                          f"needs at least {min_repeats(cfg.alpha)} (p >= 2^-(pairs - 1), Holm over 3 families)")
    return cfg


def _runner(jobs: int, scheduler: Any):
    """Maps observe_one over tasks: a Dask cluster, local processes, or this process; each
    finished run is counted on the progress line (`veil leak` on a terminal: runs done of all)."""
    from veil.core.runner import report_progress

    from .analyse import observe_one

    def counted(results, n):
        out = []
        for r in results:
            out.append(r)
            report_progress(len(out), n, "runs")
        return out

    def dask(tasks):
        from distributed import as_completed

        from veil.core.sweep import connect

        client, own = connect(scheduler) if isinstance(scheduler, str) else (scheduler, False)
        try:
            futs = [client.submit(observe_one, *t, pure=False) for t in tasks]
            counted(as_completed(futs), len(futs))
            return [f.result() for f in futs]
        finally:
            if own:
                client.close()

    def pool(tasks):
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        # spawn, as sweeps do: the parent may hold threads that fork would copy mid-lock
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as ex:
            return counted(ex.map(observe_one, *zip(*tasks)), len(tasks))

    if scheduler:
        return dask
    return pool if jobs > 1 else (lambda tasks: counted((observe_one(*t) for t in tasks), len(tasks)))


def execute(cfg: LeakConfig, store=None, *, jobs: int = 1, scheduler: Any = None,
            force: bool = False, progress: bool = False) -> dict[str, Any]:
    """Runs and analyses `cfg` (or reads the stored verdict back); returns the report.
    `progress`: a progress line on a terminal, runs done of 2 x repeats (quiet in pipes)."""
    from veil.core.config import config_hash
    from veil.core.runner import make_record, progress_line, veil_version

    from .analyse import analyse, find_observer

    h = config_hash(EXPERIMENT, cfg)
    if store is not None and not force:
        hit = store.get(EXPERIMENT, h, veil_version())
        if hit is not None:
            return hit.result
    obs = find_observer(cfg.system, cfg.observer)
    import time

    t0 = time.perf_counter()
    with progress_line(progress, f"leak {cfg.system}.{cfg.observer} {cfg.setting}"):
        report = analyse(obs, cfg.setting, cfg.a, cfg.b, cfg.repeats, cfg.seed, cfg.size or obs.default_size,
                         alpha=cfg.alpha, power_target=cfg.power, power_trials=cfg.power_trials,
                         runner=_runner(jobs, scheduler))
    report = _plain(report)
    if store is not None:
        store.put(make_record(EXPERIMENT, cfg, report, time.perf_counter() - t0))
    return report


def _plain(x):
    """JSON-ready: numpy scalars to Python numbers."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def lines(report: dict[str, Any]) -> list[str]:
    """The report in words, one family a line."""
    kind = ("negative control (must leak)" if report["negative_control"] else
            "defence" if report["defence"] else "setting")
    out = [f"{report['system']}.{report['observer']} {report['setting']} ({kind}): {report['a']} vs {report['b']}, "
           f"{report['repeats']} seed pairs, size {report['size']}, seed {report['seed']}"]
    for fam, f in report["families"].items():
        c = f["classifier"]
        out.append(f"  {fam}: {f['statement']}; classifier {c['accuracy']:.2f} "
                   f"[{c['ci95'][0]:.2f}, {c['ci95'][1]:.2f}]")
    cost = report.get("cost_a") or {}
    if cost:
        out.append("  cost (pattern A, per run): " + ", ".join(f"{k} {v:.4g}" for k, v in cost.items()))
    return out
