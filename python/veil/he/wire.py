"""The bytes that cross between client and server.

A message is a small envelope around SEAL's own serialization: magic, kind, layer index, the
serialized blobs with their lengths, and a SHA-256 digest (first 16 bytes) of all of it
(SHA-256 rather than BLAKE2b: CPUs with SHA extensions hash it twice as fast). SEAL's loader only
rejects malformed headers and out-of-range coefficients; a flipped bit inside a coefficient
would decrypt to garbage silently, so the digest turns corruption into a clear error. The
envelope's bytes are counted with the payload.
"""

from __future__ import annotations

import hashlib
import struct

from veil.core import ConfigError

MAGIC = b"VHE1"
KINDS = {1: "setup", 2: "layer_input", 3: "layer_output"}
_HEAD = struct.Struct("<4sBHI")
_LEN = struct.Struct("<I")
DIGEST = 16


def _digest(data) -> bytes:
    return hashlib.sha256(data).digest()[:DIGEST]


def pack(kind: int, layer: int, blobs: list[bytes]) -> bytearray:
    # Built in place: a setup message carries hundreds of MB of Galois keys.
    buf = bytearray(_HEAD.pack(MAGIC, kind, layer, len(blobs)))
    for b in blobs:
        buf += _LEN.pack(len(b))
        buf += b
    buf += _digest(buf)
    return buf


def unpack(msg: bytes, want_kind: int, want_layer: int | None = None) -> tuple[int, list[bytes]]:
    what = KINDS.get(want_kind, str(want_kind))
    if len(msg) < _HEAD.size + DIGEST:
        raise ConfigError(f"{what} message: {len(msg)} bytes is too short to be a message")
    view = memoryview(msg)          # no copy of what may be hundreds of MB of keys
    body, digest = view[:-DIGEST], bytes(view[-DIGEST:])
    if _digest(body) != digest:
        raise ConfigError(f"{what} message: checksum mismatch, the ciphertext bytes are corrupted")
    magic, kind, layer, count = _HEAD.unpack_from(body, 0)
    if magic != MAGIC or kind != want_kind:
        raise ConfigError(f"{what} message: wrong magic or kind ({magic!r}, {kind})")
    if want_layer is not None and layer != want_layer:
        raise ConfigError(f"{what} message: for layer {layer}, expected layer {want_layer}")
    off, blobs = _HEAD.size, []
    for _ in range(count):
        if off + _LEN.size > len(body):
            raise ConfigError(f"{what} message: truncated")
        (n,) = _LEN.unpack_from(body, off)
        off += _LEN.size
        if off + n > len(body):
            raise ConfigError(f"{what} message: truncated")
        blobs.append(bytes(body[off:off + n]))
        off += n
    if off != len(body):
        raise ConfigError(f"{what} message: {len(body) - off} trailing bytes")
    return layer, blobs
