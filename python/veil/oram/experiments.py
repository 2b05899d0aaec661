"""Experiments: one measured run of an engine at (N, B) with the shuffle running beside it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veil.core import ComponentName, ConfigError, ExperimentConfig, register_component, register_experiment
from veil.oram.engine import epoch_len, run

register_component("oram.engine", "proram", doc="PRO-ORAM: square-root layout, one slot per request, "
                   "next epoch shuffled concurrently (Clos-network oblivious shuffle)")
register_component("oram.engine", "pathoram", doc="Path ORAM, Z=4, encrypted buckets, stash, position map")
register_component("oram.shuffle", "clos", doc="PRO-ORAM's shuffle: three-stage Clos-network oblivious shuffle, "
                   "2 openings and 3 sealings per slot per epoch, from any copy")
register_component("oram.shuffle", "cache", doc="K-oblivious one-pass shuffle after CacheShuffle (Patel, Persiano, Yeo "
                   "2018): 1 opening and 1 sealing per slot, from an ended epoch's copy; needs run_ahead >= 2")
register_component("oram.engine", "plain", doc="plain encrypted reads (not oblivious): the lower bound")

# a guard against a mistyped size; the --full reproducer's largest PRO-ORAM point takes 11 GB
MAX_BYTES = 12 << 30


class AccessConfig(ExperimentConfig):
    engine: ComponentName("oram.engine") = Field("proram", description="which engine serves the reads")
    n_blocks: int = Field(1024, ge=1, le=1 << 24, description="blocks N in the store")
    block_size: int = Field(4096, ge=16, le=64 << 20, description="block size B in bytes")
    accesses: int = Field(0, ge=0, le=1 << 20, description="timed requests (0: 4 PRO-ORAM epochs, at least 64)")
    warmup: int = Field(-1, ge=-1, le=1 << 20,
                        description="untimed requests first (-1: one PRO-ORAM epoch, 8 for the others)")
    threads: int = Field(0, ge=0, le=256, description="shuffle threads (0: one per core)")
    pattern: Literal["uniform", "repeat", "sequential"] = Field("uniform", description="request sequence")
    backend: Literal["memory", "file", "redis"] = Field(
        "memory", description="untrusted storage: RAM, a data directory (a temporary one, fsync'd), or Redis")
    redis: str = Field("127.0.0.1:6379", pattern=r"^(\[[0-9a-fA-F:]+\]|[^\s:\[\]]+):([1-9][0-9]{0,4})$",
                       description="host:port of the Redis server (backend = redis)")
    pace: bool = Field(True, description="each request waits for its share of the shuffle (constant latency)")
    pace_margin: float = Field(0.15, ge=0, le=4, description="headroom of the request clock over the recent "
                                                             "shuffle time (more: flatter latency, longer)")
    shuffle_priority: Literal["normal", "idle"] = Field(
        "normal", description="PRO-ORAM shuffle threads: normal priority (keeps its share beside other work) or "
                              "SCHED_IDLE (flattest latency on a machine of its own, starves beside busy processes)")
    run_ahead: int = Field(3, ge=1, le=4, description="PRO-ORAM: epochs the shuffle may have built ahead of the "
                                                       "served one (storage holds run_ahead + 2 copies)")
    shuffle: ComponentName("oram.shuffle") = Field("clos", description="PRO-ORAM: the shuffle that builds the "
                                                     "next epochs (clos: any copy; cache: one pass, K-oblivious)")
    link_mbps: float = Field(7.0, ge=0, description="link bandwidth for the network share of latency (0: none)")


@register_experiment("oram.access", AccessConfig, exclusive=True, results={
    "engine": ("", "engine that served the reads"),
    "n_blocks": ("blocks", "blocks N in the store"),
    "block_size": ("bytes", "block size B"),
    "accesses": ("requests", "timed requests"),
    "setup_s": ("s", "time to build and encrypt the store"),
    "server_ms": ("ms", "server wall time per request (timed phase / requests)"),
    "server_p50_ms": ("ms", "median server time of one request"),
    "server_p99_ms": ("ms", "99th-percentile server time of one request"),
    "server_max_ms": ("ms", "longest server time of one request"),
    "p99_over_p50": ("", "server_p99_ms / server_p50_ms (1 = constant latency)"),
    "server_ms_windows": ("ms", "mean server time per request in each whole window of the timed requests "
                                "(one epoch for PRO-ORAM, 8 requests otherwise)"),
    "client_ms": ("ms", "client time per request (decrypt and check)"),
    "network_ms": ("ms", "transfer time of one block and tag at link_mbps"),
    "total_ms": ("ms", "client_ms + server_ms + network_ms"),
    "throughput_mbps": ("Mbit/s", "served bits per second of server time (10^6 bits/s)"),
    "bytes_per_access": ("bytes", "storage bytes read and written per request, shuffle included"),
    "shuffle_ms_per_access": ("ms", "shuffle wall time per epoch divided by the epoch's requests"),
    "crypto_core_ms": ("core-ms", "AES-GCM core time per request, all threads"),
    "storage_core_ms": ("core-ms", "storage-call core time per request (copies, I/O), all threads"),
    "cpu_ms_per_access": ("core-ms", "process CPU time (user + system, all threads) per request"),
    "private_cache_blocks": ("blocks", "blocks the engine keeps in private memory"),
    "private_block_bytes": ("bytes", "PRO-ORAM: peak private memory in block buffers (cache, open slot, "
                                     "shuffle group)"),
    "position_map_bytes": ("bytes", "PRO-ORAM: private memory of the position map"),
    "period_min_ms": ("ms", "PRO-ORAM request clock: shortest period over the timed requests"),
    "period_max_ms": ("ms", "PRO-ORAM request clock: longest period over the timed requests"),
    "late_handovers": ("epochs", "epoch hand-overs that had to wait for the shuffle"),
    "caught_up": ("requests", "PRO-ORAM: requests answered at once before the timed window, while the request "
                              "clock caught up with the wait for the shuffle (in the byte counts, not timed)"),
    "pace_margin": ("", "PRO-ORAM: how much slower than the shuffle the request clock runs (as configured)"),
    "epoch_len": ("requests", "requests per PRO-ORAM epoch"),
    "epochs": ("epochs", "epochs shuffled during the run"),
    "cache_shuffles": ("shuffles", "PRO-ORAM: cache (K-oblivious) shuffles since the store was made, warm-up included"),
    "threads": ("threads", "shuffle threads used"),
    "errors": ("", "requests whose block failed authentication or was wrong (0 expected)"),
},
                     doc="latency split (client, server, shuffle, network), throughput and bytes per access")
def access(cfg: AccessConfig) -> dict:
    n, b = cfg.n_blocks, cfg.block_size
    slots = n + 2 * int(n ** 0.5 + 2)
    footprint = (cfg.run_ahead + 2) * slots * b if cfg.engine == "proram" else (3 * n * b if cfg.engine == "pathoram" else n * b)
    if footprint > MAX_BYTES:
        raise ConfigError(f"n_blocks x block_size: the {cfg.engine} store would take {footprint >> 20} MiB "
                          f"of memory, above {MAX_BYTES >> 20} MiB")
    warm = cfg.warmup if cfg.warmup >= 0 else (epoch_len(n) if cfg.engine == "proram" else 8)
    point = {
        "engine": cfg.engine, "n_blocks": n, "block_size": b, "accesses": cfg.accesses, "warmup": warm,
        "threads": cfg.threads, "seed": cfg.seed, "pattern": cfg.pattern, "backend": cfg.backend,
        "redis": cfg.redis if cfg.backend == "redis" else None,
        "pace": cfg.pace, "pace_margin": cfg.pace_margin,
        "shuffle_idle": cfg.shuffle_priority == "idle", "run_ahead": cfg.run_ahead, "shuffle": cfg.shuffle, "link_mbps": cfg.link_mbps, "verify": True,
    }
    if cfg.backend != "file":
        return run(point)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="veil-oram-") as d:
        return run({**point, "dir": f"{d}/store"})
