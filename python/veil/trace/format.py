"""The trace format (docs/trace.md, version 2; version 1 is read too) read and written in Python: numpy structured
arrays, one block at a time or in chunks of a chosen size, so memory stays bounded.

This is an independent implementation of the documented layout (the Rust crate `veil-trace` is
the other); the tests check each reads what the other writes.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import lz4.block
import numpy as np
import zstandard

from veil.core import VeilError

FORMAT_VERSION = 2
MIN_FORMAT_VERSION = 1
MAGIC = b"VEILTRC\0"
END_MAGIC = b"VEILEND\0"
BLOCK_TAG = b"BLK "
END_TAG = b"END "
CODEC_RAW, CODEC_ZSTD, CODEC_LZ4 = 0, 1, 2  # LZ4: since version 2
CODECS = ("raw", "zstd", "lz4")
MAX_LINE = 64
MAX_BLOCK_RECORDS = 1 << 20
FIXED_RECORD_BYTES = 25

LOAD_FILL, STORE_FILL, WRITEBACK = 0, 1, 2
KIND_NAMES = {LOAD_FILL: "load_fill", STORE_FILL: "store_fill", WRITEBACK: "writeback"}


class TraceFormatError(VeilError):
    """A trace file that cannot be read; `offset` is the byte where the problem was found."""

    def __init__(self, message: str, offset: int | None = None):
        super().__init__(message)
        self.offset = offset


def record_dtype(line_size: int) -> np.dtype:
    """One record: the format's fields, `data` holding `line_size` bytes."""
    return np.dtype([("thread", "<u4"), ("kind", "u1"), ("llc_hits", "<u4"), ("addr", "<u8"),
                     ("insts", "<u8"), ("data", "u1", (line_size,))])


def _check_line_size(ls: object) -> int:
    if not isinstance(ls, int) or not 8 <= ls <= MAX_LINE or ls & (ls - 1):
        raise ValueError(f"line_size {ls!r} is not a power of two from 8 to {MAX_LINE}")
    return ls


