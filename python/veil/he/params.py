"""BFV parameter sets on Microsoft SEAL (through the `seal-python` wheel).

A parameter set is (N, bit sizes of the coefficient-modulus primes, plain-modulus bits). The
last prime is SEAL's special (key-switching) prime: it is dropped from ciphertexts, so a
ciphertext carries ``len(coeff_bits) - 1`` residues. Security is SEAL's own check against the
HomomorphicEncryption.org 128-bit tables (``CoeffModulus.MaxBitCount``), never ours.
"""

from __future__ import annotations

from dataclasses import dataclass

import seal

from veil.core import ConfigError

# What the wheel offers, recorded because the paper leans on both: SEAL's serialization
# compression (zlib/zstd) is compiled out (`compr_mode_type` has only `none`), and
# `encrypt_symmetric` returns a plain Ciphertext without the seed, so uploads are full size.
COMPRESSION_MODES = tuple(seal.compr_mode_type.__members__)
SEEDED_SYMMETRIC = False

# SEAL's serialized ciphertext = a 16-byte header, parameter ids and sizes (97 bytes in all
# for a 2-polynomial ciphertext) + 8 bytes per coefficient. Checked against `save_size` in tests.
CT_OVERHEAD_BYTES = 113
POLY_DEGREES = (1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class HEParams:
    poly_degree: int
    coeff_bits: tuple[int, ...]
    plain_bits: int

    @property
    def ct_primes(self) -> int:
        return max(1, len(self.coeff_bits) - 1)

    @property
    def slots(self) -> int:
        return self.poly_degree

    @property
    def row_slots(self) -> int:
        return self.poly_degree // 2

    @property
    def log_q(self) -> int:
        return sum(self.coeff_bits)

    @property
    def ct_bytes(self) -> int:
        """Serialized size of a fresh 2-polynomial ciphertext (no compression available)."""
        return CT_OVERHEAD_BYTES + 2 * self.poly_degree * self.ct_primes * 8

    @property
    def ct_bytes_seeded(self) -> int:
        """What SEAL's seeded symmetric serialization would send: c0 plus a 64-byte seed.

        An estimate only: the wheel does not expose seeded ciphertexts (see SEEDED_SYMMETRIC).
        """
        return CT_OVERHEAD_BYTES + self.poly_degree * self.ct_primes * 8 + 64

    def label(self) -> str:
        return f"N={self.poly_degree} q={list(self.coeff_bits)} t={self.plain_bits}b"

    def to_dict(self) -> dict:
        return {"poly_degree": self.poly_degree, "coeff_bits": list(self.coeff_bits),
                "plain_bits": self.plain_bits, "log_q": self.log_q,
                "ct_primes": self.ct_primes, "ct_bytes": self.ct_bytes}


def max_log_q(poly_degree: int) -> int:
    return seal.CoeffModulus.MaxBitCount(poly_degree, seal.sec_level_type.tc128)


def seal_default(poly_degree: int, plain_bits: int = 20) -> HEParams:
    bits = tuple(m.bit_count() for m in seal.CoeffModulus.BFVDefault(poly_degree))
    return HEParams(poly_degree, bits, plain_bits)


def validate(p: HEParams) -> None:
    """Raise ConfigError for a parameter set SEAL would refuse, before touching SEAL."""
    if p.poly_degree not in POLY_DEGREES:
        raise ConfigError(f"poly_degree: {p.poly_degree} is not one of {list(POLY_DEGREES)}")
    if len(p.coeff_bits) < 2:
        raise ConfigError("coeff_bits: need at least two primes (one for data, one special "
                          "prime for the Galois keys that rotations use)")
    if any(not 20 <= b <= 60 for b in p.coeff_bits):
        raise ConfigError(f"coeff_bits: every prime must have 20..60 bits, got {list(p.coeff_bits)}")
    if p.log_q > max_log_q(p.poly_degree):
        raise ConfigError(f"coeff_bits: log q = {p.log_q} exceeds {max_log_q(p.poly_degree)} bits, "
                          f"SEAL's 128-bit security limit for N={p.poly_degree}")
    lowest = (2 * p.poly_degree).bit_length() + 1
    if not lowest <= p.plain_bits <= 60:
        raise ConfigError(f"plain_bits: {p.plain_bits} outside {lowest}..60 for batching at "
                          f"N={p.poly_degree}")


def make_context(p: HEParams) -> seal.SEALContext:
    validate(p)
    parms = encryption_parameters(p)
    ctx = seal.SEALContext(parms, True, seal.sec_level_type.tc128)
    if not ctx.parameters_set():
        raise ConfigError(f"{p.label()}: SEAL rejects the parameters: {ctx.parameter_error_message()}")
    if not ctx.using_keyswitching():
        raise ConfigError(f"{p.label()}: SEAL offers no key switching (rotations) here; the "
                          f"special prime must be at least as large as the plain modulus")
    return ctx


def encryption_parameters(p: HEParams) -> seal.EncryptionParameters:
    parms = seal.EncryptionParameters(seal.scheme_type.bfv)
    parms.set_poly_modulus_degree(p.poly_degree)
    try:
        parms.set_coeff_modulus(seal.CoeffModulus.Create(p.poly_degree, list(p.coeff_bits)))
        parms.set_plain_modulus(seal.PlainModulus.Batching(p.poly_degree, p.plain_bits))
    except (ValueError, RuntimeError) as e:
        raise ConfigError(f"{p.label()}: SEAL cannot build these moduli: {e}") from e
    return parms


def plain_modulus_value(ctx: seal.SEALContext) -> int:
    return ctx.first_context_data().parms().plain_modulus().value()
