"""`veil bench oram`: PRO-ORAM at N = 4096, B = 256 KB (1 GiB) on this machine's cores, with
Path ORAM and plain encrypted reads measured in the same run. `veil bench oram --contention`
also runs PRO-ORAM beside a CPU-bound process it starts and stops itself (normal-priority
shuffle, and the SCHED_IDLE shuffle for comparison), with the AES-GCM bound beside them."""

from __future__ import annotations

import os
import subprocess
import sys

from veil.core import register_benchmark
from veil.oram.engine import epoch_len, run, steady_warmup

N, B = 4096, 256 * 1024
CONTENTION_ENV = "VEIL_BENCH_CONTENTION"
#: "N,B" instead of 4096,262144: a small run (the test of the bench itself)
SIZE_ENV = "VEIL_BENCH_ORAM_SIZE"


def size() -> tuple[int, int]:
    raw = os.environ.get(SIZE_ENV)
    if not raw:
        return N, B
    try:
        n, b = (int(x) for x in raw.split(","))
    except ValueError:
        from veil.core import ConfigError

        raise ConfigError(f"${SIZE_ENV}={raw!r}: expected N,B (blocks, bytes per block)") from None
    return n, b


def gcm_bytes_per_access(n: int, b: int) -> float:
    """AES-GCM bytes PRO-ORAM must process per request: the shuffle opens each of the epoch's
    slots twice and seals it three times (Clos network, docs/oram.md), spread over T requests,
    plus the request's own slot and its sealed reply."""
    slots = n + 2 * int(n ** 0.5 + 2)
    return 5 * slots * b / epoch_len(n) + 2 * b


# a busy loop that also ends by itself when its parent is gone (a killed benchmark)
HOG = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    for _ in range(1000000): pass\n"


class CpuHog:
    """One CPU-bound process for as long as the `with` block lasts."""

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, "-c", HOG])
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def contention(ctx, base: dict, idle: dict) -> None:
    n, b = base["n_blocks"], base["block_size"]
    with CpuHog():
        hog = run({**base, "engine": "proram", "accesses": 512, "warmup": steady_warmup(n)})
    if hog["errors"]:
        raise RuntimeError(f"{hog['errors']} wrong replies beside the CPU hog")
    ctx.report("oram/contended_throughput_mbps", hog["throughput_mbps"], unit="Mbps",
               baseline=idle["throughput_mbps"], baseline_name="no hog", target=">= 0.5x no hog")
    ctx.report("oram/contended_p99_over_p50", hog["p99_over_p50"], unit="", target="<= 1.5")
    ctx.log(f"beside the hog: p50 {hog['server_p50_ms']:.2f} ms, p99 {hog['server_p99_ms']:.2f} ms, period "
            f"{hog['period_min_ms']:.2f}-{hog['period_max_ms']:.2f} ms, {hog['late_handovers']} late hand-overs")
    # the physical bound: AES-GCM work per request at this machine's single-core speed
    from veil import _native

    speed = _native.crypto.throughput("aes-128-gcm", b, 1, 0.5)["gb_per_s"] * 1e9  # bytes/s, one core
    per = gcm_bytes_per_access(n, b)
    cores = min(os.cpu_count() or 1, idle["threads"])
    bound = speed * cores / per * b * 8 / 1e6
    ctx.report("oram/gcm_bytes_per_access", per, unit="B")
    ctx.report("oram/gcm_single_core_gbytes_s", speed / 1e9, unit="GB/s")
    ctx.report("oram/aes_gcm_bound_mbps", bound, unit="Mbps", target=f"{cores} cores")
    ctx.report("oram/contended_aes_gcm_bound_mbps", bound * 2 / 3, unit="Mbps",
               target="2/3 of the cores beside one hog")
    # the old policy, for comparison: short, since beside busy processes it crawls
    with CpuHog():
        old = run({**base, "engine": "proram", "accesses": 128, "warmup": 2 * epoch_len(n), "shuffle_idle": True})
    ctx.report("oram/contended_sched_idle_throughput_mbps", old["throughput_mbps"], unit="Mbps",
               baseline=idle["throughput_mbps"], baseline_name="no hog")
    ctx.report("oram/contended_sched_idle_p99_over_p50", old["p99_over_p50"], unit="")


@register_benchmark("oram", doc="PRO-ORAM server time, throughput and latency spread at N=4096, B=256 KB")
def bench(ctx):
    load0 = os.getloadavg()[0]
    n, b = size()
    base = {"n_blocks": n, "block_size": b, "seed": 1, "verify": True, "link_mbps": 7.0}
    plain = run({**base, "engine": "plain", "accesses": 256, "warmup": 16})
    # untimed epochs first: every region has been written once (first touches are slow) and
    # the request clock follows a full history of steady shuffles
    pro = run({**base, "engine": "proram", "accesses": 512, "warmup": steady_warmup(n)})
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
    if os.environ.get(CONTENTION_ENV):
        contention(ctx, base, pro)
    cores = os.cpu_count() or 1
    load1 = os.getloadavg()[0]
    ctx.log(f"machine: {cores} cores, load average {load0:.1f} before / {load1:.1f} after; with other jobs "
            "running, wall-clock figures are pessimistic. Process CPU time per request "
            f"{pro['cpu_ms_per_access']:.1f} ms, i.e. about {pro['cpu_ms_per_access'] / cores:.1f} ms of wall time "
            f"on {cores} otherwise idle cores")
