"""Every he model constant that was chosen while looking at a reference, declared once: what it
was chosen against (targets), which report rows depend on it (applies), how and when.

Rows under a constant fitted on their own key are calibrated; rows that depend on none of these
are predictions of the model. The TACO cost model has one fitted constant: its time, energy and
power (and everything divided by them: speedups, energy gains) are predictions."""

from __future__ import annotations

CONSTANTS = (
    {"name": "taco_area_factor",
     "targets": ["he/taco/area_mm2"],
     "applies": ["he/taco/area_mm2"],
     "how": "fit: veil.he.taco.design.calibrate, area factor = 19.3 mm^2 (the paper's chosen design) "
            "/ the raw area of the design the selection rule picks at (8192, 3); the selection does "
            "not depend on it (it scales every design's area alike)",
     "when": "2026-11-26",
     "value": 1.7644},
)


def register() -> None:
    """Declares the constants in the report's provenance registry, where the core has one."""
    try:
        from veil.core import register_constant  # type: ignore[attr-defined]
    except ImportError:
        return
    for c in CONSTANTS:
        register_constant("he", c["name"], targets=c["targets"], applies=c["applies"], how=c["how"],
                          when=c["when"], value=c["value"])


register()
