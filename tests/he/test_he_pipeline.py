"""End-to-end encrypted inference against the integer reference, and the error paths."""

import numpy as np
import pytest

from veil.core import ConfigError
from veil.he import wire
from veil.he.accounting import Counts
from veil.he.client import Client
from veil.he.params import HEParams
from veil.he.server import Server, count_plan

P = HEParams(8192, (60, 60, 60), 30)


def run(model, params, mode, x):
    cl = Client(model.net, params, mode)
    sv = Server(model)
    msg, _ = cl.setup_message()
    sv.setup(msg)
    per = []
    return cl.infer(sv, x, per), per, cl


@pytest.fixture(scope="module")
def toy_runs(toy_model, small_model):
    x = np.random.default_rng(3).integers(0, 256, size=toy_model.net.input_shape)
    xs = np.random.default_rng(4).integers(0, 256, size=small_model.net.input_shape)
    runs = {"rr": run(toy_model, P, "rr", x)}
    runs.update({f"small-{m}": run(small_model, P, m, xs) for m in ("rr", "mask")})
    return {"rr": x, "small-rr": xs, "small-mask": xs}, runs


@pytest.mark.parametrize("mode", ["rr", "small-rr", "small-mask"])
def test_encrypted_equals_plaintext(toy_model, small_model, toy_runs, mode):
    xs, runs = toy_runs
    model = toy_model if mode == "rr" else small_model
    out, per, _ = runs[mode]
    assert np.array_equal(out, model.forward(xs[mode]))


def test_rotational_redundancy_needs_no_masks(toy_runs):
    _, runs = toy_runs
    assert sum(c.mask_mults for c in runs["rr"][1]) == 0
    # rr outputs are zero outside their frames, so output ciphertexts are folded mask-free
    assert any(p.wire_out_cts < p.out_cts for p in runs["rr"][2].plans)
    rr, mask = runs["small-rr"][1], runs["small-mask"][1]
    assert sum(c.mask_mults for c in rr) == 0
    assert sum(c.mask_mults for c in mask) > 0
    assert sum(c.all_rotations for c in rr) < sum(c.all_rotations for c in mask)
    for a, b, plan in zip(rr, mask, runs["small-rr"][2].plans):
        if not plan.depthwise:
            assert a.min_noise_budget > b.min_noise_budget + 10


class _SpyEvaluator:
    """SEAL's evaluator, recording the plaintext operand of every multiply_plain it runs."""

    def __init__(self, ev):
        self._ev = ev
        self.plaintexts = []

    def multiply_plain(self, ct, pt):
        self.plaintexts.append(pt)
        return self._ev.multiply_plain(ct, pt)

    def __getattr__(self, name):
        return getattr(self._ev, name)


@pytest.mark.parametrize("mode", ["rr", "mask"])
def test_every_plaintext_product_is_a_weight(small_model, mode):
    """Checked at SEAL, not with the code's own counters (which count no masks in rr by
    construction): with rotational redundancy every multiply_plain SEAL executes takes one of the
    server's weight plaintexts, so no product is a mask. The masking baseline is the control:
    its other products are exactly its mask multiplications."""
    x = np.random.default_rng(9).integers(0, 256, size=small_model.net.input_shape)
    cl = Client(small_model.net, P, mode)
    sv = Server(small_model)
    msg, _ = cl.setup_message()
    sv.setup(msg)
    assert sv._cache, "weights must be prepared at setup for the identity check"
    spy = sv.ev = _SpyEvaluator(sv.ev)
    per = []
    assert np.array_equal(cl.infer(sv, x, per), small_model.forward(x))
    weights = {id(pt) for cache in sv._cache.values() for blocks in cache.values() for _, _, pt in blocks}
    others = [pt for pt in spy.plaintexts if id(pt) not in weights]
    assert len(spy.plaintexts) - len(others) == sum(c.weight_mults for c in per) > 0
    if mode == "rr":
        assert others == []
    else:
        assert len(others) == sum(c.mask_mults for c in per) > 0


@pytest.mark.parametrize("mode", ["rr", "small-rr", "small-mask"])
def test_static_counts_equal_executed(toy_model, small_model, toy_runs, mode):
    _, runs = toy_runs
    model = toy_model if mode == "rr" else small_model
    _, per, cl = runs[mode]
    for i, (c, plan) in enumerate(zip(per, cl.plans)):
        s = count_plan(plan, model.weights[i])
        got = (c.rotations, c.column_rotations, c.weight_mults, c.mask_mults)
        assert got == (s.rotations, s.column_rotations, s.weight_mults, s.mask_mults)
        assert (c.encryptions, c.decryptions) == (plan.in_cts, plan.wire_out_cts)


def test_bytes_are_what_crossed(toy_runs):
    _, runs = toy_runs
    _, per, cl = runs["rr"]
    for c, plan in zip(per, cl.plans):
        env_up = 11 + 16 + 4 * plan.in_cts
        env_down = 11 + 16 + 4 * plan.wire_out_cts
        assert c.bytes_up == plan.in_cts * P.ct_bytes + env_up
        assert c.bytes_down == plan.wire_out_cts * P.ct_bytes + env_down


def test_corrupted_bytes_are_a_clear_error(toy_model):
    cl = Client(toy_model.net, P, "rr")
    sv = Server(toy_model)
    msg, _ = cl.setup_message()
    sv.setup(msg)
    x = np.zeros(toy_model.net.input_shape, dtype=np.int64)
    c = Counts()
    m = bytearray(cl.encrypt_layer(0, x, c))
    m[len(m) // 2] ^= 0x40
    with pytest.raises(ConfigError, match="corrupted"):
        sv.handle(bytes(m), 0, c)
    good = cl.encrypt_layer(0, x, c)
    with pytest.raises(ConfigError, match="truncated|too short|checksum"):
        sv.handle(good[:-100], 0, c)
    with pytest.raises(ConfigError, match="layer"):
        sv.handle(good, 1, c)
    # Bytes that pass the envelope but not SEAL's own validation
    _, blobs = wire.unpack(good, 2, 0)
    bad = bytearray(blobs[0])
    bad[200:208] = b"\xff" * 8
    with pytest.raises(ConfigError, match="corrupted ciphertext"):
        sv.handle(wire.pack(2, 0, [bytes(bad)]), 0, c)


def test_wrong_input_shape(toy_model):
    cl = Client(toy_model.net, P, "rr")
    with pytest.raises(ConfigError, match="input shape"):
        cl.infer(None, np.zeros((12, 16, 15), dtype=np.int64))


def test_too_small_parameters_fail_loudly(toy_model):
    # 3 primes of 36 bits leave too little noise budget for the accumulations of the toy model.
    small = HEParams(8192, (36, 36, 36), 30)
    x = np.random.default_rng(1).integers(0, 256, size=toy_model.net.input_shape)
    with pytest.raises(ConfigError, match="noise budget exhausted"):
        run(toy_model, small, "rr", x)


def test_key_memory_guard():
    from veil.he.layers import network, random_model
    m = random_model(network("vgg16"), 0)
    with pytest.raises(ConfigError, match="Galois keys"):
        Client(m.net, HEParams(8192, (45, 45, 45, 45), 29), "mask").setup_message()
