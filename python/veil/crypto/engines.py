"""Registers every engine of `veil-crypto` as a `crypto.engine` component."""

from __future__ import annotations

from veil import _native
from veil.core import register_component


def native_engines() -> list[tuple[str, str]]:
    raw = _native.crypto.engines()
    if isinstance(raw, dict):
        return sorted(raw.items())
    return [(e, "") if isinstance(e, str) else (str(e[0]), str(e[1])) for e in raw]


for _name, _doc in native_engines():
    register_component("crypto.engine", _name, _doc or f"{_name} from veil-crypto")
