"""45 nm unit costs for TACO's blocks. Every row names its published source; derived rows say
how they were derived. No row is fitted: the only fitted number is the global area
factor in `design.calibrate` (periphery and wiring over the bare units; registered in
`veil.he.provenance`).

Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014, Fig. 1.1.9
(45 nm, 0.9 V): energy per operation and area per unit, and 64-bit SRAM reads by array size.
"""

from __future__ import annotations

import math

CLOCK_HZ = 100e6           # the paper: energy-optimised SRAM access latency limits the clock
MULT_STAGES = 3            # the paper: three-stage pipelined multiplier and divider
ADD_STAGES = 1

# (name, energy pJ, area um^2, source)
HOROWITZ = {
    "add32": (0.1, 137.0, "Horowitz ISSCC 2014: 32-bit integer add, 45 nm"),
    "mult32": (3.1, 3495.0, "Horowitz ISSCC 2014: 32-bit integer multiply, 45 nm"),
    "add8": (0.03, 36.0, "Horowitz ISSCC 2014: 8-bit integer add, 45 nm"),
}
# 64-bit reads: (bytes, pJ)
SRAM_READ_POINTS = ((8 * 1024, 10.0), (32 * 1024, 20.0), (1024 * 1024, 100.0))
SRAM_SOURCE = "Horowitz ISSCC 2014: 64-bit SRAM read, 8 KB 10 pJ, 32 KB 20 pJ, 1 MB 100 pJ (45 nm)"
# Intel 45 nm high-k/metal-gate 6T cell (Mistry et al., IEDM 2007): 0.346 um^2 per bit. The
# array periphery (decoders, sense amplifiers) is in the area calibration constant.
SRAM_BIT_UM2 = 0.346
SRAM_BIT_SOURCE = "Mistry et al., IEDM 2007: Intel 45 nm 6T SRAM cell 0.346 um^2"


def _e(name: str) -> float:
    return HOROWITZ[name][0]


def _a(name: str) -> float:
    return HOROWITZ[name][1]


# Derived units. Adders scale linearly with width, array multipliers with width squared.
UNITS = {
    # name: (energy pJ per op, area um^2, derivation)
    "modadd": (2 * 2 * _e("add32"), 2 * 2 * _a("add32"),
               "64-bit add + conditional subtract: 2 x (2 x 32-bit add)"),
    "mult64": (4 * _e("mult32"), 4 * _a("mult32"), "64x64 multiply: 4 x 32-bit multiply (width^2)"),
    "modmul": (3 * 4 * _e("mult32") + 2 * 2 * _e("add32"), 3 * 4 * _a("mult32") + 2 * 2 * _a("add32"),
               "Barrett modular multiply: 3 x 64x64 multiply + 64-bit subtract and correction"),
    "divider": (4 * _e("mult32") + 2 * _e("add32"), 4 * _a("mult32") + 2 * _a("add32"),
                "divide by the constant t: 64x64 multiply by a precomputed reciprocal + add"),
    # BLAKE2b's G function (SEAL's default PRNG is BLAKE2Xb): 6 additions and 4 XORs of 64-bit
    # words (XOR costed as an add, an upper bound; rotations are wiring); a compression is
    # 12 rounds x 8 G = 96 G and yields 64 output bytes.
    "blake2b_g": (10 * 2 * _e("add32"), 10 * 2 * _a("add32"),
                  "BLAKE2b G: 6 adds + 4 XORs (64-bit = 2 x 32-bit), XOR at add cost"),
    "sampler": (4 * _e("add8"), 4 * _a("add8"),
                "sampler: popcount/compare on bytes, 4 x 8-bit add per coefficient"),
}
HASH_G_PER_BLOCK = 96                  # BLAKE2b: 12 rounds x 8 G per compression
HASH_CYCLES_PER_BLOCK = 96 + 4         # one G per cycle per core, plus a 4-cycle hand-over


def sram_read_pj(nbytes) -> "float | ndarray":
    """64-bit access energy of an SRAM array of `nbytes`, interpolated log-log through
    Horowitz's three points; below 8 KB extrapolated with the 8-32 KB slope (0.5)."""
    import numpy as np
    x = np.log(np.maximum(np.asarray(nbytes, dtype=float), 64.0))
    xs = np.log([p[0] for p in SRAM_READ_POINTS])
    ys = np.log([p[1] for p in SRAM_READ_POINTS])
    lo_slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
    y = np.where(x < xs[0], ys[0] + lo_slope * (x - xs[0]), np.interp(x, xs, ys))
    return np.exp(y)


def sram_area_um2(nbytes) -> "float | ndarray":
    return nbytes * 8 * SRAM_BIT_UM2


def table() -> list[dict]:
    """The cost table as printed in the docs and the report."""
    rows = [{"unit": k, "energy_pj": v[0], "area_um2": v[1], "source": v[2]} for k, v in HOROWITZ.items()]
    rows += [{"unit": k, "energy_pj": v[0], "area_um2": v[1], "source": "derived: " + v[2]}
             for k, v in UNITS.items()]
    for b in (128, 1024, 8 * 1024, 64 * 1024, 128 * 1024):
        rows.append({"unit": f"sram {b} B (64-bit access)", "energy_pj": float(sram_read_pj(b)),
                     "area_um2": float(sram_area_um2(b)),
                     "source": SRAM_SOURCE if b >= 8192 else SRAM_SOURCE + "; extrapolated"})
    rows.append({"unit": "sram bit", "energy_pj": math.nan, "area_um2": SRAM_BIT_UM2, "source": SRAM_BIT_SOURCE})
    return rows
