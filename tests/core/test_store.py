import json
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from veil.core.errors import StoreError
from veil.core.store import Record, ResultStore, export


def rec(i: int, exp: str = "x.y") -> Record:
    return Record(exp, f"h{i:015d}", "0.1.0", i, {"n": i, "sub": {"a": [1, 2]}}, {"v": i * 1.5, "tag": f"t{i}"},
                  0.01, "2026-01-01T00:00:00Z")


def test_roundtrip_and_key(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as s:
        s.put(rec(1))
        got = s.get("x.y", "h000000000000001", "0.1.0")
        assert got == rec(1)
        assert s.get("x.y", "h000000000000001", "9.9.9") is None  # another version is another row
        s.put(rec(1))  # replace, not duplicate
        assert len(list(s.records())) == 1


def test_wal_mode(tmp_path):
    ResultStore(tmp_path / "s.sqlite").close()
    with closing(sqlite3.connect(tmp_path / "s.sqlite")) as db:
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_corrupt_store_is_a_clear_error(tmp_path):
    p = tmp_path / "s.sqlite"
    p.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="corrupt"):
        ResultStore(p)


def test_unwritable_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot create its folder"):
        ResultStore(blocker / "sub" / "s.sqlite")


# The writers are separate interpreters started from source text, not multiprocessing targets: a
# spawned child must import its target by module name, and under --import-mode=importlib this
# test module has no importable name when tests/core is collected on its own.
_WRITER = """
import sys
from veil.core.store import Record, ResultStore
path, start = sys.argv[1], int(sys.argv[2])
with ResultStore(path) as s:
    for i in range(start, start + 50):
        s.put(Record("x.y", f"h{i:015d}", "0.1.0", i, {"n": i}, {"v": i * 1.5}, 0.01, "2026-01-01T00:00:00Z"))
"""


def test_parallel_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "s.sqlite")
    ResultStore(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, path, str(k * 50)]) for k in range(4)]
    for p in procs:
        assert p.wait(60) == 0
    with ResultStore(path) as s:
        assert sorted(r.seed for r in s.records()) == list(range(200))


def test_export_csv_and_parquet(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as s:
        for i in range(3):
            s.put(rec(i))
        assert export(s, "csv", tmp_path / "r.csv") == 3
        assert export(s, "parquet", tmp_path / "r.parquet") == 3
    import csv

    with (tmp_path / "r.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["result.v"] for r in rows] == ["0.0", "1.5", "3.0"]
    assert json.loads(rows[0]["config.sub.a"]) == [1, 2]
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "r.parquet")
    assert t.column("result.v").to_pylist() == [0.0, 1.5, 3.0]
    assert t.column("config_hash").to_pylist()[2] == "h000000000000002"


def test_source_fingerprint_follows_code(tmp_path):
    from veil.core.runner import source_fingerprint, veil_version

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "notes.md").write_text("docs do not count")
    first = source_fingerprint(tmp_path)
    (tmp_path / "notes.md").write_text("changed docs")
    assert source_fingerprint(tmp_path) == first
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert source_fingerprint(tmp_path) != first
    import veil

    assert veil_version().startswith(veil.__version__ + "+")
