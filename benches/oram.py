"""`veil bench oram`: PRO-ORAM at N = 4096, B = 256 KB (1 GiB) on this machine's cores, with
Path ORAM and plain encrypted reads measured in the same run, the AES-GCM bound (its work per
request at the single-core AES-GCM speed measured in the same run) and the run's share of it,
the same store with a 4x longer epoch (4x the private cache, a quarter of the shuffle's work
per request), and PRO-ORAM at 4 KB blocks against PyORAM's Path ORAM when PyORAM is installed.
`veil bench oram --contention` also runs PRO-ORAM beside a CPU-bound process it starts and
stops itself (normal-priority shuffle, and the SCHED_IDLE shuffle for comparison)."""

from __future__ import annotations

import math
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


def slots(n: int, t: int) -> int:
    """M, the slots of a PRO-ORAM epoch: N blocks and >= T dummies on a full grid (Rust's
    `Geometry::with_epoch_len`)."""
    cols = math.isqrt(n + t - 1) + 1
    return -(-(n + t) // cols) * cols


#: AES-GCM passes over every slot per epoch: the Clos shuffle opens each slot twice and seals it
#: three times; the cache shuffle opens it once and seals it once (docs/oram.md)
PASSES = {"clos": 5, "cache": 2}


def gcm_bytes_per_access(n: int, b: int, t: int | None = None, shuffle: str = "clos") -> float:
    """AES-GCM bytes PRO-ORAM must process per request: the shuffle's passes over the epoch's M
    slots, spread over the T requests of an epoch, plus the request's own slot and its sealed
    reply."""
    t = t or epoch_len(n)
    return PASSES[shuffle] * slots(n, t) * b / t + 2 * b


def gcm_bound_mbps(n: int, b: int, t: int, cores: int, speed: float, shuffle: str = "clos") -> float:
    """The throughput at which `cores` cores do nothing but PRO-ORAM's AES-GCM at `speed`
    bytes/s each (measured on one core in the same run)."""
    return speed * cores / gcm_bytes_per_access(n, b, t, shuffle) * b * 8 / 1e6


#: PyORAM's Path ORAM at N = 4096, B = 4 KB (RAM storage, 1,000 random reads), for runs where
#: PyORAM is not installed: its throughput and where it was measured
PYORAM_REFERENCE = (45.0, "PyORAM 0.2.1, this bench, shared 2-core VM at load average 8.5, 27 Nov 2026")


def pyoram_missing() -> str | None:
    """Why PyORAM's Path ORAM cannot run here, in a few words; None when it can. An installed
    PyORAM whose cffi helper was never built (built without cffi present) fails on import: that is
    a broken install, not a missing one, and says so."""
    import importlib.util

    if importlib.util.find_spec("pyoram") is None:
        return "PyORAM is not installed"
    try:
        from pyoram.oblivious_storage.tree.path_oram import PathORAM  # noqa: F401
    except ImportError as e:
        return f"PyORAM is installed but does not import ({e})"
    return None


def pyoram_path_mbps(n: int, b: int, accesses: int, seed: int) -> float | None:
    """PyORAM's Path ORAM (RAM storage) reading `accesses` random blocks, Mbit/s; None when
    PyORAM cannot run (`pyoram_missing`). One write-then-read checks it is serving blocks at all."""
    if pyoram_missing() is not None:
        return None
    from pyoram.oblivious_storage.tree.path_oram import PathORAM
    import random
    import tempfile
    import time

    rng = random.Random(seed)
    ids = [rng.randrange(n) for _ in range(accesses + 64)]
    with tempfile.TemporaryDirectory() as d:
        f = PathORAM.setup(os.path.join(d, "pyoram.bin"), b, n, storage_type="ram", ignore_existing=True)
        try:
            data = bytes(rng.randrange(256) for _ in range(b))
            f.write_block(ids[0], data)
            if bytes(f.read_block(ids[0])) != data:
                raise RuntimeError("PyORAM returned a block other than the one written")
            for i in ids[:64]:
                f.read_block(i)
            t0 = time.perf_counter()
            for i in ids[64:]:
                f.read_block(i)
            dt = time.perf_counter() - t0
        finally:
            f.close()
    return accesses * b * 8 / dt / 1e6


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
    bound = ctx.results["oram/aes_gcm_bound_mbps"]
    ctx.report("oram/contended_throughput_mbps_of_bound", hog["throughput_mbps"], unit="Mbps",
               baseline=bound * 2 / 3, baseline_name="AES-GCM bound on 2/3 of the cores beside one hog")
    # the old policy, for comparison: short, since beside busy processes it crawls
    with CpuHog():
        old = run({**base, "engine": "proram", "accesses": 128, "warmup": 2 * epoch_len(n), "shuffle_idle": True})
    ctx.report("oram/contended_sched_idle_throughput_mbps", old["throughput_mbps"], unit="Mbps",
               baseline=idle["throughput_mbps"], baseline_name="no hog")
    ctx.report("oram/contended_sched_idle_p99_over_p50", old["p99_over_p50"], unit="")


#: the longer epoch the bench also runs: T = LONG_EPOCH x sqrt(N) requests, i.e. blocks cached
LONG_EPOCH = 4


def aes_gcm_bound(ctx, n: int, b: int, pro: dict) -> float:
    """Reports the AES-GCM bound (the shuffle's and the request's AES-GCM work per request at
    the single-core speed measured now, on the shuffle's cores) and the run's share of it, and
    the same work at AES-GCM's speed over buffers in memory; returns the in-cache single-core
    speed (bytes/s)."""
    from veil import _native

    speed = _native.crypto.throughput("aes-128-gcm", b, 1, 0.5)["gb_per_s"] * 1e9  # bytes/s, one core
    # The same over a working set as large as the store (256 MiB at most): the shuffle reads and
    # writes every slot of a store far larger than the caches, which a buffer kept in cache
    # (above) never does.
    working_set = min(n * b, 256 << 20)
    streaming = _native.crypto.throughput("aes-128-gcm", b, 1, 0.5, working_set)["gb_per_s"] * 1e9
    cores = min(os.cpu_count() or 1, pro["threads"])
    bound = gcm_bound_mbps(n, b, pro["epoch_len"], cores, speed)
    memory_bound = gcm_bound_mbps(n, b, pro["epoch_len"], cores, streaming)
    ctx.report("oram/gcm_bytes_per_access", gcm_bytes_per_access(n, b, pro["epoch_len"]), unit="B")
    ctx.report("oram/gcm_single_core_gbytes_s", speed / 1e9, unit="GB/s")
    ctx.log(f"AES-GCM from memory: {b:,}-byte buffers cycled over {working_set / 2**20:.1f} MiB per core")
    ctx.report("oram/gcm_single_core_streaming_gbytes_s", streaming / 1e9, unit="GB/s",
               baseline=speed / 1e9, baseline_name="in cache (one buffer)")
    ctx.report("oram/aes_gcm_bound_mbps", bound, unit="Mbps", target=f"{cores} cores, in cache")
    ctx.report("oram/throughput_mbps_of_bound", pro["throughput_mbps"], unit="Mbps", baseline=bound,
               baseline_name="AES-GCM bound in cache", target=">= 0.7x bound")
    # Not a bound: the shuffle keeps part of its traffic in cache and beats it; it says how much
    # of the gap to the bound above is memory traffic rather than work besides AES-GCM.
    ctx.report("oram/aes_gcm_streaming_mbps", memory_bound, unit="Mbps",
               target=f"{cores} cores, every byte from memory")
    ctx.report("oram/throughput_mbps_of_streaming", pro["throughput_mbps"], unit="Mbps", baseline=memory_bound,
               baseline_name="AES-GCM from memory")
    # the same with every core sealing at once (shared caches, memory and clock): what the
    # shuffle's cores can reach together, which the single-core figure times cores overstates
    together = _native.crypto.throughput("aes-128-gcm", b, cores, 0.5)["gb_per_s"] * 1e9
    ctx.report("oram/aes_gcm_bound_cores_together_mbps", gcm_bound_mbps(n, b, pro["epoch_len"], 1, together),
               unit="Mbps", baseline=bound, baseline_name="single-core x cores")
    return speed


def memory_floor(ctx, n: int, b: int, pro: dict) -> None:
    """The shuffle's memory traffic alone: the same steady shuffle (same code, groups, threads
    and slot order) with copies in place of AES-GCM, then with AES-GCM, on a store of its own.
    No cipher makes the shuffle faster than its copies, so T B over the copy-only shuffle's time
    is a ceiling on the throughput that the in-cache AES-GCM bound does not see."""
    import json
    from statistics import median

    from veil import _native

    threads, t = pro["threads"], pro["epoch_len"]
    r = json.loads(_native.oram.shuffle_floor(json.dumps(
        {"n_blocks": n, "block_size": b, "threads": threads, "shuffles": 4, "seed": 1})))
    copies, gcm = median(r["copies_wall_ms"]), median(r["gcm_wall_ms"])
    floor = t * b * 8 / (copies / 1e3) / 1e6
    bound = ctx.results["oram/aes_gcm_bound_mbps"]
    ctx.report("oram/shuffle_copies_ms", copies, unit="ms", baseline=gcm,
               baseline_name="the same shuffle with AES-GCM")
    ctx.report("oram/memory_floor_mbps", floor, unit="Mbps", baseline=bound,
               baseline_name="AES-GCM bound in cache")
    ctx.report("oram/throughput_mbps_of_memory_floor", pro["throughput_mbps"], unit="Mbps", baseline=floor,
               baseline_name="the shuffle's copies alone")
    margin = 1 + pro["pace_margin"]
    ctx.log(f"steady shuffles alone, {threads} threads: copies {copies:.0f} ms, AES-GCM {gcm:.0f} ms (medians of "
            f"{len(r['gcm_wall_ms'])}); a shuffle that cost no more than its copies, under the request clock's "
            f"{pro['pace_margin']:.0%} margin, would serve {floor / margin:.0f} Mbps: "
            f"{floor / margin / bound:.2f}x the AES-GCM bound in cache")


def long_epoch(ctx, base: dict, pro: dict, speed: float) -> None:
    """The same store with LONG_EPOCH times the paper's epoch: the same shuffle per epoch, over
    LONG_EPOCH times as many requests, for LONG_EPOCH times the private cache."""
    n, b = base["n_blocks"], base["block_size"]
    t = LONG_EPOCH * epoch_len(n)
    if t > n:
        ctx.log(f"longer epoch skipped: {LONG_EPOCH} sqrt(N) = {t} is more than N = {n} blocks")
        return
    r = run({**base, "engine": "proram", "epoch_len": t, "accesses": max(512, 4 * t), "warmup": 20 * t})
    if r["errors"]:
        raise RuntimeError(f"PRO-ORAM with T = {t}: {r['errors']} wrong replies")
    paper = pro["throughput_mbps"]
    ctx.report("oram/long_epoch_throughput_mbps", r["throughput_mbps"], unit="Mbps", baseline=paper,
               baseline_name=f"T = sqrt(N) = {pro['epoch_len']}")
    ctx.report("oram/long_epoch_gcm_bytes_per_access", gcm_bytes_per_access(n, b, t), unit="B",
               baseline=gcm_bytes_per_access(n, b, pro["epoch_len"]), baseline_name="T = sqrt(N)")
    ctx.report("oram/long_epoch_p99_over_p50", r["p99_over_p50"], unit="", target="<= 1.2")
    ctx.report("oram/long_epoch_private_cache_blocks", r["private_cache_blocks"], unit="blocks",
               target=f"T = {t}")
    cores = min(os.cpu_count() or 1, r["threads"])
    ctx.report("oram/long_epoch_throughput_mbps_of_bound", r["throughput_mbps"], unit="Mbps",
               baseline=gcm_bound_mbps(n, b, t, cores, speed), baseline_name="AES-GCM bound in cache",
               target=">= 0.7x bound")


def cache_shuffle(ctx, base: dict, pro: dict, path: dict, speed: float) -> None:
    """The same store with the cache (K-oblivious, one-pass) shuffle: against its own AES-GCM
    bound in cache (2 passes per slot, not 5), the Clos shuffle and Path ORAM of this run."""
    n, b = base["n_blocks"], base["block_size"]
    r = run({**base, "engine": "proram", "shuffle": "cache", "accesses": 512, "warmup": steady_warmup(n)})
    if r["errors"]:
        raise RuntimeError(f"PRO-ORAM with the cache shuffle: {r['errors']} wrong replies")
    t, cores = r["epoch_len"], min(os.cpu_count() or 1, r["threads"])
    bound = gcm_bound_mbps(n, b, t, cores, speed, "cache")
    ctx.report("oram/cache_gcm_bytes_per_access", gcm_bytes_per_access(n, b, t, "cache"), unit="B",
               baseline=gcm_bytes_per_access(n, b, t), baseline_name="Clos shuffle")
    ctx.report("oram/cache_aes_gcm_bound_mbps", bound, unit="Mbps", target=f"{cores} cores, in cache")
    ctx.report("oram/cache_throughput_mbps_of_bound", r["throughput_mbps"], unit="Mbps", baseline=bound,
               baseline_name="its AES-GCM bound in cache", target=">= 0.7x bound")
    ctx.report("oram/cache_throughput_mbps", r["throughput_mbps"], unit="Mbps", baseline=pro["throughput_mbps"],
               baseline_name="Clos shuffle")
    ctx.report("oram/cache_throughput_mbps_of_pathoram", r["throughput_mbps"], unit="Mbps",
               baseline=path["throughput_mbps"], baseline_name="Path ORAM", target="> 1x Path ORAM")
    ctx.report("oram/cache_p99_over_p50", r["p99_over_p50"], unit="", target="<= 1.1")
    ctx.report("oram/cache_bytes_per_access", r["bytes_per_access"], unit="B", baseline=pro["bytes_per_access"],
               baseline_name="Clos shuffle")
    ctx.log(f"cache shuffle: p50 {r['server_p50_ms']:.2f} ms, p99 {r['server_p99_ms']:.2f} ms, period "
            f"{r['period_min_ms']:.2f}-{r['period_max_ms']:.2f} ms, {r['late_handovers']} late hand-overs, "
            f"{r['cache_shuffles']} cache shuffles of {r['epochs']} timed epochs' shuffles and the warm-up's, "
            f"shuffle {r['shuffle_ms_per_access']:.2f} ms per request against {pro['shuffle_ms_per_access']:.2f}")


def small_blocks(ctx, base: dict) -> None:
    """At 4 KB blocks: PRO-ORAM against PyORAM's Path ORAM (Python, RAM storage), same N."""
    n, b = base["n_blocks"], 4096
    pro = run({**base, "block_size": b, "engine": "proram", "accesses": 512, "warmup": steady_warmup(n)})
    if pro["errors"]:
        raise RuntimeError(f"PRO-ORAM at 4 KB: {pro['errors']} wrong replies")
    ref = pyoram_path_mbps(n, b, 1000, base["seed"])
    if ref is None:
        ctx.report("oram/throughput_mbps_4k", pro["throughput_mbps"], unit="Mbps")
        mbps, source = PYORAM_REFERENCE
        ctx.log(f"{pyoram_missing()} (`make bench` installs it): no ratio; for orientation only, a "
                f"recorded, not measured, Path ORAM at 4 KB, N = 4096: {mbps:g} Mbps ({source})")
        return
    ctx.report("oram/throughput_mbps_4k", pro["throughput_mbps"], unit="Mbps", baseline=ref,
               baseline_name="PyORAM Path ORAM", target=">= 1x PyORAM")
    ctx.report("oram/pyoram_throughput_mbps_4k", ref, unit="Mbps")


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
    ctx.report("oram/p99_over_p50", pro["p99_over_p50"], unit="", target="<= 1.1")
    ctx.report("oram/bytes_per_access", pro["bytes_per_access"], unit="B")
    ctx.report("oram/pathoram_throughput_mbps", path["throughput_mbps"], unit="Mbps")
    ctx.report("oram/pathoram_bytes_per_access", path["bytes_per_access"], unit="B")
    ctx.report("oram/private_cache_blocks", pro["private_cache_blocks"], unit="blocks", target=f"sqrt(N) = {epoch_len(n)}")
    ctx.report("oram/shuffle_ms_per_access", pro["shuffle_ms_per_access"], unit="ms")
    ctx.report("oram/crypto_core_ms_per_access", pro["crypto_core_ms"], unit="core-ms")
    ctx.report("oram/storage_core_ms_per_access", pro["storage_core_ms"], unit="core-ms")
    ctx.report("oram/client_ms_per_access", pro["client_ms"], unit="ms")
    ctx.report("oram/cpu_ms_per_access", pro["cpu_ms_per_access"], unit="cpu-ms",
               baseline=path["cpu_ms_per_access"], baseline_name="Path ORAM")
    ctx.log(f"PRO-ORAM p50 {pro['server_p50_ms']:.2f} ms, p99 {pro['server_p99_ms']:.2f} ms, "
            f"{pro['threads']} shuffle threads, {pro['epochs']} epochs timed after {pro['caught_up']} untimed "
            f"requests that caught the clock up with the wait for the shuffle; "
            f"total at 7 Mbps {pro['total_ms']:.0f} ms per access")
    ctx.log(f"PRO-ORAM request clock: period {pro['period_min_ms']:.2f}-{pro['period_max_ms']:.2f} ms, "
            f"{pro['late_handovers']} hand-overs had to wait for the shuffle (a moved period or a late "
            "hand-over is where p99 above p50 comes from)")
    speed = aes_gcm_bound(ctx, n, b, pro)
    memory_floor(ctx, n, b, pro)
    long_epoch(ctx, base, pro, speed)
    cache_shuffle(ctx, base, pro, path, speed)
    small_blocks(ctx, base)
    if os.environ.get(CONTENTION_ENV):
        contention(ctx, base, pro)
    cores = os.cpu_count() or 1
    load1 = os.getloadavg()[0]
    ctx.log(f"machine: {cores} cores, load average {load0:.1f} before / {load1:.1f} after; with other jobs "
            "running, wall-clock figures are pessimistic. Process CPU time per request "
            f"{pro['cpu_ms_per_access']:.1f} ms, i.e. about {pro['cpu_ms_per_access'] / cores:.1f} ms of wall time "
            f"on {cores} otherwise idle cores")
