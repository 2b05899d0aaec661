"""he's attacker: the server that evaluates the network on the client's ciphertexts.

The paper's server (semi-honest) holds the model, receives the encryption parameters and Galois
keys once, then per layer one message of input ciphertexts, evaluates the linear layer and
answers. It sees every message's size and ciphertext count, the operations it performs (their
kind and number) and when messages arrive and leave (hence how long the client takes between
layers); it never sees the secret key, the plaintext input, the decrypted results or the
client's noise budgets. The secret is the client's input image; the claim is that nothing but
the public network shape reaches the server.

Run with real SEAL (BFV) on a small convolutional network (4x8x8 input, two 3x3 convolutions
and a sum pool; random weights, which the server knows anyway): one setup per session (layout
and seed), then `size` inferences. Window i is inference i; its features, layer by layer:
- volume: bytes in and out, ciphertexts in and out, rotations (row and column), plaintext
  products (weights and masks), additions, NTT conversions;
- temporal: the server's compute time per layer, and the client's time between the server's
  reply and its next message (wall clock: not deterministic, the one exception to a seed
  fixing the run).
"""

from __future__ import annotations

import time
import zlib
from functools import lru_cache

import numpy as np

from veil.core.leak.observer import Observer, Run, paired_p, register_observer
from veil.he.accounting import Counts
from veil.he.client import Client
from veil.he.layers import Conv, Network, Stage, SumPool, check_input, client_step, random_model
from veil.he.params import HEParams
from veil.he.server import Server

PARAMS = HEParams(8192, (60, 60, 60), 30)
SETTINGS = {
    "rr": "the paper's rotate-and-reduce layout (BFV, N = 8192)",
    "mask": "the masking baseline layout (input and giant-step masks)",
}
PATTERNS = {
    "random": "uniform 8-bit pixels",
    "random-b": "the same distribution as random with other draws (a same-secret twin: must not be flagged)",
    "zeros": "an all-black image (every pixel 0)",
    "saturated": "an all-white image (every pixel 255)",
}
OPS = ("rotations", "column_rotations", "weight_mults", "mask_mults", "additions", "ntt")


def network() -> Network:
    return Network("leak-small", "random", (4, 8, 8), (
        Stage(Conv("c1", 4, 6, 8, 8, 3, 1)),
        Stage(Conv("c2", 6, 5, 8, 8, 3, 0)),
        Stage(SumPool("p", 5, 6, 6, 2, 2), relu=False)), input_bits=8)


@lru_cache(maxsize=2)
def _session(setting: str) -> tuple[Client, Server]:
    """One client and server per layout: the keys are generated once, as in a deployment."""
    net = network()
    cl, sv = Client(net, PARAMS, setting), Server(random_model(net, 4))
    msg, _ = cl.setup_message()
    sv.setup(msg)
    return cl, sv


def image(pattern: str, seed: int, i: int, shape) -> np.ndarray:
    if pattern == "zeros":
        return np.zeros(shape, dtype=np.int64)
    if pattern == "saturated":
        return np.full(shape, 255, dtype=np.int64)
    rng = np.random.default_rng([seed, i, zlib.crc32(pattern.encode())])
    return rng.integers(0, 256, size=shape)


def server_view(setting: str, pattern: str, seed: int, size: int) -> list[list[dict]]:
    """Per inference, per layer: what the server sees of the exchange."""
    cl, sv = _session(setting)
    out = []
    for i in range(size):
        y = check_input(cl.net, image(pattern, seed, i, cl.net.input_shape))
        layers, t_reply = [], None
        for k, st in enumerate(cl.net.stages):
            c = Counts()
            msg = cl.encrypt_layer(k, y, c)
            t_in = time.perf_counter()  # the message arrives
            reply = sv.handle(msg, k, c)
            t_out = time.perf_counter()
            acc = cl.decrypt_layer(k, reply, c)
            if k < len(cl.net.stages) - 1:
                y = client_step(st, acc)
            layers.append({"bytes_in": len(msg), "bytes_out": len(reply), "cts_in": cl.plans[k].in_cts,
                           "cts_out": cl.plans[k].wire_out_cts, **{f: getattr(c, f) for f in OPS},
                           "server_s": t_out - t_in, "client_gap_s": 0.0 if t_reply is None else t_in - t_reply})
            t_reply = t_out
        out.append(layers)
    return out


VOLUME = ("bytes_in", "bytes_out", "cts_in", "cts_out") + OPS
TEMPORAL = ("server_s", "client_gap_s")


def _run(setting: str, pattern: str, seed: int, size: int) -> Run:
    v = server_view(setting, pattern, seed, size)
    vol = np.array([[l[f] for l in inf for f in VOLUME] for inf in v], dtype=float)
    tim = np.array([[l[f] for l in inf for f in TEMPORAL] for inf in v], dtype=float)
    return Run({"volume": vol, "temporal": tim},
               cost={"server_s": float(tim[:, 0::2].sum()), "bytes": float(vol[:, :2].sum())})


OBSERVER = register_observer(Observer(
    system="he", name="server",
    sees="the evaluating server: per layer message the bytes and ciphertexts in and out, the homomorphic operations it "
         "performs and their time, and the client's time between its reply and the next message; not the secret key, "
         "the input, the decrypted results or the noise budgets",
    settings=SETTINGS, patterns=PATTERNS, run=_run, leaky=(), defences=("rr", "mask"), default_size=4,
    table=(("rr", "random", "zeros"),), table_size=2, min_size=2))


def measure(setting: str, a: str, b: str, seeds: int = 11, size: int | None = None) -> dict[str, float]:
    """Exact sign-flip p per family over `seeds` seed pairs; within a pair the order alternates
    with the seed, so that a drift of the machine's speed does not masquerade as the secret."""
    size = size or OBSERVER.default_size
    runs = []
    for s in range(1, seeds + 1):
        first, second = (a, b) if s % 2 else (b, a)
        r1, r2 = _run(setting, first, s, size), _run(setting, second, s, size)
        runs.append((r1, r2) if s % 2 else (r2, r1))
    return paired_p(runs)


if __name__ == "__main__":  # python -m veil.he.observer
    for st in SETTINGS:
        for pa, pb in (("random", "zeros"), ("zeros", "saturated"), ("random", "random-b")):
            ps = measure(st, pa, pb)
            print(f"he.server {st:4} {pa:6} vs {pb:9} " + "  ".join(f"{f} p={p:.4g}" for f, p in ps.items()))
