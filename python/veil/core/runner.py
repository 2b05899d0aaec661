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
    from veil._native import __version__  # not `import veil`: its lazy attributes import the API, which imports this

    return f"{__version__}+{source_fingerprint(Path(__file__).parent.parent)}"


def compute(experiment: str, config: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Runs one point from plain data. Top-level so process pools and Dask workers can call it."""
    result, elapsed, _ = compute_timed(experiment, config)
    return result, elapsed


def compute_timed(experiment: str, config: dict[str, Any]) -> tuple[dict[str, Any], float, float]:
    """compute(), plus the CPU seconds of the process while the point ran (all its threads: on a
    pool or Dask worker that runs one point at a time, the point's own CPU time, which a loaded
    machine does not inflate as it does the wall time; timing.py projects from it)."""
    cfg = validate(experiment, config)
    exp = REGISTRY.experiment(experiment)
    c0, t0 = time.process_time(), time.perf_counter()
    result = exp.func(cfg)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not isinstance(result, dict):
        raise VeilError(f"experiment {experiment} returned {type(result).__name__}, expected a dict")
    return result, elapsed, cpu


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


def progress_wanted() -> bool:
    """Progress lines go to a terminal only; VEIL_PROGRESS=1 draws them into a pipe or log too,
    VEIL_PROGRESS=0 never draws them (docs/first-hour.md)."""
    env = os.environ.get("VEIL_PROGRESS")
    if env in ("0", "1"):
        return env == "1"
    return sys.stderr.isatty()


_py_progress: list = [0, 0, ""]  # (done, total, unit) of a long loop in Python (see report_progress)


def report_progress(done: int, total: int, unit: str) -> None:
    """A long loop written in Python (he's encrypted inferences) reports (done, total) here; the
    progress line shows it like a native simulator's. Cheap: call it every iteration."""
    _py_progress[:] = [done, total, unit]


def _poll_progress(native_poll) -> tuple[int, int, str]:
    if _py_progress[1] > 0:
        return _py_progress[0], _py_progress[1], _py_progress[2]
    return native_poll() if native_poll else (0, 0, "")


@contextlib.contextmanager
def progress_line(enabled: bool, label: str):
    """While a long native call runs, a progress bar with an ETA on a terminal.

    Simulators report (done, total) through `veil_core::progress`; this polls it from a thread
    (the native call runs without the GIL). Nothing is drawn into logs, or for a call that
    reports no total.
    """
    if not enabled or not progress_wanted():
        yield
        return
    try:
        from veil import _native
        poll = _native.progress
        _native.progress_reset()
    except (ImportError, AttributeError):
        poll = None
    report_progress(0, 0, "")
    from tqdm import tqdm

    stop = threading.Event()
    t0 = time.monotonic()

    def draw() -> None:
        bar = None
        while not stop.wait(0.5):
            done, total, unit = _poll_progress(poll)
            if total <= 0:
                # Nothing counted yet (a setup phase, or a model that reports no total): after
                # 2 s, the elapsed time at least, so a long run never sits silent.
                waited = time.monotonic() - t0
                if bar is None and waited > 2.0:
                    bar = tqdm(total=None, bar_format="{desc}", file=sys.stderr, leave=False, dynamic_ncols=True)
                if bar is not None and bar.total is None:
                    bar.set_description_str(f"{label}: {waited:.0f} s (no total known yet)")
                continue
            if bar is not None and bar.total != total:  # a new simulation of the run began, or the first
                bar.close()
                bar = None
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
        report_progress(0, 0, "")


DAY_S = 86400.0


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:,.0f} days"
    return f"{seconds / 3600:,.0f} hours"


def check_cost(experiment: str, cfg: ExperimentConfig, where: str = "") -> None:
    """Refuses a point whose run time, estimated from its config alone, is past a day: a typo
    such as `requests_per_cpu = 1000000000000` would otherwise start a run of years in silence."""
    exp = REGISTRY.experiment(experiment)
    if exp.cost is None:
        return
    seconds, how = exp.cost(cfg)
    if seconds > DAY_S:
        from veil.core.errors import ConfigError

        raise ConfigError(f"{where or experiment}: this point would run for at least {_duration(seconds)} "
                          f"({how}), more than a day; give --force (force=True) to run it anyway")


def run_experiment(experiment: str, cfg: ExperimentConfig, store: ResultStore | None,
                   force: bool = False, progress: bool = False) -> tuple[Record, bool]:
    """Returns (record, was_cached)."""
    h = config_hash(experiment, cfg)
    if store is not None and not force:
        hit = store.get(experiment, h, veil_version())
        if hit is not None:
            return hit, True
    if not force:
        check_cost(experiment, cfg)
    with progress_line(progress, experiment):
        result, elapsed, cpu = compute_timed(experiment, cfg.model_dump(mode="json"))
    rec = make_record(experiment, cfg, result, elapsed)
    if store is not None:
        store.put(rec)
    LAST_CPU_S[0] = cpu
    return rec, False


LAST_CPU_S = [0.0]  # CPU seconds of run_experiment's last computed point (ReproduceContext.run reads it)
