"""Parameter sweeps: cartesian `[grid]` crossed with zipped `[zip]` lists over a `[base]` config.

Points run on a local process pool by default, or on a Dask distributed cluster. Workers only
compute; this process validates every point up front and writes every result, so a remote
cluster never needs the store and a bad point fails before any work starts.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import sys
import types
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import context as mp_context
from pathlib import Path
from typing import Any, Callable, Iterable

from veil.core.config import (ExperimentConfig, apply_overrides, config_hash, read_toml, resolve_input_paths,
                              set_dotted, split_experiment, validate)
from veil.core.errors import ConfigError, VeilError
from veil.core.registry import REGISTRY
from veil.core.runner import check_cost, compute_timed, make_record, veil_version
from veil.core.store import Record, ResultStore

SWEEP_KEYS = {"experiment", "base", "grid", "zip", "name"}


@dataclass
class SweepSpec:
    experiment: str
    configs: list[ExperimentConfig]
    name: str = ""


@dataclass
class SweepOutcome:
    records: list[Record] = field(default_factory=list)
    computed: int = 0
    cached: int = 0
    failed: list[tuple[int, str]] = field(default_factory=list)
    warned: int = 0  # points whose result carries warnings (a setting not honoured, saturation)
    cpu_s: dict[int, float] = field(default_factory=dict)  # point index -> CPU seconds, computed points only
    repeats: set[int] = field(default_factory=set)  # indices of points equal to an earlier one (run once)

    def summary(self) -> str:
        total = self.computed + self.cached + len(self.failed)
        text = (f"{total} points: {self.computed} computed, {self.cached} cached (skipped), "
                f"{len(self.failed)} failed")
        return text + (f", {self.warned} with warnings" if self.warned else "")


def expand(grid: dict[str, list], zipped: dict[str, list], where: str) -> list[dict[str, Any]]:
    for table, name in ((grid, "grid"), (zipped, "zip")):
        for k, v in table.items():
            if not isinstance(v, list) or not v:
                raise ConfigError(f"{where}: {name}.{k}: expected a non-empty list of values")
    lengths = {k: len(v) for k, v in zipped.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"{where}: zip: lists must have equal lengths (got {lengths})")
    zip_rows = [dict(zip(zipped, vals)) for vals in zip(*zipped.values())] if zipped else [{}]
    grid_rows = [dict(zip(grid, vals)) for vals in itertools.product(*grid.values())] if grid else [{}]
    return [{**g, **z} for g in grid_rows for z in zip_rows]


def spec_from_data(data: dict[str, Any], where: str, progress: bool = False) -> SweepSpec:
    unknown = set(data) - SWEEP_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise ConfigError(f"{where}: {key}: unknown key; allowed: {', '.join(sorted(SWEEP_KEYS))} (a config key "
                          f"of every point goes under base: `base.{key}=...` on the command line)")
    for t in ("base", "grid", "zip"):
        if not isinstance(data.get(t, {}), dict):
            raise ConfigError(f"{where}: {t}: expected a table")
    experiment, _ = split_experiment({"experiment": data.get("experiment")}, where)
    base = data.get("base", {})
    rows = expand(_flat(data.get("grid", {})), _flat(data.get("zip", {})), where)
    configs = []
    # Millions of points take minutes to validate: say so on a terminal while it happens.
    bar = _progress(len(rows) if len(rows) >= 10_000 else 0, "validating", progress)
    try:
        for i, row in enumerate(rows):
            label = ", ".join(f"{k}={v}" for k, v in row.items())
            configs.append(config_for_row(experiment, base, row, f"{where}: point {i} ({label})" if label else where))
            if i % 1000 == 999:
                bar.update(1000)
    finally:
        bar.close()
    _refuse_duplicates(experiment, configs, rows, where)
    return SweepSpec(experiment, configs, str(data.get("name", Path(where).stem)))


def _refuse_duplicates(experiment: str, configs: list[ExperimentConfig], rows: list[dict[str, Any]],
                       where: str) -> None:
    """Two points with one config would run once and be counted twice: a repeated value in a
    list, or a grid key that the zip also sets."""
    seen: dict[str, int] = {}
    for i, cfg in enumerate(configs):
        j = seen.setdefault(config_hash(experiment, cfg), i)
        if j != i:
            label = ", ".join(f"{k}={v}" for k, v in rows[i].items()) or "(no keys)"
            raise ConfigError(f"{where}: point {i} ({label}) is the same config as point {j}: "
                              f"remove the repeated value")


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`[grid.router] vcs = [..]` and `"router.vcs" = [..]` both mean the dotted key router.vcs."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            out.update(_flat(v, key))
        else:
            out[key] = v
    return out


def load_spec(path: str | Path, overrides: list[str] | None = None, progress: bool = False) -> SweepSpec:
    data = read_toml(path)
    name = data.get("experiment")
    if not any(t in data for t in ("base", "grid", "zip")) and set(data) - SWEEP_KEYS:
        raise ConfigError(f"{path}: a run config (fields at top level, no [base]/[grid]/[zip] tables), "
                          f"not a sweep file; use `veil run {path}`")
    if isinstance(name, str) and REGISTRY.has_experiment(name):
        model, folder = REGISTRY.experiments[name].config, Path(path).resolve().parent
        for t in ("base", "grid", "zip"):
            if isinstance(data.get(t), dict):
                table = data[t] if t == "base" else _flat(data[t])
                data[t] = resolve_input_paths(model, table, folder)
    data = apply_overrides(data, overrides or [])
    return spec_from_data(data, str(path), progress)


def run_points(experiment: str, configs: list[ExperimentConfig], store: ResultStore | None, *,
               jobs: int = 1, scheduler: str | None = None, force: bool = False,
               progress: bool = True, label: str = "sweep") -> SweepOutcome:
    """Runs configs (cached ones are read back); results come back in input order."""
    out = SweepOutcome()
    version = veil_version()
    found: dict[int, Record] = {}
    todo: list[int] = []
    seen: dict[str, int] = {}
    dup: dict[int, int] = {}
    for i, cfg in enumerate(configs):
        h = config_hash(experiment, cfg)
        if h in seen:
            dup[i] = seen[h]
            continue
        seen[h] = i
        hit = None if (force or store is None) else store.get(experiment, h, version)
        if hit is not None:
            found[i] = hit
            out.cached += 1
        else:
            if not force:
                check_cost(experiment, cfg, f"point {i}")
            todo.append(i)

    if REGISTRY.experiment(experiment).exclusive:
        jobs = 1
    client, own_client = (connect(scheduler) if isinstance(scheduler, str) else (scheduler, False)) \
        if (scheduler and todo) else (None, False)
    bar = _progress(len(todo), label, progress)
    ticker = _Ticker(bar)

    def done(i: int, result: dict[str, Any] | None, elapsed: float, error: str | None, cpu: float = 0.0) -> None:
        bar.update(1)
        if error is not None:
            out.failed.append((i, error))
            return
        out.cpu_s[i] = cpu
        rec = make_record(experiment, configs[i], result or {}, elapsed)
        if store is not None:
            store.put(rec)
        found[i] = rec
        out.computed += 1

    try:
        if todo:
            payload = [(i, configs[i].model_dump(mode="json")) for i in todo]
            if client is None and jobs > 1 and len(todo) > 1:
                share_threads(payload, jobs)
            if client is not None:
                _run_dask(experiment, payload, client, done)
            elif jobs <= 1 or len(todo) == 1:
                for i, cfg in payload:
                    try:
                        result, elapsed, cpu = compute_timed(experiment, cfg)
                    except Exception as e:  # reported like a pooled point's failure; the sweep goes on
                        done(i, None, 0.0, _error_text(e))
                        continue
                    done(i, result, elapsed, None, cpu)
            else:
                _run_pool(experiment, payload, jobs, done)
    finally:
        ticker.stop()
        bar.close()
        if own_client:
            client.close()
    out.repeats = set(dup)
    for i, j in dup.items():
        if j in found:
            found[i] = found[j]
    out.records = [found[i] for i in sorted(found)]
    out.warned = sum(1 for r in out.records if r.result.get("warnings"))
    return out


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share_threads(payload: list[tuple[int, dict]], jobs: int) -> None:
    """Points running side by side split the cores: a config with a `threads` field left unset
    (every core) gets cores / points-at-once, at least 1, so that a sweep with as many points as
    cores runs each on one thread instead of oversubscribing. Results do not depend on threads
    (a system offering the field guarantees it), so the stored config keeps the unset value."""
    share = max(1, cores() // max(1, min(jobs, len(payload))))
    for _, cfg in payload:
        if "threads" in cfg and cfg["threads"] is None:
            cfg["threads"] = share


def _progress(total: int, label: str, enabled: bool):
    from tqdm import tqdm

    # A bar redrawn into a log file is noise: draw it on a terminal only (VEIL_PROGRESS=1 forces it).
    from veil.core.runner import progress_wanted

    on_tty = progress_wanted()
    return tqdm(total=total, desc=label, unit="pt", file=sys.stderr, disable=not (enabled and on_tty) or total == 0,
                leave=False, dynamic_ncols=True, mininterval=0.5)


class _Ticker:
    """Redraws a bar every second, so that its elapsed time runs while the first point (maybe
    an hour long) has not finished: a bar at 0/N that never moves looks like a hang."""

    def __init__(self, bar):
        import threading

        self._bar, self._stop = bar, threading.Event()
        self._thread = None
        if not getattr(bar, "disable", True):
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self._bar.refresh()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)


def _error_text(e: BaseException) -> str:
    return str(e) if isinstance(e, VeilError) else f"{type(e).__name__}: {e}"


def _run_pool(experiment: str, payload: list[tuple[int, dict]], jobs: int,
              done: Callable[..., None]) -> None:
    import multiprocessing as mp

    # spawn, not fork: the parent may hold threads (Dask, rayon) that fork would copy mid-lock.
    # A spawned worker re-runs the caller's script as `__mp_main__`; an unguarded script (no
    # `if __name__ == "__main__":`) would then repeat its side effects and start a sweep inside
    # the worker. The workers need only veil, so they start without the caller's main module,
    # unless the experiment itself was registered by that script.
    func = REGISTRY.experiment(experiment).func
    if getattr(func, "__module__", "") == "__main__":
        _refuse_unguarded(experiment, jobs)
        ctx = mp.get_context("spawn")
    else:
        ctx = _NoMainContext()
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_ignore_sigint)
    try:
        futures = {pool.submit(compute_timed, experiment, cfg): i for i, cfg in payload}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                result, elapsed, cpu = fut.result()
                done(i, result, elapsed, None, cpu)
            except Exception as e:  # a failed point is reported, the sweep goes on
                done(i, None, 0.0, _error_text(e))
    except BaseException:
        # Ctrl-C (or a failure here): a plain shutdown would wait for every running point, maybe
        # hours. Drop the queue and stop the workers; finished points are already stored.
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers:
            proc.terminate()
        raise
    pool.shutdown(wait=True)


def _ignore_sigint() -> None:
    """A pool worker leaves Ctrl-C to the parent, which stops it (below): Ctrl-C reaches the whole
    process group, and a worker that took it would print its own traceback under `veil: interrupted`."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _refuse_unguarded(experiment: str, jobs: int) -> None:
    """An experiment registered by the caller's own script needs that script in every worker, so
    the workers re-run it: a sweep called outside `if __name__ == "__main__":` would start again
    in each of them. Refused before any point runs, naming the guard."""
    import ast

    main = sys.modules["__main__"]
    path = getattr(main, "__file__", None)
    frame = sys._getframe()
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None or not path:
        return  # called from a function or an interactive session: nothing to tell
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return
    line = frame.f_lineno
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test) \
                and node.lineno <= line <= (node.end_lineno or node.lineno):
            return
    raise ConfigError(f"jobs={jobs}: {experiment} is registered by this script ({path}), so each worker re-runs "
                      f"it; put the sweep under `if __name__ == \"__main__\":` (or use jobs=1)")


