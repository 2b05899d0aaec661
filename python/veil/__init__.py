"""Veil: functional and performance models of systems that protect offloaded computation.

The Python API (docs/python.md): `veil.run`, `veil.sweep`, `veil.open_store` (results as pandas
DataFrames); bad input raises `veil.ConfigError` naming the field.
"""

from veil._native import __version__

__all__ = ["__version__", "run", "sweep", "open_store", "Store", "ConfigError", "VeilError"]

_API = {"run", "sweep", "open_store", "Store"}


def __getattr__(name: str):
    # Lazy: `import veil` stays light for the CLI and for worker processes.
    if name in _API:
        from veil import api

        return getattr(api, name)
    if name in ("ConfigError", "VeilError"):
        from veil.core import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'veil' has no attribute {name!r}")
