"""TACO's datapath interoperates with SEAL bit for bit: its ciphertexts decrypt under SEAL to
the plaintext it encrypted, and its decryption of SEAL's ciphertexts equals SEAL's, for
N = 4096/8192/16384 and every k = 2..9 primes SEAL allows at 128-bit security."""

import pytest
import seal

from veil.core import ConfigError
from veil.he.params import HEParams, max_log_q
from veil.he.taco import datapath as dp


def _sets():
    out = []
    for n in (4096, 8192, 16384):
        for k in range(2, 10):
            bits = min(60, max_log_q(n) // k)
            if bits >= 24:          # SEAL finds enough NTT primes of this size (not of 22 at 16384)
                out.append((n, k, bits))
    return out


SETS = _sets()


def test_parameter_grid_covers_every_degree_and_prime_count():
    assert {n for n, _, _ in SETS} == {4096, 8192, 16384}
    assert {k for n, k, _ in SETS if n == 8192} == set(range(2, 10))
    assert {k for n, k, _ in SETS if n == 16384} == set(range(2, 10))
    assert len(SETS) == 19


@pytest.mark.parametrize("n,k,bits", SETS)
def test_seal_interop(n, k, bits):
    keys = dp.seal_keys(HEParams(n, (bits,) * k, 20))
    m = dp.random_plain(keys, n + k)
    prng = dp.PRNGS[k % 2]                                           # both of SEAL's PRNGs
    ours, enc = dp.encrypt(keys, m, bytes([k]) * 64, prng)
    want = [int(x) for x in m]
    assert dp.seal_decrypt(keys, ours) == want                      # SEAL reads ours
    theirs = keys.encryptor.encrypt(dp.plain_from_coeffs(m)).to_string()
    got, dec = dp.decrypt(keys, theirs)
    assert got == dp.seal_decrypt(keys, theirs) == want             # we read SEAL's
    assert dp.decrypt(keys, ours)[0] == want
    # counts come from running: one NTT of u per key-level prime, two inverse NTTs per prime
    half_nlogn = n // 2 * (n.bit_length() - 1)
    assert enc["ntt"]["butterflies"] == k * half_nlogn
    assert enc["intt"]["butterflies"] == 2 * k * half_nlogn
    assert dec["ntt"]["butterflies"] == (k - 1) * half_nlogn
    # the rest of a transform's work, by hand (worked for N = 8 in ntt.rs): its stages read
    # 1 + 2 + ... + N/2 = N - 1 twiddles, a butterfly makes two modular adds (sum and
    # difference) and reads two coefficients, the inverse multiplies each of the N
    # coefficients by n^-1 once
    assert enc["ntt"]["modadds"] == 2 * k * half_nlogn
    assert enc["ntt"]["sram_reads"] == k * ((n - 1) + 2 * half_nlogn)
    assert enc["intt"]["sram_reads"] == 2 * k * ((n - 1) + 2 * half_nlogn + n)
    assert enc["intt"]["modmuls"] == 2 * k * (half_nlogn + n)
    assert dec["intt"]["modmuls"] == (k - 1) * (half_nlogn + n)
    assert enc["sample_u"]["prng_bytes"] == 4 * n and enc["sample_e"]["prng_bytes"] == 12 * n


def test_two_encryptions_differ_and_both_decrypt():
    keys = dp.seal_keys(HEParams(4096, (36, 36, 37), 20))
    m = dp.random_plain(keys, 1)
    a, _ = dp.encrypt(keys, m, b"a" * 64)
    b, _ = dp.encrypt(keys, m, b"b" * 64)
    assert a != b
    assert dp.seal_decrypt(keys, a) == dp.seal_decrypt(keys, b) == [int(x) for x in m]


def test_wrong_or_corrupt_inputs_are_config_errors():
    keys = dp.seal_keys(HEParams(4096, (36, 36, 37), 20))
    with pytest.raises(ConfigError, match="plaintext"):
        dp.encrypt(keys, [keys.t], b"s" * 64)
    with pytest.raises(ConfigError, match="prng seed: 32 bytes, SEAL's seed is 64"):
        dp.encrypt(keys, [1], b"s" * 32)
    with pytest.raises(ConfigError, match="known: blake2xb, shake256"):
        dp.encrypt(keys, [1], b"s" * 64, "blake3")
    ct, _ = dp.encrypt(keys, [1, 2, 3], b"s" * 64)
    with pytest.raises(ConfigError, match="magic"):
        dp.decrypt(keys, b"\x00" * len(ct))
    with pytest.raises(ConfigError, match="header says"):
        dp.decrypt(keys, ct[:-8])
    with pytest.raises(ConfigError, match="SEAL rejects|exceeds|cannot build"):
        dp.seal_keys(HEParams(4096, (60, 60), 20))
    assert seal.compr_mode_type.none is not None


def test_mod_switched_ciphertexts_decrypt_at_every_level():
    """SEAL's BFV chain drops the last data prime at each switch; the datapath decrypts a
    ciphertext at any level, as SEAL does, and refuses what it cannot decrypt in one line."""
    keys = dp.seal_keys(HEParams(8192, (40, 40, 40, 40, 40), 20))
    ev = seal.Evaluator(keys.context)
    m = dp.random_plain(keys, 11)
    ct = keys.encryptor.encrypt(dp.plain_from_coeffs(m))
    want = [int(x) for x in m]
    levels = []
    for _ in range(len(keys.primes) - 1):
        b = ct.to_string()
        got, led = dp.decrypt(keys, b)
        assert got == dp.seal_decrypt(keys, b) == want
        levels.append(led["scale_round"]["modmuls"] // keys.n)
        if ct.coeff_modulus_size() > 1:
            ev.mod_switch_to_next_inplace(ct)
    # scale-and-round works over the primes left: 3 j + 3 multiplies per coefficient at j primes
    assert levels == [3 * j + 3 for j in (4, 3, 2, 1)]
    sq = ev.square(keys.encryptor.encrypt(dp.plain_from_coeffs([1])))
    with pytest.raises(ConfigError, match="3 polynomials; the datapath decrypts 2"):
        dp.decrypt(keys, sq.to_string())
    other = dp.seal_keys(HEParams(8192, (40, 40, 40), 20))
    with pytest.raises(ConfigError, match="4 primes, but the modulus chain's levels hold 1 to 2"):
        dp.decrypt(other, keys.encryptor.encrypt(dp.plain_from_coeffs([1])).to_string())
