"""The client's software side, priced from the same counted operations: SEAL's encryption and
decryption on the paper's i.MX6 (Cortex-A7, 528 MHz, 269.5 mW), and a HEAX-like partial
accelerator (NTT, INTT and dyadic products in hardware, everything else in software).

Cycles per counted operation are estimates for SEAL's portable 64-bit code compiled for
32-bit ARMv7 on an in-order, dual-issue core; they are not measured on an i.MX6 (Veil has
none) and were not chosen by looking at the paper's results:
* a 64x64 -> 128-bit product is 4 UMULL/UMLAL plus ~8 carry adds and moves (~20 instructions,
  the multiplier does not dual-issue): a Shoup/Harvey butterfly (one high product, one low
  product, lazy add/sub) ~40 cycles; a Barrett modular multiply (three wide products) ~60;
* a 64-bit modular add/sub on 32-bit halves with the conditional correction ~6;
* a 128/64 division (plaintext scaling) in software ~100;
* SEAL's default PRNG, BLAKE2Xb (portable C, no NEON): a BLAKE2b compression is 96 G
  functions on 64-bit words; on a 32-bit core each G is ~44 instructions (6 64-bit adds as
  ADDS/ADC pairs, 4 XOR pairs, 4 64-bit rotations of 2-4 instructions, message and state
  loads/stores: the 16-word state does not fit ARMv7's registers), ~1 per cycle on the
  in-order A7: ~4,200 cycles a compression, 66 compressions per 4,096 PRNG bytes; drawing one
  ternary coefficient through `uniform_int_distribution` and writing it to every prime ~35,
  one centred-binomial coefficient ~30; copying PRNG bytes out of SEAL's 4 KB buffer ~0.25
  cycles a byte;
* memory: polynomials (64-128 KB) exceed the 32 KB L1; streaming a 64-byte line from L2 costs
  ~12 cycles, 1.5 cycles per 64-bit word touched.
"""

from __future__ import annotations

from veil.he.costmodel import IMX6_HZ, IMX6_POWER_W
from veil.he.taco import design as D

A7_CYCLES = {"butterfly": 40.0, "modmul": 60.0, "modadd": 6.0, "divide": 100.0,
             "hash_block": 4200.0, "prng_byte": 0.25, "ternary": 35.0, "cbd": 30.0, "word": 1.5}
HW_BLOCKS = ("ntt", "intt", "dyadic")


def block_cycles(c: dict, name: str) -> float:
    """A7 cycles for one block's counted work."""
    bf = c.get("butterflies", 0)
    cyc = (bf * A7_CYCLES["butterfly"] + (c.get("modmuls", 0) - bf) * A7_CYCLES["modmul"]
           + max(0, c.get("modadds", 0) - 2 * bf) * A7_CYCLES["modadd"]
           + c.get("divides", 0) * A7_CYCLES["divide"]
           + c.get("prng_blocks", 0) * A7_CYCLES["hash_block"]
           + c.get("prng_bytes", 0) * A7_CYCLES["prng_byte"]
           + (c.get("sram_reads", 0) + c.get("sram_writes", 0)) * A7_CYCLES["word"])
    if name == "sample_u":
        cyc += c.get("coeffs", 0) * A7_CYCLES["ternary"]
    elif name == "sample_e":
        cyc += c.get("coeffs", 0) * A7_CYCLES["cbd"]
    return cyc


def imx6(side: dict, cycle_scale: float = 1.0) -> dict:
    """Seconds on the i.MX6 for one encryption or decryption's counts, and the NTT/dyadic share
    (`cycle_scale`: every per-operation cycle estimate times this, an assumption with a range)."""
    per = {b: block_cycles(c, b) * cycle_scale / IMX6_HZ for b, c in side.items()}
    total = sum(per.values())
    hw = sum(v for b, v in per.items() if b in HW_BLOCKS)
    return {"s": total, "j": total * IMX6_POWER_W, "ntt_dyadic_s": hw, "ntt_dyadic_share": hw / total,
            "blocks": per}


def accel_times(w: D.Workload, res: dict, idx: int, cycle_scale: float = 1.0) -> dict:
    """Per operation: TACO's time/energy at design `idx`, the i.MX6's, and a HEAX-like
    accelerator's (TACO's NTT/INTT/dyadic blocks for those steps, the i.MX6 for the rest, no
    overlap), for encryption and decryption."""
    enc, dec = imx6(w.enc, cycle_scale), imx6(w.dec, cycle_scale)
    # HEAX-like hardware time: the same blocks as TACO at the same PEs, run back to back
    hw = _hw_ntt_dyadic_s(w, res, idx)
    out = {"taco_enc_s": float(res["time_s"][idx]), "taco_enc_j": float(res["energy_j"][idx]),
           "taco_dec_s": float(res["dec_time_s"][idx]), "taco_dec_j": float(res["dec_energy_j"][idx]),
           "imx6_enc_s": enc["s"], "imx6_dec_s": dec["s"], "imx6_enc_j": enc["j"], "imx6_dec_j": dec["j"],
           "ntt_dyadic_share_enc": enc["ntt_dyadic_share"], "ntt_dyadic_share_dec": dec["ntt_dyadic_share"],
           "heax_enc_s": enc["s"] - enc["ntt_dyadic_s"] + hw["enc"],
           "heax_dec_s": dec["s"] - dec["ntt_dyadic_s"] + hw["dec"]}
    return out


def _hw_ntt_dyadic_s(w: D.Workload, res: dict, idx: int) -> dict:
    """Hardware seconds of only the NTT, dyadic and INTT steps (a HEAX-like unit)."""
    sp1 = {k: v[idx:idx + 1] for k, v in res["space"].items()} if "space" in res else None
    if sp1 is None:
        raise ValueError("accel_times: evaluate() results need their space (res['space'])")
    parts = D.block_cycles(sp1, w)
    return {"enc": float(parts["enc_ntt_dyadic"][0]) / D.U.CLOCK_HZ,
            "dec": float(parts["dec_ntt_dyadic"][0]) / D.U.CLOCK_HZ}
