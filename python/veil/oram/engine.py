"""Thin access to the Rust engine (`veil._native.oram`), with its errors mapped to Veil's."""

from __future__ import annotations

import json
from typing import Any

from veil.core import ConfigError, VeilError


def native():
    from veil import _native

    return _native.oram


def run(config: dict[str, Any]) -> dict[str, Any]:
    """One measured run (see `veil_oram::measure::RunConfig`)."""
    try:
        return json.loads(native().run(json.dumps(config)))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    except RuntimeError as e:
        raise VeilError(str(e)) from None
