"""Results store: embedded SQLite keyed by (experiment, config hash, Veil version).

WAL mode and a busy timeout let several Veil processes (parallel sweeps, a report beside a
sweep) read and write one file safely. A repeated point is read back, never recomputed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from veil.core.errors import StoreError, VeilError

DEFAULT_STORE = Path(".veil") / "results.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    experiment   TEXT NOT NULL,
    config_hash  TEXT NOT NULL,
    veil_version TEXT NOT NULL,
    seed         INTEGER NOT NULL,
    config_json  TEXT NOT NULL,
    result_json  TEXT NOT NULL,
    elapsed_s    REAL NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (experiment, config_hash, veil_version)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Record:
    experiment: str
    config_hash: str
    veil_version: str
    seed: int
    config: dict[str, Any]
    result: dict[str, Any]
    elapsed_s: float
    created_at: str
    id: int | None = field(default=None, compare=False)  # the store's row id (`veil results show ID`)

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "config_hash": self.config_hash,
            "veil_version": self.veil_version,
            "seed": self.seed,
            "config": self.config,
            "result": self.result,
            "elapsed_s": self.elapsed_s,
            "created_at": self.created_at,
        }


def default_path() -> Path:
    return Path(os.environ.get("VEIL_STORE") or DEFAULT_STORE)


class ResultStore:
    def __init__(self, path: str | Path | None = None, timeout_s: float = 30.0):
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"results store {self.path}: cannot create its folder: {e.strerror}") from None
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise StoreError(f"results store {self.path}: not writable")
        if not os.access(self.path.parent, os.W_OK):
            raise StoreError(f"results store {self.path}: folder {self.path.parent} is not writable")
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise StoreError(f"results store {self.path}: schema {row[0]}, this Veil reads {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            raise self._error(e) from None

    def _error(self, e: sqlite3.Error) -> VeilError:
        text = str(e)
        if "locked" in text or "busy" in text:
            return VeilError(f"results store {self.path}: locked by another process ({text})")
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return StoreError(f"results store {self.path}: corrupt ({text}); move it away to start a new one")
        if "readonly" in text or "unable to open" in text:
            return StoreError(f"results store {self.path}: cannot be written ({text})")
        return StoreError(f"results store {self.path}: {text}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(self, experiment: str, config_hash: str, veil_version: str) -> Record | None:
        try:
            row = self._db.execute(
                "SELECT rowid, * FROM results WHERE experiment=? AND config_hash=? AND veil_version=?",
                (experiment, config_hash, veil_version),
            ).fetchone()
        except sqlite3.Error as e:
            raise self._error(e) from None
        return _record(row) if row else None

    def put(self, rec: Record) -> None:
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?)",
                (rec.experiment, rec.config_hash, rec.veil_version, rec.seed,
                 json.dumps(rec.config, sort_keys=True), json.dumps(rec.result),  # in the experiment's order
                 rec.elapsed_s, rec.created_at),
            )
        except sqlite3.Error as e:
            raise self._error(e) from None

    def records(self, experiment: str | None = None) -> Iterator[Record]:
        q, args = "SELECT rowid, * FROM results", ()
        if experiment:
            q, args = q + " WHERE experiment=?", (experiment,)
        try:
            rows = self._db.execute(q + " ORDER BY experiment, created_at, rowid", args).fetchall()
        except sqlite3.Error as e:
            raise self._error(e) from None
        return (_record(r) for r in rows)

    def experiments(self) -> list[str]:
        try:
            return [r[0] for r in self._db.execute("SELECT DISTINCT experiment FROM results ORDER BY 1")]
        except sqlite3.Error as e:
            raise self._error(e) from None

    def find(self, ref: str) -> list[Record]:
        """Records named by a row id (`12`) or a config-hash prefix (`3fa2c1`, 4+ hex digits)."""
        try:
            rows = []
            if ref.isdigit():
                rows = self._db.execute("SELECT rowid, * FROM results WHERE rowid=?", (int(ref),)).fetchall()
            if not rows and 4 <= len(ref) <= 16 and all(c in "0123456789abcdef" for c in ref.lower()):
                rows = self._db.execute("SELECT rowid, * FROM results WHERE config_hash LIKE ? ORDER BY rowid",
                                        (ref.lower() + "%",)).fetchall()
        except sqlite3.Error as e:
            raise self._error(e) from None
        return [_record(r) for r in rows]

    def delete(self, ids: list[int]) -> int:
        try:
            cur = self._db.executemany("DELETE FROM results WHERE rowid=?", [(i,) for i in ids])
            return cur.rowcount
        except sqlite3.Error as e:
            raise self._error(e) from None


def _record(row: tuple) -> Record:
    rowid, exp, h, ver, seed, cfg, res, elapsed, created = row
    return Record(exp, h, ver, seed, json.loads(cfg), json.loads(res), elapsed, created, rowid)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def flatten(prefix: str, obj: Any, out: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts to dotted columns; lists become JSON text so every cell is a scalar."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(obj, (list, tuple)):
        out[prefix] = json.dumps(obj)
    else:
        out[prefix] = obj
    return out


def export(store: ResultStore, fmt: str, out: Path, experiment: str | None = None,
           records: list[Record] | None = None) -> int:
    """Writes `records` (default: every record of `experiment`, or all) as CSV or Parquet."""
    rows = []
    for r in store.records(experiment) if records is None else records:
        row = {"experiment": r.experiment, "config_hash": r.config_hash, "veil_version": r.veil_version,
               "seed": r.seed, "elapsed_s": r.elapsed_s, "created_at": r.created_at}
        flatten("config", r.config, row)
        flatten("result", r.result, row)
        rows.append(row)
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        import csv

        with out.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(rows)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        # Mixed-type columns (an int in one experiment, text in another) are stored as text.
        cols = {}
        for c in columns:
            vals = [row.get(c) for row in rows]
            kinds = {type(v) for v in vals if v is not None}
            if len(kinds) > 1 and not kinds <= {int, float}:
                vals = [None if v is None else str(v) for v in vals]
            elif kinds == {int, float}:
                vals = [None if v is None else float(v) for v in vals]
            cols[c] = vals
        pq.write_table(pa.table(cols), out)
    else:
        raise ValueError(fmt)
    return len(rows)
