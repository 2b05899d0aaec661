"""TACO's datapath on SEAL's serialized objects: encryption under SEAL's public key,
decryption with SEAL's secret key, and the per-block operation counts both produce."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import seal

from veil import _native
from veil.core import ConfigError
from veil.he.params import HEParams, make_context, plain_modulus_value

BLOCKS_ENC = ("sample_u", "sample_e", "ntt", "dyadic", "intt", "errors", "modswitch", "scale")
BLOCKS_DEC = ("ntt", "dyadic", "intt", "add", "scale_round")


def plain_from_coeffs(coeffs) -> seal.Plaintext:
    """SEAL's Plaintext from coefficients, through its hex-polynomial constructor."""
    terms = [f"{int(c):X}x^{i}" if i else f"{int(c):X}"
             for i, c in reversed(list(enumerate(coeffs))) if c]
    return seal.Plaintext(" + ".join(terms) if terms else "0")


def coeffs_from_plain(pt: seal.Plaintext, n: int) -> list[int]:
    out = [0] * n
    s = pt.to_string()
    if s == "0":
        return out
    for term in s.split(" + "):
        c, _, e = term.partition("x^")
        out[int(e) if e else 0] = int(c, 16)
    return out


@dataclass
class SealKeys:
    params: HEParams
    context: seal.SEALContext
    primes: list[int]           # key level, special prime last
    t: int
    public_key: bytes
    secret_key: bytes
    encryptor: seal.Encryptor
    decryptor: seal.Decryptor

    @property
    def n(self) -> int:
        return self.params.poly_degree


def seal_keys(p: HEParams) -> SealKeys:
    """Fresh SEAL keys for a parameter set (ConfigError where SEAL refuses it)."""
    ctx = make_context(p)
    kg = seal.KeyGenerator(ctx)
    pk, sk = kg.create_public_key(), kg.secret_key()
    primes = [m.value() for m in ctx.key_context_data().parms().coeff_modulus()]
    return SealKeys(p, ctx, primes, plain_modulus_value(ctx), pk.to_string(), sk.to_string(),
                    seal.Encryptor(ctx, pk), seal.Decryptor(ctx, sk))


PRNGS = ("blake2xb", "shake256")


def encrypt(keys: SealKeys, coeffs, seed: bytes, prng: str = "blake2xb") -> tuple[bytes, dict]:
    """TACO encrypts `coeffs` (each < t) under SEAL's public key with SEAL's PRNG `prng`
    seeded by the 64-byte `seed`: SEAL ciphertext bytes, counts."""
    template = keys.encryptor.encrypt(seal.Plaintext("0")).to_string()
    try:
        ct, led = _native.he_taco.encrypt(keys.public_key, template, keys.primes, keys.t,
                                          [int(c) for c in coeffs], seed, prng)
    except ValueError as e:
        raise ConfigError(f"he.taco: {e}") from None
    return ct, json.loads(led)


def decrypt(keys: SealKeys, ct: bytes) -> tuple[list[int], dict]:
    """TACO decrypts SEAL ciphertext bytes with SEAL's secret key: n coefficients, counts."""
    try:
        m, led = _native.he_taco.decrypt(keys.secret_key, ct, keys.primes, keys.t)
    except ValueError as e:
        raise ConfigError(f"he.taco: {e}") from None
    return m, json.loads(led)


def seal_decrypt(keys: SealKeys, ct: bytes) -> list[int]:
    c = seal.Ciphertext()
    c.load_bytes(keys.context, ct)
    return coeffs_from_plain(keys.decryptor.decrypt(c), keys.n)


def random_plain(keys: SealKeys, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, keys.t, keys.n, dtype=np.uint64)


@lru_cache(maxsize=32)
def op_counts(poly_degree: int, coeff_bits: tuple[int, ...], plain_bits: int = 20,
              seed: int = 1) -> dict:
    """Per-block operation counts of one encryption and one decryption at a parameter set,
    from running the datapath on real SEAL keys (and checking SEAL decrypts the result)."""
    keys = seal_keys(HEParams(poly_degree, coeff_bits, plain_bits))
    m = random_plain(keys, seed)
    ct, enc = encrypt(keys, m, seed.to_bytes(8, "little") * 8)
    if seal_decrypt(keys, ct) != [int(x) for x in m]:
        raise RuntimeError(f"he.taco: SEAL does not decrypt the datapath's ciphertext at {keys.params.label()}")
    _, dec = decrypt(keys, ct)
    return {"enc": enc, "dec": dec, "primes": len(keys.primes), "n": poly_degree}
