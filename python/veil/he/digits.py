"""The real network: a small CNN trained on scikit-learn's bundled handwritten digits (8x8,
1,797 images, no download) and quantised to integers for encrypted inference.

conv 3x3 (1->8, same) -> ReLU -> maxpool 2 -> conv 3x3 (8->16, same) -> ReLU -> maxpool 2 ->
fully connected 64 -> 10. Float training in numpy (Adam, seeded); post-training quantisation:
8-bit symmetric weights per layer, 32-bit biases at the accumulator scale, unsigned 8-bit
activations re-quantised with an integer multiplier and a 16-bit shift (TFLite's scheme).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from veil.he.layers import Conv, Dense, Network, QuantModel, Stage

REQUANT_SHIFT = 16


def _conv_cols(x, k, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = sliding_window_view(xp, (k, k), axis=(2, 3))          # B, C, H, W, k, k
    b, c, h, w = cols.shape[:4]
    return cols.transpose(0, 2, 3, 1, 4, 5).reshape(b * h * w, c * k * k), (b, h, w)


def _conv_fwd(x, W, bias, pad):
    cols, (b, h, w) = _conv_cols(x, W.shape[2], pad)
    out = cols @ W.reshape(W.shape[0], -1).T + bias
    return out.reshape(b, h, w, -1).transpose(0, 3, 1, 2), cols


def _conv_bwd(dout, cols, x_shape, W, pad):
    o, c, k, _ = W.shape
    b, _, h, w = x_shape
    d = dout.transpose(0, 2, 3, 1).reshape(-1, o)
    dW = (d.T @ cols).reshape(W.shape)
    db = d.sum(axis=0)
    dcols = (d @ W.reshape(o, -1)).reshape(b, h, w, c, k, k)
    dxp = np.zeros((b, c, h + 2 * pad, w + 2 * pad))
    for i in range(k):
        for j in range(k):
            dxp[:, :, i:i + h, j:j + w] += dcols[..., i, j].transpose(0, 3, 1, 2)
    return dxp[:, :, pad:pad + h, pad:pad + w], dW, db


def _pool_fwd(x):
    b, c, h, w = x.shape
    r = x.reshape(b, c, h // 2, 2, w // 2, 2)
    m = r.max(axis=(3, 5))
    mask = r == m[:, :, :, None, :, None]
    return m, mask


def _pool_bwd(d, mask):
    g = mask * d[:, :, :, None, :, None]
    return g.reshape(g.shape[0], g.shape[1], g.shape[2] * 2, g.shape[4] * 2)


def _forward(params, x):
    W1, b1, W2, b2, W3, b3 = params
    z1, c1 = _conv_fwd(x, W1, b1, 1)
    a1 = np.maximum(z1, 0)
    p1, m1 = _pool_fwd(a1)
    z2, c2 = _conv_fwd(p1, W2, b2, 1)
    a2 = np.maximum(z2, 0)
    p2, m2 = _pool_fwd(a2)
    f = p2.reshape(len(x), -1)
    logits = f @ W3.T + b3
    return logits, (x, z1, c1, m1, p1, z2, c2, m2, f)


def _train(x, y, seed, epochs=15, batch=32, lr=3e-3):
    rng = np.random.default_rng(seed)

    def he(shape, fan):
        return rng.normal(0, np.sqrt(2 / fan), size=shape)

    params = [he((8, 1, 3, 3), 9), np.zeros(8), he((16, 8, 3, 3), 72), np.zeros(16),
              he((10, 64), 64), np.zeros(10)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = 0
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for s in range(0, len(x), batch):
            idx = order[s:s + batch]
            xb, yb = x[idx], y[idx]
            logits, (x0, z1, c1, m1, p1, z2, c2, m2, f) = _forward(params, xb)
            pr = np.exp(logits - logits.max(axis=1, keepdims=True))
            pr /= pr.sum(axis=1, keepdims=True)
            d = pr
            d[np.arange(len(yb)), yb] -= 1
            d /= len(yb)
            gW3, gb3 = d.T @ f, d.sum(axis=0)
            dp2 = (d @ params[4]).reshape(p1.shape[0], 16, 2, 2)
            dz2 = _pool_bwd(dp2, m2) * (z2 > 0)
            dp1, gW2, gb2 = _conv_bwd(dz2, c2, p1.shape, params[2], 1)
            dz1 = _pool_bwd(dp1, m1) * (z1 > 0)
            _, gW1, gb1 = _conv_bwd(dz1, c1, x0.shape, params[0], 1)
            grads = [gW1, gb1, gW2, gb2, gW3, gb3]
            step += 1
            for i, g in enumerate(grads):
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                mh = m[i] / (1 - 0.9 ** step)
                vh = v[i] / (1 - 0.999 ** step)
                params[i] -= lr * mh / (np.sqrt(vh) + 1e-8)
    return params


def digits_network(requants=((1, 0), (1, 0))) -> Network:
    st = (
        Stage(Conv("conv1", 1, 8, 8, 8, 3, 1), maxpool=2, requant=requants[0]),
        Stage(Conv("conv2", 8, 16, 4, 4, 3, 1), maxpool=2, requant=requants[1]),
        Stage(Dense("fc", 64, 10), relu=False),
    )
    return Network("digits", "sklearn digits 8x8", (1, 8, 8), st, input_bits=5,
                   notes="trained here on scikit-learn's bundled digits")


@dataclass
class DigitsModel:
    model: QuantModel
    x_test: np.ndarray          # int64 (n, 1, 8, 8), values 0..16
    y_test: np.ndarray
    float_accuracy: float
    quant_accuracy: float
    n_train: int


@lru_cache(maxsize=4)
def train_digits(seed: int = 0) -> DigitsModel:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    xi = d.images.astype(np.int64).reshape(-1, 1, 8, 8)
    xtr, xte, ytr, yte = train_test_split(xi, d.target, test_size=0.2, random_state=seed,
                                          stratify=d.target)
    params = _train(xtr / 16.0, ytr, seed)
    logits, _ = _forward(params, xte / 16.0)
    float_acc = float((logits.argmax(axis=1) == yte).mean())
    model = _quantise(params, xtr)
    preds = np.array([model.forward(x).argmax() for x in xte])
    return DigitsModel(model, xte, yte, float_acc, float((preds == yte).mean()), len(xtr))


def _quantise(params, xtr) -> QuantModel:
    W1, b1, W2, b2, W3, b3 = params
    s_in = 1 / 16.0
    qs, requants = [], []
    x = xtr / 16.0
    # Activation ranges from the training set (calibration), as post-training quantisation does.
    _, (x0, z1, c1, m1, p1, z2, c2, m2, f) = _forward(params, x)
    act_max = [max(np.maximum(z1, 0).max(), 1e-6), max(np.maximum(z2, 0).max(), 1e-6)]
    for i, (W, b) in enumerate(((W1, b1), (W2, b2), (W3, b3))):
        s_w = np.abs(W).max() / 127
        Wq = np.round(W / s_w).astype(np.int64)
        s_acc = s_in * s_w
        bq = np.round(b / s_acc).astype(np.int64)
        if i == 2:
            qs.append((Wq.reshape(10, 64, 1, 1), bq))
            break
        s_out = act_max[i] / 255
        requants.append((int(round(s_acc / s_out * (1 << REQUANT_SHIFT))), REQUANT_SHIFT))
        qs.append((Wq, bq))
        s_in = s_out
    net = digits_network(tuple(requants))
    return QuantModel(net, [q[0] for q in qs], [q[1] for q in qs])