class TraceReader:
    """`TraceReader(path)`: `.header` (dict), then `.blocks()` or `.chunks(records)` yield
    structured arrays of `record_dtype(header['line_size'])`; `.summary` after the last one."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self._f: BinaryIO = open(self.path, "rb")
        except OSError as e:
            raise TraceFormatError(f"cannot open trace {self.path}: {e.strerror}") from None
        self.offset = 0
        self.summary: dict | None = None
        self._dctx = zstandard.ZstdDecompressor()
        try:
            pre = self._read(16, "the preamble")
            if pre[:8] != MAGIC:
                raise TraceFormatError(f"trace corrupt at byte 0: {self.path} is not a Veil trace (bad magic)", 0)
            version, hlen = struct.unpack("<II", pre[8:])
            if not MIN_FORMAT_VERSION <= version <= FORMAT_VERSION:
                raise TraceFormatError(f"trace format version {version} is not supported "
                                       f"(this reader reads versions {MIN_FORMAT_VERSION} to {FORMAT_VERSION})")
            self.version = version
            raw = self._read(hlen, "the header")
            try:
                self.header: dict = json.loads(raw)
                self.line_size = _check_line_size(self.header.get("line_size"))
            except (ValueError, TypeError) as e:
                raise TraceFormatError(f"trace corrupt at byte 16: header: {e}", 16) from None
        except BaseException:
            self._f.close()
            raise
        self.dtype = record_dtype(self.line_size)
        self._records = 0
        self._blocks = 0

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read(self, n: int, what: str) -> bytes:
        b = self._f.read(n)
        if len(b) < n:
            at = self.offset + len(b)
            raise TraceFormatError(f"trace truncated at byte {at}: file ends inside {what}", at)
        self.offset += n
        return b

    def _corrupt(self, at: int, what: str) -> TraceFormatError:
        return TraceFormatError(f"trace corrupt at byte {at}: {what}", at)

    def blocks(self) -> Iterator[np.ndarray]:
        """Every block as one structured array, in file order."""
        while self.summary is None:
            at = self.offset
            tag = self._read(4, "a block header")
            if tag == END_TAG:
                self._read_end(at)
                return
            if tag != BLOCK_TAG:
                raise self._corrupt(at, f"expected a block or end tag, found {tag!r}")
            codec, n, raw_len, stored_len = struct.unpack("<IIII", self._read(16, "a block header"))
            if not 0 < n <= MAX_BLOCK_RECORDS:
                raise self._corrupt(at, f"block of {n} records")
            ls = self.line_size
            if raw_len != n * (FIXED_RECORD_BYTES + ls):
                raise self._corrupt(at, f"block of {n} records claims {raw_len} bytes")
            stored = self._read(stored_len, "a block's records")
            if codec == CODEC_ZSTD:
                try:
                    raw = self._dctx.decompress(stored, max_output_size=raw_len)
                except zstandard.ZstdError as e:
                    raise self._corrupt(at, f"block does not decompress: {e}") from None
                if len(raw) != raw_len:
                    raise self._corrupt(at, f"block decompresses to {len(raw)} bytes, expected {raw_len}")
            elif codec == CODEC_RAW:
                if stored_len != raw_len:
                    raise self._corrupt(at, f"raw block stores {stored_len} bytes, expected {raw_len}")
                raw = stored
            elif codec == CODEC_LZ4 and self.version >= 2:
                if len(stored) < 4 or zlib.crc32(stored[4:]) != struct.unpack("<I", stored[:4])[0]:
                    raise self._corrupt(at, "block fails its CRC-32 check")
                try:
                    raw = lz4.block.decompress(stored[4:], uncompressed_size=raw_len)
                except lz4.block.LZ4BlockError as e:
                    raise self._corrupt(at, f"block does not decompress: {e}") from None
                if len(raw) != raw_len:
                    raise self._corrupt(at, f"block decompresses to {len(raw)} bytes, expected {raw_len}")
            else:
                raise self._corrupt(at, f"unknown block codec {codec} in a version {self.version} trace")
            out = np.empty(n, self.dtype)
            cols = np.frombuffer(raw, np.uint8)
            pos = 0
            for name, width in (("thread", 4), ("kind", 1), ("llc_hits", 4), ("addr", 8), ("insts", 8)):
                out[name] = cols[pos:pos + n * width].view(self.dtype[name])
                pos += n * width
            out["data"] = cols[pos:].reshape(n, ls)
            bad = np.flatnonzero(out["kind"] > WRITEBACK)
            if bad.size:
                raise self._corrupt(at, f"record {bad[0]} of the block has kind {out['kind'][bad[0]]}")
            bad = np.flatnonzero(out["addr"] & np.uint64(ls - 1))
            if bad.size:
                raise self._corrupt(at, f"record {bad[0]} of the block has address {int(out['addr'][bad[0]]):#x}, "
                                        f"not aligned to the {ls}-byte line")
            self._records += n
            self._blocks += 1
            yield out

    def chunks(self, records: int = 1 << 20) -> Iterator[np.ndarray]:
        """Arrays of `records` records each (the last may be shorter)."""
        pending: list[np.ndarray] = []
        have = 0
        for b in self.blocks():
            pending.append(b)
            have += len(b)
            while have >= records:
                whole = np.concatenate(pending) if len(pending) > 1 else pending[0]
                yield whole[:records]
                rest = whole[records:]
                pending, have = ([rest], len(rest)) if len(rest) else ([], 0)
        if have:
            yield np.concatenate(pending)

    def read_all(self) -> np.ndarray:
        """The whole trace as one array (for small traces: memory grows with the trace)."""
        parts = list(self.blocks())
        return np.concatenate(parts) if parts else np.empty(0, self.dtype)

    def _read_end(self, at: int) -> None:
        (n,) = struct.unpack("<I", self._read(4, "the end frame"))
        body = self._read(n, "the end frame")
        tail = self._read(16, "the end frame")
        if tail[8:] != END_MAGIC or struct.unpack("<Q", tail[:8])[0] != at:
            raise self._corrupt(self.offset - 16, "bad trailer")
        try:
            s = json.loads(body)
        except ValueError as e:
            raise self._corrupt(at + 8, f"summary is not valid JSON: {e}") from None
        if s.get("records") != self._records or s.get("blocks") != self._blocks:
            raise self._corrupt(at, f"summary counts {s.get('records')} records in {s.get('blocks')} blocks, "
                                    f"the file holds {self._records} in {self._blocks}")
        self.summary = s


class TraceWriter:
    """Writes the format from structured arrays: `write(array)` any number of times, `finish()`.
    Used for synthetic traces in tests and by consumers that transform traces. `codec`: "zstd"
    (at `level`), "lz4" or "raw"; without it, zstd at `level`, or raw where `level` is None."""

    def __init__(self, path: str | Path, header: dict, *, block_records: int = 16384, level: int | None = 3,
                 codec: str | None = None):
        self.line_size = _check_line_size(header.get("line_size"))
        if not 0 < block_records <= MAX_BLOCK_RECORDS:
            raise ValueError(f"block_records {block_records} is not in 1..{MAX_BLOCK_RECORDS}")
        if codec is None:
            codec = "raw" if level is None else "zstd"
        if codec not in CODECS:
            raise ValueError(f"codec {codec!r} is not one of {', '.join(CODECS)}")
        if codec == "zstd" and level is None:
            raise ValueError("codec 'zstd' needs a level")
        self.codec = codec
        self.dtype = record_dtype(self.line_size)
        self._f = open(path, "wb")
        self._block = block_records
        self._cctx = zstandard.ZstdCompressor(level=level, write_checksum=True,
                                              write_content_size=True) if codec == "zstd" else None
        self._pending: list[np.ndarray] = []
        self._have = 0
        self.records = self.blocks = self.threads = 0
        self.offset = 0
        h = json.dumps(header, separators=(",", ":")).encode()
        self._put(MAGIC + struct.pack("<II", FORMAT_VERSION, len(h)) + h)

    def close(self) -> None:
        """Closes without the end frame (readers then report the file as truncated)."""
        self._f.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc) -> None:
        self._f.close()

    def _put(self, b: bytes) -> None:
        self._f.write(b)
        self.offset += len(b)

    def write(self, recs: np.ndarray) -> None:
        recs = np.asarray(recs, self.dtype)
        if len(recs) and np.any(recs["addr"] % self.line_size):
            raise ValueError(f"addresses must be aligned to the {self.line_size}-byte line")
        if len(recs) and np.any(recs["kind"] > WRITEBACK):
            raise ValueError("kind must be 0 (load fill), 1 (store fill) or 2 (writeback)")
        self._pending.append(recs)
        self._have += len(recs)
        while self._have >= self._block:
            whole = np.concatenate(self._pending)
            self._flush(whole[:self._block])
            rest = whole[self._block:]
            self._pending, self._have = [rest], len(rest)

    def _flush(self, recs: np.ndarray) -> None:
        n = len(recs)
        if n == 0:
            return
        raw = b"".join(np.ascontiguousarray(recs[name]).tobytes()
                       for name in ("thread", "kind", "llc_hits", "addr", "insts", "data"))
        if self.codec == "zstd":
            stored, codec = self._cctx.compress(raw), CODEC_ZSTD
        elif self.codec == "lz4":
            body = lz4.block.compress(raw, store_size=False)
            stored, codec = struct.pack("<I", zlib.crc32(body)) + body, CODEC_LZ4
        else:
            stored, codec = raw, CODEC_RAW
        self._put(BLOCK_TAG + struct.pack("<IIII", codec, n, len(raw), len(stored)) + stored)
        self.records += n
        self.blocks += 1
        self.threads = max(self.threads, int(recs["thread"].max()) + 1)

    def finish(self, stats: object = None) -> dict:
        if self._have:
            self._flush(np.concatenate(self._pending))
        self._pending, self._have = [], 0
        summary = {"records": self.records, "blocks": self.blocks, "threads": self.threads, "stats": stats}
        body = json.dumps(summary, separators=(",", ":")).encode()
        at = self.offset
        self._put(END_TAG + struct.pack("<I", len(body)) + body + struct.pack("<Q", at) + END_MAGIC)
        self._f.close()
        return summary


def read_trace(path: str | Path) -> tuple[dict, np.ndarray]:
    """(header, all records) of a small trace."""
    with TraceReader(path) as r:
        return r.header, r.read_all()
