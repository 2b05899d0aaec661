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
