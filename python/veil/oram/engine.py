"""Thin access to the Rust engine (`veil._native.oram`), with its errors mapped to Veil's."""

from __future__ import annotations

import json
from typing import Any

from veil.core import ConfigError, VeilError


# PRO-ORAM's request clock follows the median of the last 16 steady-state shuffles (the first
# three after a start are not steady): its latency spread is measured once the clock has them,
# as on a server that has been up for a while. Before that the period still moves.
STEADY_EPOCHS = 20


def epoch_len(n_blocks: int) -> int:
    """PRO-ORAM's requests per epoch, T = ceil(sqrt N)."""
    return int((n_blocks - 1) ** 0.5) + 1


def steady_warmup(n_blocks: int) -> int:
    """Requests before a PRO-ORAM store of n_blocks serves at its steady-state clock."""
    return STEADY_EPOCHS * epoch_len(n_blocks)


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
