import numpy as np
import pytest

from veil.he.client import Client
from veil.he.digits import train_digits
from veil.he.search import search
from veil.he.server import Server


@pytest.fixture(scope="module")
def digits():
    return train_digits(0)


def test_trained_and_quantised_accuracy(digits):
    assert len(digits.x_test) == 360
    assert digits.float_accuracy >= 0.93
    assert digits.quant_accuracy >= 0.93
    assert abs(digits.float_accuracy - digits.quant_accuracy) <= 0.02


def test_encrypted_inference_is_bit_exact(digits):
    r = search(digits.model, "rr")
    cl = Client(digits.model.net, r.params, "rr", measure_zlib=True)
    sv = Server(digits.model)
    msg, _ = cl.setup_message()
    sv.setup(msg)
    for x in digits.x_test[:3]:
        per = []
        assert np.array_equal(cl.infer(sv, x, per), digits.model.forward(x))
        assert sum(c.mask_mults for c in per) == 0
        assert min(c.min_noise_budget for c in per) >= 10
        for c in per:
            # Deflate finds the unused high bits of 64-bit words holding < 60-bit residues.
            assert 0 < c.bytes_up_zlib < c.bytes_up and 0 < c.bytes_down_zlib < c.bytes_down
            assert c.bytes_up_seeded < c.bytes_up
