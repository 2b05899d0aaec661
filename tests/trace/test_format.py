"""The trace format in Python, against the Rust implementation (through veil._native)."""

import json
import os
import struct

import numpy as np
import pytest

from veil import _native
from veil.trace import TraceFormatError, TraceReader, TraceWriter, read_trace, record_dtype


def header(line=64, threads=2):
    return {"workload": "synthetic", "program": "synthetic", "args": ["a b", "\"q\""], "input_hash": "00",
            "l1": {"size": 8192, "assoc": 1}, "llc": {"size": 262144, "assoc": 4}, "line_size": line,
            "tool_version": "test", "threads": threads, "extra": {}}


def records(n, line=64, seed=1):
    rng = np.random.default_rng(seed)
    r = np.zeros(n, record_dtype(line))
    r["thread"] = rng.integers(0, 3, n)
    r["kind"] = rng.integers(0, 3, n)
    r["llc_hits"] = rng.integers(0, 100, n)
    r["addr"] = rng.integers(0, 1 << 30, n) * line
    r["insts"] = rng.integers(0, 10000, n)
    words = rng.choice(np.array([0, 0, 0, 1, 2**63 + 5, 7], dtype=np.uint64), (n, line // 8))
    r["data"] = words.view(np.uint8).reshape(n, line)
    return r


def write(path, recs, line=64, **kw):
    w = TraceWriter(path, header(line), **kw)
    for part in np.array_split(recs, 3):
        w.write(part)
    return w.finish({"note": "py"})


@pytest.mark.parametrize("line", [64, 16])
def test_python_round_trip_and_chunks(tmp_path, line):
    recs = records(5000, line)
    write(tmp_path / "t.vtrace", recs, line, block_records=700)
    h, got = read_trace(tmp_path / "t.vtrace")
    assert h == header(line)
    assert np.array_equal(got, recs)
    with TraceReader(tmp_path / "t.vtrace") as r:
        sizes = [len(c) for c in r.chunks(1234)]
        assert r.summary["records"] == 5000 and r.summary["threads"] == 3
    assert sizes == [1234] * 4 + [5000 - 4 * 1234]


def test_rust_reads_python_and_python_reads_rust(tmp_path):
    """Python writes raw blocks, Rust packs them to zstd (as it does the tool's stream), Python
    reads the result back: both sides follow the same documented layout."""
    recs = records(20000)
    raw = tmp_path / "raw.vtrace"
    write(raw, recs, block_records=3000, level=None)
    stats = json.loads(_native.trace.stats(str(raw), [1]))
    fills = recs[recs["kind"] != 2]
    assert stats["fills"] == len(fills)
    zeros = np.count_nonzero(fills["data"].view(np.uint64) == 0)
    assert stats["top_values"][0] == [0, zeros]
    packed = tmp_path / "packed.vtrace"
    fd = os.open(raw, os.O_RDONLY)
    summary = json.loads(_native.trace.pack_fd(fd, str(packed), json.dumps({"workload": "renamed", "extra": {"k": 1}})))
    assert summary["records"] == 20000 and summary["stats"] == {"note": "py"}
    h, got = read_trace(packed)
    assert h["workload"] == "renamed" and h["extra"] == {"k": 1} and h["args"] == ["a b", "\"q\""]
    assert np.array_equal(got, recs)
    assert packed.stat().st_size < raw.stat().st_size / 3


def test_truncation_reports_the_offset(tmp_path):
    p = tmp_path / "t.vtrace"
    write(p, records(3000), block_records=1000)
    full = p.read_bytes()
    cut = tmp_path / "cut.vtrace"
    for n in (5, 16, 40, 300, len(full) // 2, len(full) - 1):
        cut.write_bytes(full[:n])
        with pytest.raises(TraceFormatError, match=f"truncated at byte {n}:") as e:
            read_trace(cut)
        assert e.value.offset == n
        with pytest.raises(ValueError, match=f"truncated at byte {n}:"):
            _native.trace.stats(str(cut), [8])


def test_corruption_and_version(tmp_path):
    p = tmp_path / "t.vtrace"
    write(p, records(3000), block_records=1000)
    b = bytearray(p.read_bytes())
    hlen = struct.unpack("<I", b[12:16])[0]
    first = 16 + hlen
    second = first + 20 + struct.unpack("<I", b[first + 16:first + 20])[0]
    b[second + 40] ^= 0xFF    # inside the second block's compressed payload
    (tmp_path / "bad.vtrace").write_bytes(b)
    with pytest.raises(TraceFormatError, match=f"corrupt at byte {second}:"):
        read_trace(tmp_path / "bad.vtrace")
    with pytest.raises(ValueError, match=f"corrupt at byte {second}:"):
        _native.trace.stats(str(tmp_path / "bad.vtrace"), [8])
    v = bytearray(p.read_bytes())
    v[8:12] = struct.pack("<I", 9)
    (tmp_path / "v9.vtrace").write_bytes(v)
    for read in (read_trace, lambda q: _native.trace.header(str(q))):
        with pytest.raises((TraceFormatError, ValueError), match="version 9 is not supported .*version 1"):
            read(tmp_path / "v9.vtrace")


def test_writer_refuses_bad_records(tmp_path):
    with pytest.raises(ValueError, match="line_size"):
        TraceWriter(tmp_path / "x.vtrace", header(line=128))
    r = records(4)
    r["addr"][2] += 8
    with TraceWriter(tmp_path / "y.vtrace", header()) as w, pytest.raises(ValueError, match="aligned"):
        w.write(r)
