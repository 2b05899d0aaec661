"""The he system's constants chosen while looking at the paper's numbers, declared once: the
report derives the rows' basis from them (veil.core.provenance).

The TACO cost model has one fitted constant, the area factor; its time, energy and power (and
everything divided by them: speedups, energy gains, the cap margin) depend on no constant
chosen against the paper, so they are predictions."""

from veil.core import register_constant

TACO_AREA_FACTOR = register_constant(
    "he", "taco_area_factor", targets=["he/taco/area_mm2"], applies=["he/taco/area_mm2"],
    how="fit: veil.he.taco.design.calibrate, at every he.taco run: 19.3 mm^2 (the paper's chosen "
        "design) / the raw area of the design the selection rule picks at N = 8192, 3 primes",
    when="2026-11-26", value=1.7644,
    why="periphery, wiring and control over the summed unit areas; it scales every design alike, so "
        "the selection, time, energy and power do not depend on it")
