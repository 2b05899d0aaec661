"""TACO's cost model and design space: per-block PEs and SRAM, a cycle model of the schedule,
time / energy / power / area for every configuration, the Pareto frontier and the paper's
selection rule.

Organisation (a reconstruction: the paper's Fig. 7 is not in the translated text). One *lane*
per key-level RNS prime, replicated: each lane has an NTT unit (memory for u), a dyadic unit
(memory for its share of the public and secret keys, a streaming buffer), an INTT unit (memory for c0 and
c1) and an element-wise unit (error add, special-prime drop, Delta*m, decryption's add and
scale-and-round; a streaming buffer). One sampler (BLAKE2b cores running SEAL's BLAKE2Xb PRNG,
+ samplers) feeds every lane,
because u and the errors are shared by all primes. Lanes run in parallel, so hardware time
depends on N and not on k; area and energy grow with k.

Knobs (the paper's sweep): PEs 1..16 (powers of two) for each of sampler, NTT, dyadic, INTT,
element-wise; SRAM per lane 128..1024 bytes for the streaming blocks (sampler, dyadic,
element-wise); NTT/INTT memories are fixed by N. A streaming block with P PEs needs at least
P operand sets (3 words each) resident, and a sampler P 64-byte BLAKE2b outputs: smaller SRAMs
are not valid designs. Every operation count comes from running the datapath
(`datapath.op_counts`), not from formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from veil.core import ConfigError
from veil.he.taco import units as U

PES = (1, 2, 4, 8, 16)
SRAMS = (128, 256, 512, 1024)
WORD = 8
OPERAND_WORDS = 3             # two operands in, one result out
BF_DEPTH = U.MULT_STAGES + U.ADD_STAGES
POWER_CAP_W = 0.200           # the paper's selection rule
WITHIN = 0.01

# The paper's chosen design at (N=8192, k=3): its area is the one calibration target; its
# time and energy are references the model predicts, never fitted to.
PAPER = {"area_mm2": 19.3, "enc_mj": 0.1228, "enc_ms": 0.66}

KNOBS = ("pe_sample", "sram_sample", "pe_ntt", "pe_dyadic", "sram_dyadic", "pe_intt",
         "pe_elem", "sram_elem")


def check_pe(name: str, p: int) -> None:
    if p not in PES:
        raise ConfigError(f"{name}: {p} PEs is not a power of two in 1..16")


def min_sram(block: str, pe: int) -> int:
    """The smallest SRAM per lane a block with `pe` PEs can work with (bytes)."""
    if block == "sample":
        return 64 * pe
    return OPERAND_WORDS * WORD * pe


def check_design(d: dict) -> None:
    """ConfigError (one line) for a design outside the space."""
    for k in KNOBS:
        if k not in d:
            raise ConfigError(f"design: missing {k}")
    for blk in ("sample", "ntt", "dyadic", "intt", "elem"):
        check_pe(f"design.pe_{blk}", int(d[f"pe_{blk}"]))
    for blk in ("sample", "dyadic", "elem"):
        s, p = int(d[f"sram_{blk}"]), int(d[f"pe_{blk}"])
        if not 1 <= s <= 1 << 20:
            raise ConfigError(f"design.sram_{blk}: {s} bytes outside 1..1 MiB")
        if s < min_sram(blk, p):
            raise ConfigError(f"design.sram_{blk}: {s} bytes is below the {blk} block's minimum of "
                              f"{min_sram(blk, p)} bytes for {p} PEs")


def space() -> dict[str, np.ndarray]:
    """Every valid configuration, one array per knob."""
    def pairs(block):
        return [(p, s) for p in PES for s in SRAMS if s >= min_sram(block, p)]
    ps, pd, pe = pairs("sample"), pairs("dyadic"), pairs("elem")
    grid = np.array([(a[0], a[1], n, b[0], b[1], i, c[0], c[1])
                     for a in ps for n in PES for b in pd for i in PES for c in pe], dtype=np.int64)
    return {k: grid[:, j] for j, k in enumerate(KNOBS)}


def take(sp: dict, idx) -> dict:
    return {k: int(v[idx]) for k, v in sp.items()}


def take_arrays(sp: dict, idx) -> dict:
    """One design of a space, as a one-point space."""
    return {k: np.asarray(v[idx:idx + 1]) for k, v in sp.items()}


@dataclass(frozen=True)
class Calibration:
    area_factor: float = 1.0          # periphery, wiring, control, pipeline registers
    # leakage power density of the calibrated area; 0 in the calibration (not modelled), kept
    # so a published figure can be tried without touching the model
    leak_mw_per_mm2: float = 0.0
    # every dynamic energy times this: an assumption with a declared range (veil.he.provenance),
    # 1 = Horowitz's bare 45 nm operators; `veil explain` moves it
    energy_scale: float = 1.0


@dataclass
class Workload:
    """Counts from one datapath run (encryption and decryption) at one parameter set."""
    n: int
    k: int                             # key-level primes = lanes
    enc: dict
    dec: dict

    @classmethod
    def from_counts(cls, c: dict) -> "Workload":
        return cls(c["n"], c["primes"], c["enc"], c["dec"])

    def g(self, side: str, block: str, field: str) -> float:
        return float(getattr(self, side).get(block, {}).get(field, 0))


def _stream_thr(pe, sram):
    """Operations per cycle of a streaming block: its PEs, or what its buffer can keep in
    flight through the 3-stage multiplier pipeline."""
    return np.minimum(pe, sram / (OPERAND_WORDS * WORD * U.MULT_STAGES))


def _elem_ops(w: Workload, side: str, blocks, lanes: int) -> float:
    """Element-wise PE-cycles per lane: each PE does one modmul, two modadds, one divide a cycle."""
    mm = sum(w.g(side, b, "modmuls") for b in blocks)
    ma = sum(w.g(side, b, "modadds") for b in blocks)
    dv = sum(w.g(side, b, "divides") for b in blocks)
    return max(mm / lanes, ma / lanes / 2, dv)


def block_cycles(sp: dict, w: Workload) -> dict[str, np.ndarray]:
    """Cycle model: per-lane block times and the schedule of one encryption and decryption."""
    n, K = w.n, w.k
    L = K - 1
    stages = int(round(math.log2(n)))
    ps = sp["pe_sample"].astype(float)
    pn, pdy, sdy = sp["pe_ntt"].astype(float), sp["pe_dyadic"].astype(float), sp["sram_dyadic"].astype(float)
    pi, pe, se = sp["pe_intt"].astype(float), sp["pe_elem"].astype(float), sp["sram_elem"].astype(float)

    def hash_cycles(block):
        """Cycles the sampler's cores need for the hash work one block's samples took (SEAL's
        PRNG: 66 BLAKE2b compressions per 4096 bytes)."""
        return w.g("enc", block, "prng_blocks") * U.HASH_CYCLES_PER_BLOCK / ps

    def ntt_cycles(side, block, lanes, transforms, pes):
        bf = w.g(side, block, "butterflies") / lanes / transforms
        extra = (w.g(side, block, "modmuls") - w.g(side, block, "butterflies")) / lanes / transforms
        return (bf + extra) / pes + stages * BF_DEPTH

    # encryption: sample u -> NTT -> dyadic c0 -> INTT c0 (dyadic c1 alongside) -> INTT c1;
    # the element-wise tail of c0 overlaps INTT c1, the errors stream from the sampler
    t_u = np.maximum(hash_cycles("sample_u"), n / ps) + U.HASH_CYCLES_PER_BLOCK
    t_ntt = ntt_cycles("enc", "ntt", K, 1, pn)
    dy_thr = _stream_thr(pdy, sdy)
    t_dy = w.g("enc", "dyadic", "modmuls") / K / 2 / dy_thr + U.MULT_STAGES
    t_intt = ntt_cycles("enc", "intt", K, 2, pi)
    el_thr = _stream_thr(pe, se)
    el_ops = _elem_ops(w, "enc", ("errors", "modswitch", "scale"), K)
    e_rate = hash_cycles("sample_e") / 2
    t_el = np.maximum(el_ops / 2 / el_thr, e_rate) + U.MULT_STAGES
    t_d0 = t_u + t_ntt + t_dy
    t_i0 = t_d0 + t_intt
    t_i1 = np.maximum(t_i0, t_d0 + t_dy) + t_intt
    cyc = np.maximum(t_i1, t_i0 + t_el) + t_el
    # decryption over the L data lanes: NTT(c1) -> dyadic s -> INTT -> add c0, scale and round
    d_ntt = ntt_cycles("dec", "ntt", L, 1, pn)
    d_dy = w.g("dec", "dyadic", "modmuls") / L / dy_thr + U.MULT_STAGES
    d_intt = ntt_cycles("dec", "intt", L, 1, pi)
    d_el = _elem_ops(w, "dec", ("add", "scale_round"), L) / el_thr + U.MULT_STAGES
    return {"enc": cyc, "dec": d_ntt + d_dy + d_intt + d_el,
            "enc_ntt_dyadic": t_ntt + 2 * t_dy + 2 * t_intt, "dec_ntt_dyadic": d_ntt + d_dy + d_intt,
            "sample_u": t_u, "ntt": t_ntt, "dyadic": t_dy, "intt": t_intt, "elem": t_el}


def evaluate(sp: dict, w: Workload, cal: Calibration = Calibration()) -> dict[str, np.ndarray]:
    """Time (s), energy (J), power (W) and area (mm^2) of one encryption (and decryption
    time/energy) for every configuration in `sp`."""
    return apply(base(sp, w), cal)


def apply(b: dict, cal: Calibration) -> dict[str, np.ndarray]:
    """The calibration constants on top of the uncalibrated figures (cheap: no cycle model)."""
    area = b["raw_area_mm2"] * cal.area_factor
    leak_w = cal.leak_mw_per_mm2 * 1e-3 * area
    energy = b["dyn_j"] * cal.energy_scale + leak_w * b["time_s"]
    return {**b, "area_mm2": area, "leak_w": leak_w, "energy_j": energy, "power_w": energy / b["time_s"],
            "dec_energy_j": b["dec_dyn_j"] * cal.energy_scale + leak_w * b["dec_time_s"]}


def base(sp: dict, w: Workload) -> dict[str, np.ndarray]:
    """Cycle model, dynamic energy and raw area: everything before calibration."""
    n, K = w.n, w.k
    ps, ss = sp["pe_sample"].astype(float), sp["sram_sample"].astype(float)
    pn, pdy, sdy = sp["pe_ntt"].astype(float), sp["pe_dyadic"].astype(float), sp["sram_dyadic"].astype(float)
    pi, pe, se = sp["pe_intt"].astype(float), sp["pe_elem"].astype(float), sp["sram_elem"].astype(float)
    cycles = block_cycles(sp, w)
    cyc, dcyc = cycles["enc"], cycles["dec"]

    # ---------------- area (um^2)
    uu = U.UNITS
    a_bf = uu["modmul"][1] + 2 * uu["modadd"][1]
    a_el = uu["modmul"][1] + 2 * uu["modadd"][1] + uu["divider"][1]
    # resident per lane: u (N words), c0/c1 (2N), the public key's share (2N), the secret
    # key's share for decryption (N)
    mem_u, mem_c, mem_pk, mem_sk = n * WORD, 2 * n * WORD, 2 * n * WORD, n * WORD
    lane = (pn * a_bf + U.sram_area_um2(mem_u)
            + pdy * uu["modmul"][1] + U.sram_area_um2(sdy) + U.sram_area_um2(mem_pk + mem_sk)
            + pi * a_bf + U.sram_area_um2(mem_c)
            + pe * a_el + U.sram_area_um2(se))
    # a sampler core: one BLAKE2b G unit (its 16-word state registers are in the area factor)
    shared = ps * (uu["blake2b_g"][1] + uu["sampler"][1]) + U.sram_area_um2(ss)
    raw_area = (K * lane + shared) * 1e-6

    # ---------------- dynamic energy (pJ)
    e_mm, e_ma, e_dv = uu["modmul"][0], uu["modadd"][0], uu["divider"][0]

    def arith(side, block):
        return (w.g(side, block, "modmuls") * e_mm + w.g(side, block, "modadds") * e_ma
                + w.g(side, block, "divides") * e_dv)

    def acc(side, block):
        return w.g(side, block, "sram_reads") + w.g(side, block, "sram_writes")

    # NTT/INTT memories are banked two banks per PE; a streaming access touches its buffer
    # and a bank of the big memory it streams from or to.
    e_ntt_bank = U.sram_read_pj(mem_u / (2 * pn))
    e_intt_bank = U.sram_read_pj(mem_c / (2 * pi))
    e_pk_bank = U.sram_read_pj(mem_pk / (2 * pdy))
    e_buf_dy, e_buf_el, e_buf_s = U.sram_read_pj(sdy), U.sram_read_pj(se), U.sram_read_pj(ss)

    def side_energy(side, el_blocks):
        e = arith(side, "ntt") + acc(side, "ntt") * e_ntt_bank
        e = e + arith(side, "intt") + acc(side, "intt") * e_intt_bank
        e = e + arith(side, "dyadic") + acc(side, "dyadic") * (e_buf_dy + (e_pk_bank + e_intt_bank) / 2)
        for b in el_blocks:
            e = e + arith(side, b) + acc(side, b) * (e_buf_el + e_intt_bank)
        return e

    e_enc = side_energy("enc", ("errors", "modswitch", "scale"))
    for b in ("sample_u", "sample_e"):
        e_enc = e_enc + (w.g("enc", b, "prng_blocks") * U.HASH_G_PER_BLOCK * uu["blake2b_g"][0]
                         + w.g("enc", b, "prng_bytes") / WORD * 2 * e_buf_s
                         + w.g("enc", b, "coeffs") * uu["sampler"][0]
                         + w.g("enc", b, "modadds") * e_ma
                         + w.g("enc", b, "sram_writes") * e_ntt_bank)
    e_dec = side_energy("dec", ("add", "scale_round"))

    return {"time_s": cyc / U.CLOCK_HZ, "raw_area_mm2": raw_area + 0 * cyc,
            "dyn_j": e_enc * 1e-12 + 0 * cyc, "dec_time_s": dcyc / U.CLOCK_HZ,
            "dec_dyn_j": e_dec * 1e-12 + 0 * dcyc, "cycles": cyc, "dec_cycles": dcyc, "space": sp}


def pareto(*objs: np.ndarray) -> np.ndarray:
    """Mask of points no other point dominates (all objectives minimised; <= in all and <
    in one). Sweep in lexicographic order with a prefix-minimum Fenwick tree over the second
    objective's ranks (three objectives) or a running minimum (two)."""
    pts = np.column_stack(objs)
    uniq, inv = np.unique(pts, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    keep = np.zeros(len(uniq), dtype=bool)
    if uniq.shape[1] == 2:
        best = np.inf
        for j, (_, b) in enumerate(uniq):
            if b < best:
                keep[j] = True
                best = b
        return keep[inv]
    if uniq.shape[1] != 3:
        raise ValueError("pareto: two or three objectives")
    ranks = np.searchsorted(np.unique(uniq[:, 1]), uniq[:, 1]) + 1
    size = int(ranks.max())
    tree = [math.inf] * (size + 1)
    for j in range(len(uniq)):
        r, c = int(ranks[j]), float(uniq[j, 2])
        i, m = r, math.inf
        while i > 0:
            if tree[i] < m:
                m = tree[i]
            i -= i & -i
        if m > c:
            keep[j] = True
        i = r
        while i <= size:
            if c < tree[i]:
                tree[i] = c
            i += i & -i
    return keep[inv]


def select(res: dict, cap_w: float = POWER_CAP_W, within: float = WITHIN) -> int:
    """The paper's rule: under the power cap, the smallest design whose runtime is within 1%
    of the best runtime and whose energy is within 1% of the best energy among those."""
    ok = res["power_w"] <= cap_w
    if not ok.any():
        raise ConfigError(f"power_cap_mw = {cap_w * 1e3:.4g}: no design draws this little power; the "
                          f"lowest reachable is {res['power_w'].min() * 1e3:.4g} mW")
    t = np.where(ok, res["time_s"], np.inf)
    c1 = t <= t.min() * (1 + within)
    e = np.where(c1, res["energy_j"], np.inf)
    c2 = e <= e.min() * (1 + within)
    a = np.where(c2, res["area_mm2"], np.inf)
    return int(np.argmin(a))


def calibrate(sp: dict, w: Workload, cap_w: float = POWER_CAP_W,
              area_mm2: float = PAPER["area_mm2"], energy_scale: float = 1.0) -> tuple[Calibration, int]:
    """Fit the one global constant, the area factor, so the selected design at the paper's
    point (N=8192, k=3) has the paper's 19.3 mm^2. Nothing else is fitted: energy is the
    counted operations times published unit energies, time the cycle model, power their
    quotient; leakage is not modelled (no published per-area figure for the process among
    the sources used), so the energy is dynamic only. The area factor scales every design's
    area alike, so the selection (argmin area among ties) does not depend on it: the selected
    design, its time, energy and power are the same whatever the area target."""
    if not area_mm2 > 0:
        raise ConfigError(f"calibration: area target {area_mm2} mm^2 must be positive")
    res = evaluate(sp, w, Calibration(1.0, 0.0, energy_scale))
    idx = select(res, cap_w)
    return Calibration(float(area_mm2 / res["raw_area_mm2"][idx]), 0.0, energy_scale), idx


def cap_margin_w(res: dict, idx: int, cap_w: float = POWER_CAP_W) -> float:
    """How far below the power cap the selected design runs (W): the rule takes the fastest
    design under the cap, so a design close to it says the cap, not the model, bounds time."""
    return float(cap_w - res["power_w"][idx])
