import numpy as np
import pytest

from veil.core import ConfigError
from veil.he.layers import (Conv, SumPool, check_input, client_step, linear_int, network,
                            Stage, random_model)
from he_fixtures import rng  # noqa: F401  (fixtures)


def naive_conv(x, w, b, pad):
    c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    ho, wo = h + 2 * pad - k + 1, wd + 2 * pad - k + 1
    out = np.zeros((o, ho, wo), dtype=np.int64)
    for oc in range(o):
        for y in range(ho):
            for xx in range(wo):
                out[oc, y, xx] = (xp[:, y:y + k, xx:xx + k] * w[oc]).sum() + b[oc]
    return out


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_linear_int_matches_loops(rng, pad):
    L = Conv("c", 3, 4, 7, 6, 5 if pad == 2 else 3, pad)
    x = rng.integers(0, 256, size=L.in_shape)
    w = rng.integers(-127, 128, size=L.weight_shape)
    b = rng.integers(-1000, 1000, size=4)
    assert np.array_equal(linear_int(L, x, w, b), naive_conv(x, w, b, pad))


def test_sum_pool(rng):
    L = SumPool("p", 2, 4, 4, 2, 2)
    x = rng.integers(0, 10, size=(2, 4, 4))
    want = x.reshape(2, 2, 2, 2, 2).sum(axis=(2, 4))
    assert np.array_equal(linear_int(L, x, None, None), want)


def test_client_step_requant_relu_pool():
    st = Stage(Conv("c", 1, 1, 4, 4, 1), relu=True, maxpool=2, requant=(3, 2))
    acc = np.array([[[-8, 4, 1, 2], [0, 0, 0, 7], [100, 0, 1, 1], [0, 0, 1, 2000]]])
    # (acc*3 + 2) >> 2, clamped to 0..255, then 2x2 max
    assert np.array_equal(client_step(st, acc), [[[3, 5], [75, 255]]])


def test_lenet5_small_macs_analytic():
    # conv1 24*24*6*25 + conv2 8*8*16*6*25 + fc 256*120 + 120*84 + 84*10
    assert network("lenet5_small").macs == 86400 + 153600 + 30720 + 10080 + 840


@pytest.mark.parametrize("name", ["lenet5_small", "lenet5_large", "squeezenet", "vgg16"])
def test_networks_chain(name):
    net = network(name)
    net.check()
    c, h, w = net.stages[-1].layer.out_shape
    assert c * h * w == 10


def test_vgg16_conv_macs():
    # Thirteen 3x3 convs of VGG16 on 32x32 CIFAR: the well-known ~313 M multiply-accumulates.
    net = network("vgg16")
    conv = sum(s.layer.macs for s in net.stages if s.layer.k == 3)
    assert conv == 313_196_544


def test_bad_inputs_are_config_errors():
    net = network("lenet5_small")
    with pytest.raises(ConfigError, match="input shape"):
        check_input(net, np.zeros((1, 28, 27), dtype=np.int64))
    with pytest.raises(ConfigError, match="integer"):
        check_input(net, np.zeros((1, 28, 28)))
    with pytest.raises(ConfigError, match="0..255"):
        check_input(net, np.full((1, 28, 28), 256))
    with pytest.raises(ConfigError, match="unknown"):
        network("alexnet")


def test_random_model_forward_shape():
    m = random_model(network("lenet5_small"), 0)
    x = np.random.default_rng(0).integers(0, 256, size=(1, 28, 28))
    assert m.forward(x).shape == (10,)
