"""Same-run baselines from Python `cryptography` (OpenSSL), the reference Veil must keep up with."""

from __future__ import annotations

import os
import time


def cryptography_gbps(engine: str, size: int, min_seconds: float = 0.3) -> float:
    """Single-thread GB/s of OpenSSL through `cryptography` for AES-GCM or AES-CTR."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    data = os.urandom(size)
    key_bits = 256 if "256" in engine else 128
    key = os.urandom(key_bits // 8)
    nonce = os.urandom(12)
    if engine.endswith("gcm"):
        aead = AESGCM(key)

        def once():
            aead.encrypt(nonce, data, None)
    elif engine.endswith("ctr"):
        enc = Cipher(algorithms.AES(key), modes.CTR(os.urandom(16))).encryptor()

        def once():
            enc.update(data)
    else:
        raise ValueError(f"no cryptography baseline for {engine}")
    once()  # warm-up: first call pays OpenSSL's context set-up
    n, t0 = 0, time.perf_counter()
    while True:
        once()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            return n * size / elapsed / 1e9
