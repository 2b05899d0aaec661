"""Experiment `crypto.throughput`: GB/s of one engine for one message size on T threads."""

from __future__ import annotations

from pydantic import Field

from veil import _native
from veil.core import ComponentName, ConfigError, ExperimentConfig, machine_load, register_experiment


class ThroughputConfig(ExperimentConfig):
    engine: ComponentName("crypto.engine") = Field("aes-128-gcm", description="engine to measure")
    size: int = Field(262144, ge=16, le=1 << 26, description="message size in bytes")
    threads: int = Field(1, ge=1, le=256, description="threads, each encrypting its own buffer")
    min_seconds: float = Field(0.2, gt=0, le=60, description="measure for at least this long")


@register_experiment("crypto.throughput", ThroughputConfig,
                     doc="encryption throughput of one engine, message size and thread count", exclusive=True)
def throughput(cfg: ThroughputConfig) -> dict:
    try:
        r = dict(_native.crypto.throughput(cfg.engine, cfg.size, cfg.threads, cfg.min_seconds))
    except ValueError as e:  # the engine's own constraint, e.g. whole 64-byte lines
        raise ConfigError(f"crypto.throughput: {e}") from None
    return {"gbps": float(r["gbps"]), "bytes": int(r["bytes"]), "seconds": float(r["seconds"]),
            "iterations": int(r["iterations"]), "gbps_per_thread": float(r["gbps"]) / cfg.threads,
            "loadavg": machine_load()}


def unit_of(engine: str) -> int:
    """The message-size granule an engine accepts: whole lines, AES or DES blocks."""
    if "line" in engine:
        return 64
    if "ecb" in engine:
        return 8 if engine.startswith("tdes") else 16
    return 1