@contextlib.contextmanager
def _main_hidden():
    """While a worker process is started, `__main__` is an empty module, so the worker's
    preparation data names no script to re-import."""
    real = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = real


class _NoMainProcess(mp_context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj):  # noqa: N802 - multiprocessing's name
        with _main_hidden():
            return mp_context.SpawnProcess._Popen(process_obj)


class _NoMainContext(mp_context.SpawnContext):
    Process = _NoMainProcess


def connect(address: str):
    """A Dask client for `--scheduler ADDRESS` and whether the caller owns it (bad address: one line, exit 2)."""
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - dask is a declared dependency
        raise ConfigError("--scheduler needs dask.distributed; install veil's dependencies") from None
    try:
        return Client(address, timeout="10s"), True
    except (OSError, TimeoutError, ValueError) as e:
        raise ConfigError(f"--scheduler {address}: cannot connect ({e})") from None


def _run_dask(experiment: str, payload: list[tuple[int, dict]], client: Any,
              done: Callable[..., None]) -> None:
    from distributed import as_completed as dask_completed

    futures = {}
    for i, cfg in payload:
        fut = client.submit(compute_timed, experiment, cfg, pure=False, key=f"veil-{experiment}-{i}-{id(payload)}")
        futures[fut] = i
    for fut in dask_completed(list(futures)):
        i = futures[fut]
        try:
            result, elapsed, cpu = fut.result()
            done(i, result, elapsed, None, cpu)
        except Exception as e:
            done(i, None, 0.0, _error_text(e))


def run_sweep(spec: SweepSpec, store: ResultStore | None, **kw) -> SweepOutcome:
    return run_points(spec.experiment, spec.configs, store, label=spec.name or "sweep", **kw)


def config_for_row(experiment: str, base: dict[str, Any], row: dict[str, Any], where: str = "") -> ExperimentConfig:
    """`base` with each dotted key of `row` set, validated."""
    data = copy.deepcopy(base)
    for k, v in row.items():
        set_dotted(data, k, v)
    return validate(experiment, data, where)


def configs_for(experiment: str, base: dict[str, Any], rows: Iterable[dict[str, Any]]) -> list[ExperimentConfig]:
    """Validated configs for `base` updated by each row of dotted overrides (used by reproducers)."""
    return [config_for_row(experiment, base, row) for row in rows]
