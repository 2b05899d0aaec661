"""`he.taco`: the design-space exploration at one parameter set, or one named design."""

from __future__ import annotations

import time

import numpy as np
from typing import Literal

from pydantic import Field

from veil.core import ConfigError, ExperimentConfig, register_experiment
from veil.he.params import HEParams, validate
from veil.he.taco import client as C
from veil.he.taco import datapath as dp
from veil.he.taco import design as D


class TacoConfig(ExperimentConfig):
    poly_degree: int = Field(8192, description="N of the workload the design space is explored at")
    coeff_bits: list[int] = Field([43, 43, 44], description="prime sizes, special prime last")
    plain_bits: int = Field(20, description="plain modulus bits")
    power_cap_mw: float = Field(200.0, gt=0, description="selection rule: power cap (mW)")
    design: dict[str, int] = Field({}, description="evaluate one design instead of selecting: "
                                   "pe_sample, sram_sample, pe_ntt, pe_dyadic, sram_dyadic, "
                                   "pe_intt, pe_elem, sram_elem (PEs 1..16, SRAM bytes per lane); "
                                   "knobs not named keep the selected design's values")
    frontier: bool = Field(True, description="compute the time/power/area Pareto frontier")
    energy_scale: float = Field(1.0, gt=0, le=100, description="every unit energy times this (1: Horowitz's bare "
                                "45 nm operators; an assumption with a declared range, moved by `veil explain`)")
    a7_cycle_scale: float = Field(1.0, gt=0, le=100, description="the op-count i.MX6 model's Cortex-A7 cycles per "
                                  "operation times this (an assumption with a declared range)")
    select_at: Literal["reference", "params"] = Field(
        "reference", description="where the selection rule picks the design: 'reference' = the "
        "paper's point (8192, 3 primes), then evaluated with one lane per prime at these "
        "parameters (Fig. 9); 'params' = at these parameters")


def workload(p: HEParams) -> D.Workload:
    validate(p)
    return D.Workload.from_counts(dp.op_counts(p.poly_degree, tuple(p.coeff_bits), p.plain_bits))


def explore(cfg: TacoConfig) -> dict:
    p = HEParams(cfg.poly_degree, tuple(cfg.coeff_bits), cfg.plain_bits)
    for k, v in cfg.design.items():
        if k not in D.KNOBS:
            raise ConfigError(f"design.{k}: unknown knob; known: {', '.join(D.KNOBS)}")
        if k.startswith("pe_"):
            D.check_pe(f"design.{k}", v)
    validate(p)
    # calibration is global: always at the paper's point (N=8192, 3 primes)
    w_ref = workload(HEParams(8192, (43, 43, 44), 20))
    sp = D.space()
    cal, _ = D.calibrate(sp, w_ref, cfg.power_cap_mw * 1e-3, energy_scale=cfg.energy_scale)
    w = w_ref if (p.poly_degree, tuple(p.coeff_bits)) == (8192, (43, 43, 44)) else workload(p)
    t0 = time.perf_counter()
    res = D.evaluate(sp, w, cal)
    eval_s = time.perf_counter() - t0
    at = res if cfg.select_at == "params" else D.evaluate(sp, w_ref, cal)
    chosen = D.select(at, cfg.power_cap_mw * 1e-3)
    if cfg.design:
        # knobs not named keep the selected design's values
        full = {**D.take(sp, chosen), **cfg.design}
        D.check_design(full)
        one = {k: np.array([int(full[k])]) for k in D.KNOBS}
        res1 = D.evaluate(one, w, cal)
        idx, res, sp = 0, res1, one
    else:
        idx = chosen
    front = D.pareto(res["time_s"], res["power_w"], res["area_mm2"]) if cfg.frontier and not cfg.design else None
    acc = C.accel_times(w, res, idx, cfg.a7_cycle_scale)
    return {"params": p.to_dict(), "configs": int(len(sp["pe_ntt"])), "eval_s": eval_s,
            "calibration": {"area_factor": cal.area_factor, "leak_mw_per_mm2": cal.leak_mw_per_mm2,
                            "energy_scale": cal.energy_scale},
            "design": D.take(sp, idx),
            "area_mm2": float(res["area_mm2"][idx]), "enc_ms": float(res["time_s"][idx] * 1e3),
            "enc_mj": float(res["energy_j"][idx] * 1e3), "power_mw": float(res["power_w"][idx] * 1e3),
            "power_margin_mw": D.cap_margin_w(res, idx, cfg.power_cap_mw * 1e-3) * 1e3,
            "dec_ms": float(res["dec_time_s"][idx] * 1e3), "dec_mj": float(res["dec_energy_j"][idx] * 1e3),
            "frontier_size": int(front.sum()) if front is not None else None,
            "accel": acc, "counts": {"enc": w.enc, "dec": w.dec}}


@register_experiment("he.taco", TacoConfig, results={
    "params.*": ("", "the HE parameter set: poly_degree (N), coeff_bits (prime bits), plain_bits, log_q, "
                     "ct_primes (primes left in a ciphertext), ct_bytes (serialized ciphertext, bytes)"),
    "configs": ("", "designs evaluated in the design space"),
    "eval_s": ("s", "wall time to evaluate the whole design space"),
    "calibration.area_factor": ("", "global area factor (periphery and wiring over the summed units), fitted "
                                    "once to the paper's chosen design's area (the only fitted constant)"),
    "calibration.leak_mw_per_mm2": ("mW/mm^2", "leakage per area: 0, not modelled (energy is dynamic only)"),
    "calibration.energy_scale": ("", "the factor every unit energy was multiplied by (config energy_scale)"),
    "design.pe_*": ("", "processing elements of each block of the selected design"),
    "design.sram_*": ("B", "SRAM per RNS lane of each block of the selected design"),
    "area_mm2": ("mm^2", "area of the selected design"),
    "enc_ms": ("ms", "one public-key encryption on the selected design"),
    "enc_mj": ("mJ", "energy of one encryption on the selected design"),
    "power_mw": ("mW", "average power of the selected design while encrypting (energy / time)"),
    "power_margin_mw": ("mW", "how far the design's power is below the power cap"),
    "dec_ms": ("ms", "one decryption on the selected design"),
    "dec_mj": ("mJ", "energy of one decryption on the selected design"),
    "frontier_size": ("", "designs on the time/power/area Pareto frontier (null when not computed)"),
    "accel.*_s": ("s", "time per encryption/decryption: TACO, the i.MX6 software model, the NTT/dyadic-only "
                       "(HEAX-like) accelerator"),
    "accel.*_j": ("J", "energy per encryption/decryption: TACO and the i.MX6 software model"),
    "accel.ntt_dyadic_share_*": ("", "share of the i.MX6 software time spent in NTT/INTT/dyadic steps"),
    "counts.*": ("", "operations counted while the datapath ran, per operation (enc/dec) and block: "
                     "butterflies, modmuls, modadds, divides, sram_reads, sram_writes, prng_bytes, "
                     "prng_blocks, coeffs"),
}, doc="CHOCO-TACO: design space of the HE encryption "
                     "accelerator (counts from the executable datapath), the selected design, "
                     "its speedups over the i.MX6 model")
def taco(cfg: TacoConfig) -> dict:
    return explore(cfg)

