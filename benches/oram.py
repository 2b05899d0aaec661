"""`veil bench oram`: PRO-ORAM at N = 4096, B = 256 KB (1 GiB) on this machine's cores, with
Path ORAM and plain encrypted reads measured in the same run."""

from __future__ import annotations

import os

from veil.core import register_benchmark
from veil.oram.engine import run, steady_warmup

N, B = 4096, 256 * 1024


@register_benchmark("oram", doc="PRO-ORAM server time, throughput and latency spread at N=4096, B=256 KB")
def bench(ctx):
    load0 = os.getloadavg()[0]
    base = {"n_blocks": N, "block_size": B, "seed": 1, "verify": True, "link_mbps": 7.0}
    plain = run({**base, "engine": "plain", "accesses": 256, "warmup": 16})
    # untimed epochs first: every region has been written once (first touches are slow) and
    # the request clock follows a full history of steady shuffles
    pro = run({**base, "engine": "proram", "accesses": 512, "warmup": steady_warmup(N)})
    path = run({**base, "engine": "pathoram", "accesses": 48, "warmup": 8})
    for r in (plain, pro, path):
        if r["errors"]:
            raise RuntimeError(f"{r['engine']}: {r['errors']} wrong replies")
    ctx.report("oram/server_ms_per_access", pro["server_ms"], unit="ms",
               baseline=plain["server_ms"], baseline_name="plain reads", target="<= 16")
    ctx.report("oram/throughput_mbps", pro["throughput_mbps"], unit="Mbps",
               baseline=path["throughput_mbps"], baseline_name="Path ORAM", target=">= 250")
    ctx.report("oram/p99_over_p50", pro["p99_over_p50"], unit="", target="<= 1.2")
    ctx.report("oram/bytes_per_access", pro["bytes_per_access"], unit="B")
    ctx.report("oram/pathoram_throughput_mbps", path["throughput_mbps"], unit="Mbps")
    ctx.report("oram/pathoram_bytes_per_access", path["bytes_per_access"], unit="B")
    ctx.report("oram/private_cache_blocks", pro["private_cache_blocks"], unit="blocks", target="sqrt(N) = 64")
    ctx.report("oram/shuffle_ms_per_access", pro["shuffle_ms_per_access"], unit="ms")
    ctx.report("oram/crypto_core_ms_per_access", pro["crypto_core_ms"], unit="core-ms")
    ctx.report("oram/storage_core_ms_per_access", pro["storage_core_ms"], unit="core-ms")
    ctx.report("oram/client_ms_per_access", pro["client_ms"], unit="ms")
    ctx.report("oram/cpu_ms_per_access", pro["cpu_ms_per_access"], unit="cpu-ms",
               baseline=path["cpu_ms_per_access"], baseline_name="Path ORAM")
    ctx.log(f"PRO-ORAM p50 {pro['server_p50_ms']:.2f} ms, p99 {pro['server_p99_ms']:.2f} ms, "
            f"{pro['threads']} shuffle threads, {pro['epochs']} epochs timed; "
            f"total at 7 Mbps {pro['total_ms']:.0f} ms per access")
    ctx.log(f"PRO-ORAM request clock: period {pro['period_min_ms']:.2f}-{pro['period_max_ms']:.2f} ms, "
            f"{pro['late_handovers']} hand-overs had to wait for the shuffle (a moved period or a late "
            "hand-over is where p99 above p50 comes from)")
    cores = os.cpu_count() or 1
    load1 = os.getloadavg()[0]
    ctx.log(f"machine: {cores} cores, load average {load0:.1f} before / {load1:.1f} after; with other jobs "
            "running, wall-clock figures are pessimistic. Process CPU time per request "
            f"{pro['cpu_ms_per_access']:.1f} ms, i.e. about {pro['cpu_ms_per_access'] / cores:.1f} ms of wall time "
            f"on {cores} otherwise idle cores")
