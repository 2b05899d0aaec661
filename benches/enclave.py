"""Wall time of the whole Fig. 2 sweep (both policies, five models, 4..64 workers, 1000 requests
each), run in Rust on every core (rayon), as `veil reproduce enclave` needs it."""

import os
import time

from veil.core import register_benchmark
from veil.enclave.reproduce import MODELS, POLICIES, WORKERS
from veil.enclave.server import ServerConfig, native_config, simulate_many


@register_benchmark("enclave", doc="Fig. 2 sweep of the SSE paper: 50 simulations of 1000 requests")
def bench(ctx) -> None:
    cfgs = [native_config(ServerConfig(model=m, policy=p, workers=w)) for p in POLICIES for m in MODELS for w in WORKERS]
    t0 = time.perf_counter()
    res = simulate_many(cfgs)
    secs = time.perf_counter() - t0
    events = sum(r["counters"]["events"] for r in res)
    accesses = sum(r["l1d_accesses"] for r in res)
    ctx.report("enclave/fig2_sweep_seconds", secs, "s", target=f"< 30 on 2 cores (here {os.cpu_count()})")
    ctx.report("enclave/sims_per_second", len(cfgs) / secs, "sims/s")
    ctx.report("enclave/events_per_second", events / secs, "events/s")
    ctx.report("enclave/cache_accesses_per_second", accesses / secs, "L1 accesses/s")
