"""Trace files given to an experiment as input (`trace = "..."`): read whole once per file
version before a run, so damage after the records the run reads is an error too, and an empty
trace is refused instead of giving a result of zeros."""

from __future__ import annotations

import os

from veil.core.errors import ConfigError

_checked: dict[tuple, int] = {}


def trace_records(path: str) -> int:
    """Records in the trace at `path` after checking every block (CRC, decoding, record kinds,
    line-aligned addresses) and its end; ConfigError naming the file and the damage otherwise."""
    from veil import _native

    try:
        st = os.stat(path)
    except OSError as e:
        raise ConfigError(f"trace: {path}: cannot read: {e.strerror}") from None
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _checked:
        try:
            n = int(_native.trace.verify(path))
        except ValueError as e:
            raise ConfigError(f"trace: {path}: {e}") from None
        if n == 0:
            raise ConfigError(f"trace: {path}: the trace holds no records (nothing to run)")
        _checked[key] = n
    return _checked[key]
