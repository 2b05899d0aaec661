"""Experiment `crypto.pad_randomness`: statistical sanity of AES-CTR one-time pads.

Ghost routing and memory encryption XOR data with AES-CTR pads; a pad stream that failed
simple uniformity tests would leak. For a key drawn from the seed, this measures byte
frequencies (chi-square, 255 degrees of freedom), the fraction of one bits and the serial
correlation of consecutive bytes. Deterministic for a seed, so it also anchors sweep tests.
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import numpy as np
from pydantic import Field

from veil import _native
from veil.core import ExperimentConfig, register_experiment


class PadRandomnessConfig(ExperimentConfig):
    key_bits: Literal[128, 256] = Field(128, description="AES key size in bits")
    nbytes: int = Field(1 << 20, ge=1024, le=1 << 28, description="pad bytes to generate")
    counter: int = Field(0, ge=0, le=2**48, description="first 16-byte block counter")


def _chi2_sf(x: float, k: int) -> float:
    """Upper tail of chi-square with k dof, Wilson-Hilferty normal approximation (k = 255)."""
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


@register_experiment("crypto.pad_randomness", PadRandomnessConfig, results={
    "chi2": ("", "chi-square statistic of the 256 byte-value counts (255 degrees of freedom)"),
    "chi2_p": ("", "probability of a chi-square at least this large for uniform bytes"),
    "ones_fraction": ("", "fraction of pad bits that are 1 (0.5 expected)"),
    "serial_correlation": ("", "correlation of each byte with the next (0 expected)"),
    "sha256_prefix": ("hex", "first 16 hex digits of the pad's SHA-256 (identifies the stream)"),
},
                     doc="uniformity statistics of an AES-CTR pad stream for a seeded key")
def pad_randomness(cfg: PadRandomnessConfig) -> dict:
    material = hashlib.sha256(f"veil-pad-{cfg.seed}".encode()).digest()
    key = material[: cfg.key_bits // 8]
    nonce = hashlib.sha256(material).digest()[:8]  # veil-crypto CTR: 8-byte nonce, 64-bit counter
    pad = np.frombuffer(bytes(_native.crypto.ctr_pad(key, nonce, cfg.counter, cfg.nbytes)), dtype=np.uint8)
    counts = np.bincount(pad, minlength=256).astype(np.float64)
    expected = cfg.nbytes / 256
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    ones = float(np.unpackbits(pad).mean())
    x = pad.astype(np.float64)
    serial = float(np.corrcoef(x[:-1], x[1:])[0, 1])
    return {"chi2": chi2, "chi2_p": _chi2_sf(chi2, 255), "ones_fraction": ones,
            "serial_correlation": serial, "sha256_prefix": hashlib.sha256(pad.tobytes()).hexdigest()[:16]}
