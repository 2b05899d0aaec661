"""Synthetic block contents, the same function as `veil_oram::data::synthetic_block`, so a client
can check every byte it gets from a synthetic store."""

from __future__ import annotations

_M = (1 << 64) - 1


def _splitmix(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M
    return z ^ (z >> 31)


def synthetic_block(seed: int, block_id: int, size: int) -> bytes:
    x = _splitmix(seed ^ _splitmix(block_id))
    out = bytearray()
    while len(out) < size:
        x = _splitmix(x)
        out += x.to_bytes(8, "little")
    out = out[:size]
    if size >= 8:
        out[:8] = block_id.to_bytes(8, "little")
    return bytes(out)
