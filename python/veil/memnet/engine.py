"""Thin layer over the Rust simulator: build the JSON config, run, decode the result.

Kept free of the framework so it can be used (and tested) on its own; the registry-facing
code lives in :mod:`veil.memnet.experiments`.
"""

from __future__ import annotations

import csv
import json
from importlib import resources
from typing import Any

from veil import _native

__all__ = ["MemnetConfigError", "MemnetRunError", "simulate", "check", "components",
           "default_config", "booksim_preset", "reference_curve"]


class MemnetConfigError(ValueError):
    """A configuration the simulator cannot run (message names the parameter)."""


class MemnetRunError(RuntimeError):
    """A run that failed: deadlock or livelock reported by the watchdog, or a broken
    conservation invariant."""


def _call(fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        from veil.core.config import name_serde_error

        msg = str(e)
        msg = msg[len("config: "):] if msg.startswith("config: ") else msg
        text = next((a for a in args if isinstance(a, str) and a.startswith("{")), "")
        raise MemnetConfigError(name_serde_error(msg, text)) from None
    except RuntimeError as e:
        raise MemnetRunError(str(e)) from None


def simulate(config: dict[str, Any]) -> dict[str, Any]:
    """Runs one simulation; `config` follows the Rust `SimConfig` (nested dicts)."""
    return json.loads(_call(_native.memnet.simulate, json.dumps(config)))


def check(config: dict[str, Any]) -> None:
    _call(_native.memnet.check, json.dumps(config))


def components() -> list[tuple[str, str, str]]:
    """(kind, name, doc) of every named component: routing, traffic, topology."""
    return [tuple(c) for c in _native.memnet.components()]


def default_config() -> dict[str, Any]:
    return json.loads(_native.memnet.default_config())


def booksim_preset(which: str, rate: float) -> dict[str, Any]:
    """The exact settings of the BookSim2 reference curves ('mesh8x8' or 'dragonfly72')."""
    cfg = default_config()
    cfg["traffic"]["rate"] = rate
    cfg["rng"] = "booksim"
    if which == "mesh8x8":
        return cfg
    if which == "dragonfly72":
        cfg["topology"] = {"kind": "dragonfly", "p": 2, "a": 4, "h": 2,
                           "local_latency": 10, "global_latency": 100}
        cfg["routing"] = "min"
        cfg["router"].update(num_vcs=2, vc_buf_size=256, internal_speedup=2.0)
        return cfg
    raise MemnetConfigError(f"preset: unknown BookSim reference '{which}' (mesh8x8, dragonfly72)")


def reference_curve(which: str) -> list[dict[str, float | None]]:
    """A BookSim2 reference curve shipped with the package (see data/README)."""
    text = resources.files("veil.memnet").joinpath("data", f"{which}.csv").read_text()
    rows = []
    for row in csv.DictReader(text.splitlines()):
        rows.append({k: (float(v) if v != "" else None) for k, v in row.items()})
    return rows
