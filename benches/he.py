"""`veil bench he`: how much the Python pipeline adds over the SEAL operations it calls."""

from __future__ import annotations

import time

from veil.core import register_benchmark


@register_benchmark("he", doc="encrypted digits inference: pipeline wall time vs time inside SEAL")
def bench(ctx):
    from veil.he.accounting import Counts, total
    from veil.he.client import Client
    from veil.he.digits import train_digits
    from veil.he.search import search
    from veil.he.server import Server

    d = train_digits(0)
    r = search(d.model, "rr")
    # Noise-budget checks are diagnostics, not part of an inference: off for timing.
    cl = Client(d.model.net, r.params, "rr", check_noise=False)
    sv = Server(d.model)
    msg, _ = cl.setup_message()
    sv.setup(msg)
    cl.infer(sv, d.x_test[0])                    # warm caches
    per: list[Counts] = []
    n = 40
    t0 = time.perf_counter()
    for x in d.x_test[:n]:
        cl.infer(sv, x, per)
    wall = time.perf_counter() - t0
    tot = total(per)
    overhead = wall / tot.seal_s - 1
    ctx.report("he/digits_inference_ms", wall / n * 1e3, unit="ms", baseline=tot.seal_s / n * 1e3,
               baseline_name="inside SEAL", target="ratio <= 1.10")
    ctx.report("he/pipeline_overhead", overhead * 100, unit="%", target="<= 10")
    ctx.report("he/client_ms", tot.client_s / n * 1e3, unit="ms")
    ctx.report("he/server_ms", tot.server_s / n * 1e3, unit="ms")

    # TACO's design space: every configuration evaluated (time, energy, power, area) on one
    # core, against evaluating configurations one at a time (the same model, extrapolated
    # from a sample) in the same run.
    import numpy as np

    from veil.he.taco import datapath as dp
    from veil.he.taco import design as D
    w = D.Workload.from_counts(dp.op_counts(8192, (43, 43, 44)))
    sp0 = D.space()
    cal, _ = D.calibrate(sp0, w)
    t0 = time.perf_counter()
    sp = D.space()
    res = D.evaluate(sp, w, cal)
    full_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    front = D.pareto(res["time_s"], res["power_w"], res["area_mm2"])
    front_s = time.perf_counter() - t1
    sample = np.random.default_rng(0).choice(len(sp["pe_ntt"]), 300, replace=False)
    t2 = time.perf_counter()
    for i in sample:
        D.evaluate({k: v[i:i + 1] for k, v in sp.items()}, w, cal)
    one_by_one = (time.perf_counter() - t2) / len(sample) * len(sp["pe_ntt"])
    ctx.report("he/taco_design_space_s", full_s, unit="s", baseline=one_by_one,
               baseline_name="one config at a time (extrapolated)", ratio=one_by_one / full_s,
               target="< 2 s")
    ctx.report("he/taco_configs", float(len(sp["pe_ntt"])), target=">= 31340")
    ctx.report("he/taco_frontier_s", front_s, unit="s")
    ctx.log(f"frontier: {int(front.sum())} designs; calibration: area x{cal.area_factor:.2f}, "
            f"leakage {cal.leak_mw_per_mm2:.2f} mW/mm^2")
