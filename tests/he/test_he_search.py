import numpy as np
import pytest

from veil.core import ConfigError
from veil.he.client import Client
from veil.he.layers import network, random_model
from veil.he.params import HEParams
from veil.he.search import check_params, plain_bits_needed, require_params, search
from veil.he.server import Server
from he_fixtures import toy_model  # noqa: F401  (fixtures)


@pytest.mark.parametrize("name", ["lenet5_small", "lenet5_large", "squeezenet", "vgg16"])
def test_networks_fit_8192_with_half_size_ciphertexts(name):
    r = search(random_model(network(name), 0), "rr")
    assert r.params.poly_degree <= 8192
    assert r.ct_bytes_ratio <= 0.55          # paper: 50% smaller than SEAL's default at N=8192
    assert r.check.min_budget >= 10


def test_masking_needs_larger_parameters(toy_model):
    rr = search(toy_model, "rr")
    mask = search(toy_model, "mask")
    # Masks spend a second multiplicative level: more or larger primes for the same network.
    assert (mask.params.ct_bytes, mask.params.log_q) > (rr.params.ct_bytes, rr.params.log_q)
    assert mask.params.log_q >= rr.params.log_q + 20


def test_probe_is_a_lower_bound_of_real_layers(toy_model):
    p = HEParams(8192, (60, 60, 60), 30)
    probed = check_params(toy_model, p, "rr").budgets
    cl = Client(toy_model.net, p, "rr")
    sv = Server(toy_model)
    msg, _ = cl.setup_message()
    sv.setup(msg)
    per = []
    x = np.random.default_rng(5).integers(0, 256, size=toy_model.net.input_shape)
    cl.infer(sv, x, per)
    for c, plan in zip(per, cl.plans):
        assert probed[plan.layer.name] <= c.min_noise_budget


def test_plain_modulus_covers_accumulators(toy_model):
    bits = plain_bits_needed(toy_model)
    bound = max(toy_model.acc_bound(i) for i in range(len(toy_model.net.stages)))
    assert 2 ** (bits - 1) > 2 * bound
    with pytest.raises(ConfigError, match="plain modulus"):
        require_params(toy_model, HEParams(8192, (60, 60, 60), bits - 2))


def test_too_small_is_reported(toy_model):
    with pytest.raises(ConfigError, match="too small"):
        require_params(toy_model, HEParams(8192, (60, 60), 30))


def test_probe_against_published_depthwise_measurement():
    # README measurement with SEAL 4.4: a 3x3 depth-wise convolution (8 rotations, 9 plaintext
    # products) at N=8192, primes [43, 43, 44], 20-bit t takes the budget from 58 to 29 bits.
    from veil.he.search import _probe, probe_budget
    p = HEParams(8192, (43, 43, 44), 20)
    pr = _probe(p)
    fresh = pr.dec.invariant_noise_budget(pr.enc.encrypt_symmetric(pr._pt(0, pr.t // 2)))
    assert 58 <= fresh <= 62                   # symmetric encryption: a little less noise
    after = probe_budget.__wrapped__(p, ("conv", False, False, 4, False, False, 0, False, 0))
    assert 25 <= after <= 29                   # a lower bound, within a few bits
