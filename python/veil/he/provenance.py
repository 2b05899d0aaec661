"""The he system's constants chosen while looking at the paper's numbers, declared once: the
report derives the TACO rows' basis from them (veil.core.provenance)."""

from veil.core import register_constant

_FIT = ("fit: veil.he.taco.design.calibrate, at every he.taco run (fixed point of fit-and-select on the paper's "
        "chosen design at N = 8192, 3 primes)")

register_constant("he", "taco_area_factor", targets=["he/taco/area_mm2"], applies=["he/taco/*"], how=_FIT,
                  when="2026-11-22", why="periphery, wiring and control over the summed unit areas")
register_constant("he", "taco_leak_mw_per_mm2", targets=["he/taco/enc_mj"], applies=["he/taco/*"], how=_FIT,
                  when="2026-11-22", why="leakage per area, chosen so the selected design's energy is the paper's")
