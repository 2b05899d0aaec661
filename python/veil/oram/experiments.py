"""Experiments: one measured run of an engine at (N, B) with the shuffle running beside it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veil.core import ComponentName, ConfigError, ExperimentConfig, register_component, register_experiment
from veil.oram.engine import epoch_len, run

register_component("oram.engine", "proram", doc="PRO-ORAM: square-root layout, one slot per request, "
                   "next epoch shuffled concurrently (Clos-network oblivious shuffle)")
register_component("oram.engine", "pathoram", doc="Path ORAM, Z=4, encrypted buckets, stash, position map")
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
    redis: str = Field("127.0.0.1:6379", description="host:port of the Redis server (backend = redis)")
    pace: bool = Field(True, description="each request waits for its share of the shuffle (constant latency)")
    pace_margin: float = Field(0.15, ge=0, le=4, description="headroom of the request clock over the recent "
                                                             "shuffle time (more: flatter latency, longer)")
    shuffle_priority: Literal["normal", "idle"] = Field(
        "normal", description="PRO-ORAM shuffle threads: normal priority (keeps its share beside other work) or "
                              "SCHED_IDLE (flattest latency on a machine of its own, starves beside busy processes)")
    run_ahead: int = Field(3, ge=1, le=4, description="PRO-ORAM: epochs the shuffle may have built ahead of the "
                                                       "served one (storage holds run_ahead + 2 copies)")
    link_mbps: float = Field(7.0, ge=0, description="link bandwidth for the network share of latency (0: none)")


@register_experiment("oram.access", AccessConfig, exclusive=True,
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
        "shuffle_idle": cfg.shuffle_priority == "idle", "run_ahead": cfg.run_ahead, "link_mbps": cfg.link_mbps, "verify": True,
    }
    if cfg.backend != "file":
        return run(point)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="veil-oram-") as d:
        return run({**point, "dir": f"{d}/store"})
