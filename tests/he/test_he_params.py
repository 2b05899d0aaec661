import numpy as np
import pytest
import seal

from veil.core import ConfigError
from veil.he.params import HEParams, make_context, seal_default, validate


@pytest.mark.parametrize("p", [HEParams(4096, (36, 36, 37), 20), HEParams(8192, (43, 43, 44), 20),
                               seal_default(8192)])
def test_ct_bytes_formula_matches_seal(p):
    ctx = make_context(p)
    kg = seal.KeyGenerator(ctx)
    enc = seal.Encryptor(ctx, kg.secret_key())
    be = seal.BatchEncoder(ctx)
    ct = enc.encrypt_symmetric(be.encode(np.arange(p.slots, dtype=np.int64) % 7))
    assert len(ct.to_string()) == p.ct_bytes


def test_seal_default_8192_and_half_size():
    d = seal_default(8192)
    assert d.coeff_bits == (43, 43, 44, 44, 44)
    # The paper's CHOCO point (8192, 3 primes) halves the ciphertext: 2 residues instead of 4.
    assert HEParams(8192, (43, 43, 44), 20).ct_bytes / d.ct_bytes == pytest.approx(0.5, abs=1e-3)


@pytest.mark.parametrize("p, msg", [
    (HEParams(4096, (60, 60), 20), "security limit"),
    (HEParams(3000, (40, 40), 20), "poly_degree"),
    (HEParams(8192, (60,), 20), "two primes"),
    (HEParams(8192, (43, 43, 44), 70), "plain_bits"),
])
def test_invalid_params(p, msg):
    with pytest.raises(ConfigError, match=msg):
        validate(p)
