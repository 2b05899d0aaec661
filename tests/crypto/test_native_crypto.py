"""Cross-checks veil._native.crypto against Python `cryptography` (OpenSSL) on random data."""

import random
import time

import pytest
from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.cmac import CMAC

from veil._native import crypto as nc

SIZES = [0, 1, 15, 16, 17, 63, 64, 1000, 4096, 65536 + 5]


@pytest.fixture
def rng():
    return random.Random(20261121)


def rb(rng, n):
    return rng.randbytes(n)


def openssl(alg, mode, data, decrypt=False):
    c = Cipher(alg, mode)
    ctx = c.decryptor() if decrypt else c.encryptor()
    return ctx.update(data) + ctx.finalize()


@pytest.mark.parametrize("klen", [16, 24, 32])
def test_aes_block_matches_openssl(rng, klen):
    for _ in range(20):
        key, block = rb(rng, klen), rb(rng, 16)
        ct = nc.aes_encrypt_block(key, block)
        assert ct == openssl(algorithms.AES(key), modes.ECB(), block)
        assert nc.aes_decrypt_block(key, ct) == block


@pytest.mark.parametrize("klen", [16, 32])
@pytest.mark.parametrize("size", SIZES)
def test_ctr_matches_openssl(rng, klen, size):
    key, nonce, data = rb(rng, klen), rb(rng, 8), rb(rng, size)
    counter = rng.randrange(0, 2**64 - 1 - (size // 16 + 1))
    expect = openssl(algorithms.AES(key), modes.CTR(nonce + counter.to_bytes(8, "big")), data)
    assert nc.ctr_xor(key, nonce, counter, data) == expect
    pad = nc.ctr_pad(key, nonce, counter, size)
    assert bytes(a ^ b for a, b in zip(pad, data)) == expect
    assert nc.ctr_xor(key, nonce, counter, expect) == data


def test_ctr_pads_tile_by_counter(rng):
    key, nonce = rb(rng, 16), rb(rng, 8)
    whole = nc.ctr_pad(key, nonce, 1000, 16 * 10)
    assert nc.ctr_pad(key, nonce, 1003, 16 * 7) == whole[48:]


@pytest.mark.parametrize("klen", [16, 32])
@pytest.mark.parametrize("size", SIZES + [262144 + 3])
def test_gcm_matches_openssl(rng, klen, size):
    key, nonce, pt = rb(rng, klen), rb(rng, 12), rb(rng, size)
    aad = rb(rng, rng.choice([0, 1, 20, 100]))
    sealed = nc.gcm_seal(key, nonce, aad, pt)
    assert sealed == AESGCM(key).encrypt(nonce, pt, aad or None)
    assert nc.gcm_open(key, nonce, aad, sealed) == pt
    assert AESGCM(key).decrypt(nonce, sealed, aad or None) == pt


def test_gcm_open_rejects_tampering(rng):
    key, nonce, aad, pt = rb(rng, 16), rb(rng, 12), rb(rng, 13), rb(rng, 200)
    sealed = nc.gcm_seal(key, nonce, aad, pt)
    for pos in [0, 57, 199, 200, 215]:  # ciphertext bytes and tag bytes
        bad = bytearray(sealed)
        bad[pos] ^= 0x10
        with pytest.raises(ValueError, match="authentication failed"):
            nc.gcm_open(key, nonce, aad, bytes(bad))
    with pytest.raises(ValueError, match="authentication failed"):
        nc.gcm_open(key, nonce, aad + b"x", sealed)
    with pytest.raises(ValueError, match="authentication failed"):
        nc.gcm_open(key, bytes(12), aad, sealed)
    with pytest.raises(ValueError, match="authentication failed"):
        nc.gcm_open(rb(rng, 16), nonce, aad, sealed)
    with pytest.raises(ValueError, match="at least the 16-byte tag"):
        nc.gcm_open(key, nonce, aad, sealed[:15])


def xts_tweak(address, version):
    return (address | version << 64).to_bytes(16, "little")


@pytest.mark.parametrize("klen", [32, 64])
def test_line_mode_matches_openssl_xts(rng, klen):
    for _ in range(25):
        key, line = rb(rng, klen), rb(rng, 64)
        address, version = rng.getrandbits(64), rng.choice([0, 1, rng.getrandbits(64)])
        ct = nc.line_encrypt(key, address, line, version)
        assert ct == openssl(algorithms.AES(key), modes.XTS(xts_tweak(address, version)), line)
        assert nc.line_decrypt(key, address, ct, version) == line


@pytest.mark.parametrize("chunk", [8, 16])
def test_line_macs_match_openssl_cmac(rng, chunk):
    mac_key, ct = rb(rng, 16), rb(rng, 64)
    address, version = rng.getrandbits(64), rng.getrandbits(64)
    tags = nc.line_macs(mac_key, address, ct, version, chunk)
    assert len(tags) == 64 // chunk
    for i, tag in enumerate(tags):
        c = CMAC(algorithms.AES(mac_key))
        c.update(address.to_bytes(8, "little") + version.to_bytes(8, "little"))
        c.update(bytes([i, chunk]) + ct[i * chunk : (i + 1) * chunk])
        assert tag == c.finalize()[:8]
    nc.line_verify(mac_key, address, ct, tags, version, chunk)
    bad = bytearray(ct)
    bad[3 * chunk] ^= 1
    with pytest.raises(ValueError, match=r"chunk\(s\) 3$"):
        nc.line_verify(mac_key, address, bytes(bad), tags, version, chunk)
    with pytest.raises(ValueError, match="authentication failed"):
        nc.line_verify(mac_key, address, ct, tags, version + 1 if version < 2**64 - 1 else 0, chunk)
    with pytest.raises(ValueError, match="authentication failed"):
        nc.line_verify(mac_key, address ^ 64, ct, tags, version, chunk)


def test_tdes_matches_openssl(rng):
    for _ in range(20):
        key, block = rb(rng, 24), rb(rng, 8)
        ct = nc.tdes_encrypt_block(key, block)
        assert ct == openssl(TripleDES(key), modes.ECB(), block)
        assert nc.tdes_decrypt_block(key, ct) == block


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nc.aes_encrypt_block(bytes(20), bytes(16)), "AES key must be 16, 24 or 32 bytes, got 20"),
        (lambda: nc.aes_encrypt_block(bytes(16), bytes(8)), "AES block must be 16 bytes, got 8"),
        (lambda: nc.ctr_pad(bytes(16), bytes(12), 0, 16), "AES-CTR nonce must be 8 bytes, got 12"),
        (lambda: nc.ctr_pad(bytes(16), bytes(8), 2**64 - 1, 17), "would wrap"),
        (lambda: nc.ctr_pad(bytes(16), bytes(8), -1, 16), "counter must be within"),
        (lambda: nc.gcm_seal(bytes(24), bytes(12), b"", b""), "AES-GCM key must be 16 or 32 bytes, got 24"),
        (lambda: nc.gcm_seal(bytes(16), bytes(16), b"", b""), "AES-GCM nonce must be 12 bytes, got 16"),
        (lambda: nc.line_encrypt(bytes(32), 0, bytes(64)), "halves K1 and K2 must differ"),
        (lambda: nc.line_encrypt(bytes(range(48)), 0, bytes(64)), "32 or 64 bytes, got 48"),
        (lambda: nc.line_encrypt(bytes(range(32)), 0, bytes(65)), "line must be 64 bytes, got 65"),
        (lambda: nc.line_encrypt(bytes(range(32)), 2**64, bytes(64)), "address must be within"),
        (lambda: nc.line_macs(bytes(16), 0, bytes(64), chunk=4), "chunk size must be 8 or 16"),
        (lambda: nc.line_macs(bytes(8), 0, bytes(64)), "16 bytes, got 8"),
        (lambda: nc.line_verify(bytes(16), 0, bytes(64), [bytes(8)] * 3), "expected 4 chunk tags"),
        (lambda: nc.line_verify(bytes(16), 0, bytes(64), [bytes(7)] * 4), "must be 8 bytes"),
        (lambda: nc.tdes_encrypt_block(bytes(16), bytes(8)), "TDES .* key must be 24 bytes, got 16"),
        (lambda: nc.throughput("rot13", 64, 1, 0.0), "unknown engine 'rot13'; known engines: aes-128-ecb"),
        (lambda: nc.throughput("tdes-ecb", 12, 1, 0.0), "multiple of 8"),
        (lambda: nc.throughput("aes-128-gcm", 64, 0, 0.0), "threads must be"),
    ],
)
def test_bad_input_is_one_line_value_error(call, message):
    with pytest.raises(ValueError, match=message) as e:
        call()
    assert "\n" not in str(e.value)


def test_engines_and_throughput_dict():
    names = [n for n, _ in nc.engines()]
    for want in ["aes-128-ecb", "aes-256-ecb", "aes-128-ctr", "aes-256-ctr", "aes-128-gcm",
                 "aes-256-gcm", "xts-aes-128-line", "tdes-ecb"]:
        assert want in names
    for name in names:
        # A clock outside the call bounds the time the engine reports: its rate cannot be slower
        # than bytes over this wall time, and cannot beat bytes over the requested minimum.
        t0 = time.perf_counter()
        r = nc.throughput(name, 4096, 1, 0.01)
        wall = time.perf_counter() - t0
        assert r["engine"] == name and r["size"] == 4096 and r["threads"] == 1
        assert r["iterations"] >= 1 and r["bytes"] == r["iterations"] * 4096
        assert 0.01 <= r["seconds"] <= wall
        assert r["bytes"] / wall / 1e9 <= r["gbps"] <= r["bytes"] / 0.01 / 1e9


def test_hardware_aes_reported():
    assert isinstance(nc.hardware_aes(), bool)
