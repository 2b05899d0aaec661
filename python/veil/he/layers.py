"""Layer specifications, the four networks of the paper, and exact integer reference inference.

The server evaluates the linear layers (convolution, fully connected, sum pooling) on
ciphertexts; everything else (ReLU, max pooling, re-quantisation) is a client step between
two server layers. A network is a list of `Stage`s: one server layer plus the client steps that
follow it. The integer functions here are the plaintext reference that encrypted inference
must equal bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from veil.core import ConfigError


@dataclass(frozen=True)
class Conv:
    """Stride-1 convolution; `pad` zero pixels on each side (pad=(k-1)//2 is 'same')."""
    name: str
    c_in: int
    c_out: int
    h: int
    w: int
    k: int
    pad: int = 0
    # Output channels [0, k1_outputs) use only the kernel centre: SqueezeNet's 1x1 expand
    # branch fused with its 3x3 branch (the two read the same input, so the client sends it once).
    k1_outputs: int = 0

    @property
    def in_shape(self) -> tuple[int, int, int]:
        return (self.c_in, self.h, self.w)

    @property
    def out_shape(self) -> tuple[int, int, int]:
        return (self.c_out, self.h + 2 * self.pad - self.k + 1, self.w + 2 * self.pad - self.k + 1)

    @property
    def macs(self) -> int:
        _, ho, wo = self.out_shape
        full = (self.c_out - self.k1_outputs) * self.c_in * self.k * self.k
        return ho * wo * (full + self.k1_outputs * self.c_in)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        return (self.c_out, self.c_in, self.k, self.k)


def Dense(name: str, n_in: int, n_out: int) -> Conv:
    """A fully connected layer is a 1x1 convolution on a 1x1 image with n_in channels."""
    return Conv(name, n_in, n_out, 1, 1, 1, 0)


@dataclass(frozen=True)
class SumPool:
    """k x k window sums at stride `stride` (average pooling without the division, which the
    client folds into its re-quantisation)."""
    name: str
    c: int
    h: int
    w: int
    k: int
    stride: int

    @property
    def in_shape(self) -> tuple[int, int, int]:
        return (self.c, self.h, self.w)

    @property
    def out_shape(self) -> tuple[int, int, int]:
        return (self.c, (self.h - self.k) // self.stride + 1, (self.w - self.k) // self.stride + 1)

    @property
    def macs(self) -> int:
        c, ho, wo = self.out_shape
        return c * ho * wo * self.k * self.k


@dataclass(frozen=True)
class Stage:
    layer: Conv | SumPool
    relu: bool = True            # clamp at 0 (part of re-quantisation to unsigned activations)
    maxpool: int = 0             # k x k max pooling at stride k after re-quantisation; 0 = none
    requant: tuple[int, int] = (1, 0)   # (multiplier, right shift): q = (acc*m + half) >> s
    act_bits: int = 8            # activations are clipped to [0, 2^act_bits - 1] when relu

    def client_out_shape(self) -> tuple[int, int, int]:
        c, h, w = self.layer.out_shape
        if self.maxpool:
            h, w = h // self.maxpool, w // self.maxpool
        return (c, h, w)


@dataclass(frozen=True)
class Network:
    name: str
    dataset: str
    input_shape: tuple[int, int, int]
    stages: tuple[Stage, ...]
    input_bits: int = 8
    weight_bits: int = 8
    notes: str = ""

    @property
    def macs(self) -> int:
        return sum(s.layer.macs for s in self.stages)

    def layers(self) -> list:
        return [s.layer for s in self.stages]

    def check(self) -> None:
        shape = self.input_shape
        for s in self.stages:
            want = s.layer.in_shape
            if int(np.prod(want)) != int(np.prod(shape)) or (want[1:] != (1, 1) and want != shape):
                raise ConfigError(f"{self.name}: layer {s.layer.name} expects input {want}, "
                                  f"previous stage gives {shape}")
            shape = s.client_out_shape()


def _conv_stage(name, c_in, c_out, hw, k=3, pad=1, maxpool=0, k1=0, relu=True):
    return Stage(Conv(name, c_in, c_out, hw, hw, k, pad, k1), relu=relu, maxpool=maxpool)


def lenet5_small() -> Network:
    # Reconstruction of the mlpack Kaggle digit recogniser ([42]): classic LeNet-5 shapes.
    st = (
        _conv_stage("conv1", 1, 6, 28, k=5, pad=0, maxpool=2),     # 24x24 -> 12x12
        _conv_stage("conv2", 6, 16, 12, k=5, pad=0, maxpool=2),    # 8x8 -> 4x4
        Stage(Dense("fc1", 256, 120)),
        Stage(Dense("fc2", 120, 84)),
        Stage(Dense("fc3", 84, 10), relu=False),
    )
    return Network("lenet5_small", "MNIST", (1, 28, 28), st)


def lenet5_large() -> Network:
    # The TensorFlow LeNet-5-like MNIST example ([43]): 5x5 'same' convs with 32 and 64 filters.
    st = (
        _conv_stage("conv1", 1, 32, 28, k=5, pad=2, maxpool=2),
        _conv_stage("conv2", 32, 64, 14, k=5, pad=2, maxpool=2),
        Stage(Dense("fc1", 3136, 512)),
        Stage(Dense("fc2", 512, 10), relu=False),
    )
    return Network("lenet5_large", "MNIST", (1, 28, 28), st)


def squeezenet() -> Network:
    # Reconstruction of the CIFAR-10 SqueezeNet of [43] (tensorsandbox): a 3x3 stem, fire
    # modules (1x1 squeeze, then 1x1 and 3x3 expands read the same input and are fused into one
    # 3x3 layer whose first e1 filters are centre-only), a 1x1 classifier and global average pool.
    st = [_conv_stage("conv1", 3, 64, 32, maxpool=2)]                      # -> 64x16x16
    hw, c = 16, 64
    fires = [("fire2", 16, 64), ("fire3", 16, 64), ("pool", 0, 0), ("fire4", 32, 128),
             ("fire5", 32, 128), ("pool", 0, 0), ("fire6", 48, 192), ("fire7", 48, 192),
             ("fire8", 64, 256), ("fire9", 64, 256)]
    pending_pool = False
    for name, s, e in fires:
        if name == "pool":
            pending_pool = True
            continue
        if pending_pool:
            last = st[-1]
            st[-1] = Stage(last.layer, last.relu, 2, last.requant, last.act_bits)
            hw //= 2
            pending_pool = False
        st.append(_conv_stage(f"{name}_squeeze", c, s, hw, k=1, pad=0))
        st.append(_conv_stage(f"{name}_expand", s, 2 * e, hw, k=3, pad=1, k1=e))
        c = 2 * e
    st.append(_conv_stage("conv10", c, 10, hw, k=1, pad=0))
    st.append(Stage(SumPool("avgpool", 10, hw, hw, hw, hw), relu=False))
    return Network("squeezenet", "CIFAR-10", (3, 32, 32), tuple(st))


def vgg16() -> Network:
    # VGG16 for CIFAR-10 after Liu and Deng ([44]): thirteen 3x3 convs, five 2x2 max pools,
    # then two fully connected layers.
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    st: list[Stage] = []
    c, hw, i = 3, 32, 0
    for v in cfg:
        if v == "M":
            last = st[-1]
            st[-1] = Stage(last.layer, last.relu, 2, last.requant, last.act_bits)
            hw //= 2
            continue
        i += 1
        st.append(_conv_stage(f"conv{i}", c, v, hw))
        c = v
    st.append(Stage(Dense("fc1", 512, 512)))
    st.append(Stage(Dense("fc2", 512, 10), relu=False))
    return Network("vgg16", "CIFAR-10", (3, 32, 32), tuple(st))


NETWORKS = {"lenet5_small": lenet5_small, "lenet5_large": lenet5_large,
            "squeezenet": squeezenet, "vgg16": vgg16}


def network(name: str) -> Network:
    if name not in NETWORKS:
        raise ConfigError(f"network: unknown '{name}', expected one of {sorted(NETWORKS)}")
    return NETWORKS[name]()


# ---------------------------------------------------------------- integer reference inference

def linear_int(layer, x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None) -> np.ndarray:
    """Exact int64 result of a server layer on an integer input of shape layer.in_shape."""
    x = np.asarray(x, dtype=np.int64).reshape(layer.in_shape)
    if isinstance(layer, SumPool):
        win = sliding_window_view(x, (layer.k, layer.k), axis=(1, 2))
        s = win.sum(axis=(-1, -2))
        return s[:, ::layer.stride, ::layer.stride][:, :layer.out_shape[1], :layer.out_shape[2]]
    xp = np.pad(x, ((0, 0), (layer.pad, layer.pad), (layer.pad, layer.pad)))
    win = sliding_window_view(xp, (layer.k, layer.k), axis=(1, 2))   # c, ho, wo, k, k
    out = np.einsum("ocij,cyxij->oyx", np.asarray(w, dtype=np.int64), win, optimize=True)
    if b is not None:
        out = out + np.asarray(b, dtype=np.int64)[:, None, None]
    return out


def client_step(stage: Stage, acc: np.ndarray) -> np.ndarray:
    """Re-quantise, clamp (ReLU), max-pool: what the client does to a decrypted layer output."""
    m, s = stage.requant
    y = acc.astype(np.int64) * m
    if s:
        y = (y + (1 << (s - 1))) >> s
    if stage.relu:
        y = np.clip(y, 0, (1 << stage.act_bits) - 1)
    if stage.maxpool:
        k = stage.maxpool
        c, h, w = y.shape
        y = y[:, :h - h % k, :w - w % k].reshape(c, h // k, k, w // k, k).max(axis=(2, 4))
    return y


@dataclass
class QuantModel:
    """A network with integer weights: the server's model."""
    net: Network
    weights: list = field(default_factory=list)   # per stage: int array or None (SumPool)
    biases: list = field(default_factory=list)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Plaintext integer inference; returns the last layer's accumulators (logits)."""
        y = check_input(self.net, x)
        for i, st in enumerate(self.net.stages):
            acc = linear_int(st.layer, y, self.weights[i], self.biases[i])
            if i == len(self.net.stages) - 1:
                return acc.reshape(-1)
            y = client_step(st, acc)
        raise AssertionError("network has no stages")

    def acc_bound(self, i: int) -> int:
        """Largest |accumulator| stage i can produce for any admissible input (sets t)."""
        st = self.net.stages[i]
        xmax = (1 << self.net.input_bits) - 1 if i == 0 else (1 << self.net.stages[i - 1].act_bits) - 1
        if isinstance(st.layer, SumPool):
            return xmax * st.layer.k * st.layer.k
        w = np.abs(np.asarray(self.weights[i], dtype=np.int64)).reshape(st.layer.c_out, -1).sum(axis=1)
        b = np.abs(np.asarray(self.biases[i], dtype=np.int64)) if self.biases[i] is not None else 0
        return int((w * xmax + b).max())


def check_input(net: Network, x) -> np.ndarray:
    x = np.asarray(x)
    if x.shape != net.input_shape:
        raise ConfigError(f"{net.name}: input shape {x.shape} does not match {net.input_shape}")
    if not np.issubdtype(x.dtype, np.integer):
        raise ConfigError(f"{net.name}: input must be integer (quantised), got {x.dtype}")
    hi = (1 << net.input_bits) - 1
    if x.min() < 0 or x.max() > hi:
        raise ConfigError(f"{net.name}: input values must lie in 0..{hi}")
    return x.astype(np.int64)


def random_model(net: Network, seed: int) -> QuantModel:
    """Random quantised weights for cost runs; re-quantisation shifts keep activations 8-bit."""
    rng = np.random.default_rng(seed)
    net.check()
    wmax = (1 << (net.weight_bits - 1)) - 1
    ws, bs, stages = [], [], []
    for st in net.stages:
        L = st.layer
        if isinstance(L, SumPool):
            ws.append(None)
            bs.append(None)
            shift = max(0, int(np.ceil(np.log2(L.k * L.k))))
            stages.append(Stage(L, st.relu, st.maxpool, (1, shift), st.act_bits))
            continue
        w = rng.integers(-wmax, wmax + 1, size=L.weight_shape)
        if L.k1_outputs:
            keep = np.zeros((L.k, L.k), dtype=bool)
            keep[L.k // 2, L.k // 2] = True
            w[:L.k1_outputs] *= keep
        fan_in = L.c_in * L.k * L.k
        b = rng.integers(-wmax, wmax + 1, size=L.c_out) * 16
        ws.append(w)
        bs.append(b)
        # Zero-mean random weights make the typical |acc| ~ sqrt(fan_in)*wmax*xmax/2: shift so
        # the next layer sees activations spread over the 8-bit range.
        typ = np.sqrt(fan_in) * wmax * 128
        stages.append(Stage(L, st.relu, st.maxpool, (1, max(0, int(np.log2(typ)) - 7)), st.act_bits))
    return QuantModel(Network(net.name, net.dataset, net.input_shape, tuple(stages),
                              net.input_bits, net.weight_bits, net.notes), ws, bs)
