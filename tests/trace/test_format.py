"""The trace format in Python, against the Rust implementation (through veil._native)."""

import json
import os
import struct

import numpy as np
import pytest

from veil import _native
from veil.trace import TraceFormatError, TraceReader, TraceWriter, read_trace, record_dtype
from veil.trace.format import FORMAT_VERSION, MIN_FORMAT_VERSION
from veil.trace.runner import Geometry, cache_key

CODECS = ("raw", "zstd", "lz4")


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


def block_offsets(b):
    at = 16 + struct.unpack("<I", b[12:16])[0]
    out = []
    while b[at:at + 4] == b"BLK ":
        out.append(at)
        at += 20 + struct.unpack("<I", b[at + 16:at + 20])[0]
    return out


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("line", [64, 16])
def test_python_round_trip_and_chunks(tmp_path, line, codec):
    recs = records(5000, line)
    write(tmp_path / "t.vtrace", recs, line, block_records=700, codec=codec)
    codecs = {struct.unpack("<I", (tmp_path / "t.vtrace").read_bytes()[at + 4:at + 8])[0]
              for at in block_offsets((tmp_path / "t.vtrace").read_bytes())}
    assert codecs == {CODECS.index(codec)}
    h, got = read_trace(tmp_path / "t.vtrace")
    assert h == header(line)
    assert np.array_equal(got, recs)
    with TraceReader(tmp_path / "t.vtrace") as r:
        sizes = [len(c) for c in r.chunks(1234)]
        assert r.summary["records"] == 5000 and r.summary["threads"] == 3
    assert sizes == [1234] * 4 + [5000 - 4 * 1234]


@pytest.mark.parametrize("codec", CODECS)
def test_rust_reads_python_and_python_reads_rust(tmp_path, codec):
    """Python writes blocks, Rust packs them (as it does the tool's stream: LZ4 by default) and
    recodes them to each codec, Python reads the results back: both sides follow the same layout."""
    recs = records(20000)
    raw = tmp_path / "raw.vtrace"
    write(raw, recs, block_records=3000, codec=codec)
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
    assert packed.stat().st_size < len(recs) * recs.dtype.itemsize / 2
    again = tmp_path / "again.vtrace"
    assert json.loads(_native.trace.recode(str(packed), str(again), codec))["records"] == 20000
    assert np.array_equal(read_trace(again)[1], recs)
    for threads in (1, 2):
        for mode in ("next_into", "next_ref", "for_each"):
            assert _native.trace.read_speed(str(again), threads, mode)[0] == 20000
    with pytest.raises(ValueError, match='codec "gzip" is not'):
        _native.trace.recode(str(packed), str(again), "gzip")


