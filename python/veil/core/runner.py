"""Runs experiments: validated config in, stored record out; cached points are read back."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from veil.core.config import ExperimentConfig, config_hash, validate
from veil.core.errors import VeilError
from veil.core.registry import REGISTRY
from veil.core.store import Record, ResultStore, now_iso


def source_fingerprint(root: Path) -> str:
    """Hash of every Python source (contents) and native module (size and build time) under `root`."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".so", ".pyd") and p.is_file()):
        h.update(str(path.relative_to(root)).encode())
        if path.suffix == ".py":
            h.update(path.read_bytes())
        else:  # tens of MB: its size and build time identify a build without reading it
            st = path.stat()
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:10]


@functools.cache
def veil_version() -> str:
    """The version results are stored under: release version + fingerprint of the code.

    A stored point is reused only by the exact code that computed it, so editing a model
    during development never serves results of the old code.
    """
    import veil

    return f"{veil.__version__}+{source_fingerprint(Path(veil.__file__).parent)}"


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


@contextlib.contextmanager
def progress_line(enabled: bool, label: str):
    """While a long native call runs, a progress bar with an ETA on a terminal.

    Simulators report (done, total) through `veil_core::progress`; this polls it from a thread
    (the native call runs without the GIL). Nothing is drawn into logs, or for a call that
    reports no total.
    """
    if not enabled or not (sys.stderr.isatty() or os.environ.get("VEIL_PROGRESS") == "1"):
        yield
        return
    try:
        from veil import _native
        poll = _native.progress
        _native.progress_reset()
    except (ImportError, AttributeError):
        yield
        return
    from tqdm import tqdm

    stop = threading.Event()

    def draw() -> None:
        bar = None
        while not stop.wait(0.5):
            done, total, unit = poll()
            if total <= 0:
                continue
            if bar is None:
                bar = tqdm(total=total, initial=min(done, total), desc=label, unit=f" {unit}", unit_scale=True,
                           file=sys.stderr, leave=False, dynamic_ncols=True)
            bar.n = min(done, total)
            bar.refresh()
        if bar is not None:
            bar.close()

    t = threading.Thread(target=draw, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(2)


def run_experiment(experiment: str, cfg: ExperimentConfig, store: ResultStore | None,
                   force: bool = False, progress: bool = False) -> tuple[Record, bool]:
    """Returns (record, was_cached)."""
    h = config_hash(experiment, cfg)
    if store is not None and not force:
        hit = store.get(experiment, h, veil_version())
        if hit is not None:
            return hit, True
    with progress_line(progress, experiment):
        result, elapsed = compute(experiment, cfg.model_dump(mode="json"))
    rec = make_record(experiment, cfg, result, elapsed)
    if store is not None:
        store.put(rec)
    return rec, False
