"""Runs experiments: validated config in, stored record out; cached points are read back."""

from __future__ import annotations

import time
from typing import Any

from veil.core.config import ExperimentConfig, config_hash, validate
from veil.core.errors import VeilError
from veil.core.registry import REGISTRY
from veil.core.store import Record, ResultStore, now_iso


def veil_version() -> str:
    import veil

    return veil.__version__


def compute(experiment: str, config: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Runs one point from plain data. Top-level so process pools and Dask workers can call it."""
    cfg = validate(experiment, config)
    exp = REGISTRY.experiment(experiment)
    t0 = time.perf_counter()
    result = exp.func(cfg)
    elapsed = time.perf_counter() - t0
    if not isinstance(result, dict):
        raise VeilError(f"experiment {experiment} returned {type(result).__name__}, expected a dict")
    return result, elapsed


def make_record(experiment: str, cfg: ExperimentConfig, result: dict[str, Any], elapsed: float) -> Record:
    return Record(
        experiment=experiment,
        config_hash=config_hash(experiment, cfg),
        veil_version=veil_version(),
        seed=cfg.seed,
        config=cfg.model_dump(mode="json"),
        result=result,
        elapsed_s=elapsed,
        created_at=now_iso(),
    )


def run_experiment(experiment: str, cfg: ExperimentConfig, store: ResultStore | None,
                   force: bool = False) -> tuple[Record, bool]:
    """Returns (record, was_cached)."""
    h = config_hash(experiment, cfg)
    if store is not None and not force:
        hit = store.get(experiment, h, veil_version())
        if hit is not None:
            return hit, True
    result, elapsed = compute(experiment, cfg.model_dump(mode="json"))
    rec = make_record(experiment, cfg, result, elapsed)
    if store is not None:
        store.put(rec)
    return rec, False