@pytest.mark.parametrize("codec", CODECS)
def test_truncation_reports_the_offset(tmp_path, codec):
    p = tmp_path / "t.vtrace"
    write(p, records(3000), block_records=1000, codec=codec)
    full = p.read_bytes()
    cut = tmp_path / "cut.vtrace"
    for n in (5, 16, 40, 300, len(full) // 2, len(full) - 1):
        cut.write_bytes(full[:n])
        with pytest.raises(TraceFormatError, match=f"truncated at byte {n}:") as e:
            read_trace(cut)
        assert e.value.offset == n
        with pytest.raises(ValueError, match=f"truncated at byte {n}:"):
            _native.trace.stats(str(cut), [8])


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("where", [40, "last"])
def test_corruption_and_version(tmp_path, codec, where):
    p = tmp_path / "t.vtrace"
    write(p, records(3000), block_records=1000, codec=codec)
    b = bytearray(p.read_bytes())
    first, second, third = block_offsets(b)
    b[second + 40 if where == 40 else third - 1] ^= 0xFF    # in the second block's payload, or its last byte
    (tmp_path / "bad.vtrace").write_bytes(b)
    with pytest.raises(TraceFormatError, match=f"corrupt at byte {second}:"):
        read_trace(tmp_path / "bad.vtrace")
    with pytest.raises(ValueError, match=f"corrupt at byte {second}:"):
        _native.trace.stats(str(tmp_path / "bad.vtrace"), [8])
    assert (FORMAT_VERSION, MIN_FORMAT_VERSION) == (_native.trace.FORMAT_VERSION, _native.trace.MIN_FORMAT_VERSION)
    v = bytearray(p.read_bytes())
    assert struct.unpack("<I", v[8:12])[0] == FORMAT_VERSION == 2
    for bad in (9, 0):
        v[8:12] = struct.pack("<I", bad)
        (tmp_path / "vx.vtrace").write_bytes(v)
        for read in (read_trace, lambda q: _native.trace.header(str(q))):
            with pytest.raises((TraceFormatError, ValueError),
                               match=f"version {bad} is not supported .*versions 1 to 2"):
                read(tmp_path / "vx.vtrace")


@pytest.mark.parametrize("codec", CODECS)
def test_version_1_files_are_read_without_lz4(tmp_path, codec):
    p = tmp_path / "t.vtrace"
    recs = records(2500)
    write(p, recs, block_records=1000, codec=codec)
    b = bytearray(p.read_bytes())
    b[8:12] = struct.pack("<I", 1)
    p.write_bytes(b)
    if codec == "lz4":
        at = block_offsets(b)[0]
        with pytest.raises(TraceFormatError, match=f"corrupt at byte {at}: unknown block codec 2 in a version 1"):
            read_trace(p)
        with pytest.raises(ValueError, match=f"corrupt at byte {at}: unknown block codec 2 in a version 1"):
            _native.trace.stats(str(p), [8])
    else:
        assert np.array_equal(read_trace(p)[1], recs)
        assert json.loads(_native.trace.stats(str(p), [8]))["records"] == 2500


def test_the_cache_key_names_format_and_codec(monkeypatch):
    from veil.trace import runner
    monkeypatch.setattr(runner, "tool_version", lambda quantum=None: f"veiltrace test quantum {quantum}")
    key = cache_key("mcf", "small", 1, "00", Geometry())
    assert key == cache_key("mcf", "small", 1, "00", Geometry())
    monkeypatch.setattr(runner, "FORMAT_VERSION", 3)
    assert cache_key("mcf", "small", 1, "00", Geometry()) != key
    monkeypatch.setattr(runner, "FORMAT_VERSION", FORMAT_VERSION)
    monkeypatch.setattr(runner, "PACK_CODEC", "zstd")
    assert cache_key("mcf", "small", 1, "00", Geometry()) != key
    monkeypatch.setattr(runner, "PACK_CODEC", "lz4")
    assert cache_key("mcf", "small", 1, "00", Geometry(), 1000) != cache_key("mcf", "small", 1, "00", Geometry(), 50)


def test_writer_refuses_bad_records(tmp_path):
    with pytest.raises(ValueError, match="line_size"):
        TraceWriter(tmp_path / "x.vtrace", header(line=128))
    with pytest.raises(ValueError, match="codec 'lz5'"):
        TraceWriter(tmp_path / "x.vtrace", header(), codec="lz5")
    r = records(4)
    r["addr"][2] += 8
    with TraceWriter(tmp_path / "y.vtrace", header()) as w, pytest.raises(ValueError, match="aligned"):
        w.write(r)


def test_both_readers_refuse_an_address_inside_a_line(tmp_path):
    """A record is a whole line: an address that is not line-aligned is damage, named with its
    block's offset, by the Python reader and by the Rust one."""
    p = tmp_path / "t.vtrace"
    recs = records(3000)
    write(p, recs, block_records=1000, codec="raw")
    b = bytearray(p.read_bytes())
    first, second, third = block_offsets(b)
    n = 1000
    addr_col = second + 20 + 9 * n  # thread (4n), kind (n), llc_hits (4n) come first
    b[addr_col + 8 * 7] |= 0x08     # record 7 of the second block, 8 bytes into its line
    (tmp_path / "bad.vtrace").write_bytes(b)
    with pytest.raises(TraceFormatError, match=f"corrupt at byte {second}: record 7 of the block has address "
                                               f"0x[0-9a-f]+, not aligned to the 64-byte line"):
        read_trace(tmp_path / "bad.vtrace")
    with pytest.raises(ValueError, match=f"corrupt at byte {second}: record 7 .* not aligned to the 64-byte line"):
        _native.trace.stats(str(tmp_path / "bad.vtrace"), [8])
    read_trace(p)  # the undamaged file reads
