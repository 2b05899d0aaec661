"""`trace_stats(path)`: what `veil trace stats` prints, computed by the Rust reader."""

from __future__ import annotations

import json
from pathlib import Path

from .format import TraceFormatError


def trace_stats(path: str | Path, ns: tuple[int, ...] = (8, 16, 32)) -> dict:
    """Per-thread instructions, fills, writebacks and MPKI; the most frequent 64-bit values among
    fetched words and the share the top N cover, for each N in `ns`."""
    from veil import _native

    p = Path(path)
    if not p.is_file():
        raise TraceFormatError(f"cannot open trace {p}: no such file")
    try:
        s = json.loads(_native.trace.stats(str(p), list(ns)))
    except ValueError as e:
        raise TraceFormatError(str(e)) from None
    s["coverage"] = {int(n): c for n, c in s["coverage"]}
    return s
