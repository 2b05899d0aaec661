"""The Python API: run an experiment or a sweep from a dict, and read a store into pandas.

    import veil
    rec = veil.run({"experiment": "crypto.pad_randomness", "nbytes": 4096})
    veil.sweep({"experiment": "crypto.pad_randomness", "base": {"nbytes": 4096}, "grid": {"seed": [1, 2]}})
    df = veil.open_store().dataframe("crypto.pad_randomness")

Same validation, cache and store as the CLI (docs/python.md): bad input raises
`veil.ConfigError` naming the field; a point already in the store is read back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from veil.core.errors import ConfigError
from veil.core.store import Record, ResultStore, flatten

_META = ["id", "experiment", "config_hash", "veil_version", "seed", "elapsed_s", "created_at"]


def _overrides(overrides: dict[str, Any] | None) -> list[str]:
    """Dotted keys as `key=value` items (values as TOML literals, like the command line's)."""
    import json

    out = []
    for key, value in (overrides or {}).items():
        text = json.dumps(value) if not isinstance(value, bool) else str(value).lower()
        out.append(f"{key}={text}")
    return out


def _open(store: str | Path | ResultStore | None | bool) -> tuple[ResultStore | None, bool]:
    """(store, whether we opened it): None = the default store, False = no store at all."""
    if store is False:
        return None, False
    if isinstance(store, ResultStore):
        return store, False
    return ResultStore(store), True


def run(config: dict[str, Any] | str | Path, overrides: dict[str, Any] | None = None, *,
        store: str | Path | ResultStore | None | bool = None, force: bool = False,
        progress: bool = False) -> Record:
    """Runs one experiment point. `config` is a dict with `experiment` (nested tables as dicts),
    a TOML file's path, or an experiment's name (its defaults); `overrides` maps dotted keys to
    values. Returns the stored record (`.result` is the result dict, `.config` the full config)."""
    from veil.core.config import config_from_data, load_run
    from veil.core.runner import run_experiment

    items = _overrides(overrides)
    if isinstance(config, dict):
        experiment, cfg = config_from_data(dict(config), items)
    else:
        experiment, cfg = load_run(config, items)
    st, own = _open(store)
    try:
        rec, _cached = run_experiment(experiment, cfg, st, force=force, progress=progress)
    finally:
        if own and st is not None:
            st.close()
    return rec


def sweep(spec: dict[str, Any] | str | Path, overrides: dict[str, Any] | None = None, *,
          store: str | Path | ResultStore | None | bool = None, jobs: int = 1, force: bool = False,
          progress: bool = False) -> list[Record]:
    """Runs a sweep: a dict shaped like a sweep file (`experiment`, `base`, `grid`, `zip`) or a
    sweep file's path. Returns the records in point order; a failed point raises VeilError."""
    from veil.core.config import apply_overrides
    from veil.core.errors import VeilError
    from veil.core.sweep import load_spec, run_sweep, spec_from_data

    if jobs < 1:
        raise ConfigError(f"jobs {jobs}: must be at least 1")
    items = _overrides(overrides)
    if isinstance(spec, dict):
        s = spec_from_data(apply_overrides(dict(spec), items), str(spec.get("name", "sweep")))
    else:
        s = load_spec(spec, items)
    st, own = _open(store)
    try:
        out = run_sweep(s, st, jobs=jobs, force=force, progress=progress)
    finally:
        if own and st is not None:
            st.close()
    if out.failed:
        i, err = out.failed[0]
        raise VeilError(f"{len(out.failed)} of {len(s.configs)} points failed; point {i}: {err}")
    return out.records


class Store:
    """A results store opened for analysis (`veil.open_store()`)."""

    def __init__(self, path: str | Path | None = None):
        self._store = ResultStore(path)
        self.path = self._store.path

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()

    def experiments(self) -> list[str]:
        return self._store.experiments()

    def records(self, experiment: str | None = None) -> list[Record]:
        return list(self._store.records(experiment))

    def dataframe(self, experiment: str | Path | dict[str, Any], *, latest: bool = True):
        """One row per stored result of `experiment`: the record's metadata, every config key
        (dotted for nested tables) and every result field as columns. A result field named like
        a config key is `result.NAME`. With `latest`, one row per config (the newest result).
        `df.attrs["units"]` maps columns to units; `units(experiment)` is the same as a table.

        `experiment` may also be a sweep (a sweep file's path or a dict shaped like one): only
        its points, so that a pivot over its varied keys never averages configs that differ in
        a key it does not show."""
        from veil.core.registry import REGISTRY

        wanted: set[str] | None = None
        if isinstance(experiment, dict) or str(experiment).endswith(".toml") or Path(str(experiment)).is_file():
            experiment, wanted = _sweep_points(experiment)
        REGISTRY.experiment(experiment)  # an unknown name: ConfigError listing the known ones
        recs = [r for r in self.records(experiment) if wanted is None or r.config_hash in wanted]
        if latest:
            newest: dict[str, Record] = {}
            for r in recs:
                if r.config_hash not in newest or r.created_at >= newest[r.config_hash].created_at:
                    newest[r.config_hash] = r
            recs = sorted(newest.values(), key=lambda r: r.id or 0)
        return records_dataframe(experiment, recs)

    def units(self, experiment: str | Path | dict[str, Any]):
        """A companion table: column, kind (config / result), unit, description."""
        df = self.dataframe(experiment)
        return units_table(df.attrs["experiment"], df)


def _sweep_points(spec: str | Path | dict[str, Any]) -> tuple[str, set[str]]:
    """(experiment, config hashes of every point) of a sweep file or sweep dict."""
    from veil.core.config import config_hash
    from veil.core.sweep import load_spec, spec_from_data

    s = spec_from_data(dict(spec), "sweep") if isinstance(spec, dict) else load_spec(spec)
    return s.experiment, {config_hash(s.experiment, c) for c in s.configs}


def open_store(path: str | Path | None = None) -> Store:
    """The results store at `path` (default $VEIL_STORE or .veil/results.sqlite)."""
    return Store(path)


def records_dataframe(experiment: str, records: Iterable[Record]):
    import pandas as pd

    from veil.core.registry import REGISTRY

    exp = REGISTRY.experiment(experiment)
    rows, config_cols, result_cols = [], [], []
    for r in records:
        cfg = flatten("", r.config, {})
        res = flatten("", {k: v for k, v in r.result.items() if k != "warnings"}, {})
        row = {"id": r.id, "experiment": r.experiment, "config_hash": r.config_hash,
               "veil_version": r.veil_version, "seed": r.seed, "elapsed_s": r.elapsed_s,
               "created_at": r.created_at}
        for k, v in cfg.items():
            if k != "seed":
                row[k] = v
                config_cols += [k] if k not in config_cols else []
        for k, v in res.items():
            col = f"result.{k}" if k in cfg or k in _META else k
            row[col] = v
            result_cols += [col] if col not in result_cols else []
        rows.append(row)
    df = pd.DataFrame(rows, columns=_META + config_cols + result_cols)
    units: dict[str, str] = {}
    for col in result_cols:
        doc = exp.result_doc(col.removeprefix("result."))
        if doc and doc[0]:
            units[col] = doc[0]
    units["elapsed_s"] = "s"
    df.attrs.update(experiment=experiment, units=units, config_columns=["seed"] + config_cols,
                    result_columns=result_cols)
    return df


def units_table(experiment: str, df):
    import pandas as pd

    from veil.core.registry import REGISTRY

    exp = REGISTRY.experiment(experiment)
    rows = []
    for col in df.attrs["config_columns"]:
        field = exp.config.model_fields.get(col)
        rows.append({"column": col, "kind": "config", "unit": "",
                     "description": (field.description or "") if field else ""})
    for col in df.attrs["result_columns"]:
        doc = exp.result_doc(col.removeprefix("result.")) or ("", "")
        rows.append({"column": col, "kind": "result", "unit": doc[0], "description": doc[1]})
    return pd.DataFrame(rows, columns=["column", "kind", "unit", "description"])
