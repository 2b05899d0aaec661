"""The client: owns the secret key; packs, encrypts, decrypts and runs the non-linear steps.

Inputs are encrypted with the secret key (symmetric BFV encryption), which is what CHOCO's
client does: only it ever decrypts. Galois keys are generated for exactly the rotation steps
the network's layouts use.
"""

from __future__ import annotations

import time
import zlib

import numpy as np
import seal

from veil.core import ConfigError
from veil.he import wire
from veil.he.accounting import Counts
from veil.he.layers import Network, check_input, client_step
from veil.he.packing import LinearPlan, network_plans
from veil.he.params import HEParams, make_context


# Galois keys are generated per distinct rotation step; the masking baseline on wide layers
# needs thousands, more memory than a run should take.
MAX_KEY_BYTES = 1 << 30


def galois_steps(plans: list[LinearPlan]) -> list[int]:
    steps: set[int] = set()
    for p in plans:
        steps |= p.galois_steps()
    return sorted(steps)


class Client:
    def __init__(self, net: Network, params: HEParams, mode: str = "rr",
                 check_noise: bool = True, plans: list[LinearPlan] | None = None,
                 key_layers: set[int] | None = None, measure_zlib: bool = False):
        net.check()
        self.net, self.params, self.mode = net, params, mode
        self.check_noise = check_noise
        self.ctx = make_context(params)
        self.plans = plans if plans is not None else network_plans(net, params, mode)
        # Galois keys for these layers only (None: all); a cost run of a few layers of a large
        # network then does not generate hundreds of keys it never uses.
        self.key_layers = key_layers
        # SEAL's own compression is compiled out of the wheel; when asked, deflate each
        # serialized ciphertext (what compr_mode_type.zlib does) just to measure its size.
        self.measure_zlib = measure_zlib
        keygen = seal.KeyGenerator(self.ctx)
        self._sk = keygen.secret_key()
        self._keygen = keygen
        self.encryptor = seal.Encryptor(self.ctx, self._sk)
        self.decryptor = seal.Decryptor(self.ctx, self._sk)
        self.be = seal.BatchEncoder(self.ctx)
        self.t = self.ctx.first_context_data().parms().plain_modulus().value()

    def fresh_budget(self) -> int:
        """Invariant noise budget of a fresh encryption (what a layer starts from)."""
        ct = self.encryptor.encrypt_symmetric(self.be.encode(np.zeros(self.params.slots, dtype=np.int64)))
        return self.decryptor.invariant_noise_budget(ct)

    def setup_message(self) -> tuple[bytes, Counts]:
        c = Counts()
        t0 = time.perf_counter()
        gk = seal.GaloisKeys()
        steps = galois_steps([p for i, p in enumerate(self.plans)
                              if self.key_layers is None or i in self.key_layers])
        k = len(self.params.coeff_bits)
        key_bytes = len(steps) * (k - 1) * 2 * k * self.params.poly_degree * 8
        if key_bytes > MAX_KEY_BYTES:
            raise ConfigError(f"{self.net.name}: the {self.mode} layout needs {len(steps)} Galois "
                              f"keys ({key_bytes / 2**30:.1f} GiB), over the "
                              f"{MAX_KEY_BYTES / 2**30:.0f} GiB limit; run fewer layers")
        if steps:
            self._keygen.create_galois_keys(steps, gk)
        keys = gk.to_string()
        del gk                   # the client never rotates; only the server keeps the keys
        msg = wire.pack(1, 0, [self.ctx.key_context_data().parms().to_bytes(), keys,
                               self.mode.encode("ascii")])
        del keys
        c.client_s = time.perf_counter() - t0
        c.bytes_up = len(msg)
        self.galois_key_count = len(steps)
        return msg, c

    def encrypt_layer(self, i: int, x: np.ndarray, c: Counts) -> bytes:
        t0 = time.perf_counter()
        plan = self.plans[i]
        blobs = []
        for v in plan.pack(x):
            ts = time.perf_counter()
            ct = self.encryptor.encrypt_symmetric(self.be.encode(v))
            blobs.append(ct.to_string())
            dt = time.perf_counter() - ts
            c.seal_s += dt
            c.client_enc_s += dt
        c.encodes += len(blobs)
        c.encryptions += len(blobs)
        msg = wire.pack(2, i, blobs)
        c.bytes_up += len(msg)
        if self.measure_zlib:
            tz = time.perf_counter()
            c.bytes_up_zlib += len(msg) - sum(map(len, blobs)) + sum(len(zlib.compress(b, 6)) for b in blobs)
            t0 += time.perf_counter() - tz
        c.bytes_up_seeded += len(msg) - sum(map(len, blobs)) + len(blobs) * self.params.ct_bytes_seeded
        c.client_s += time.perf_counter() - t0
        return msg

    def decrypt_layer(self, i: int, msg: bytes, c: Counts) -> np.ndarray:
        t0 = time.perf_counter()
        plan = self.plans[i]
        _, blobs = wire.unpack(msg, 3, i)
        if len(blobs) != plan.wire_out_cts:
            raise ConfigError(f"layer {plan.layer.name}: got {len(blobs)} output ciphertexts, "
                              f"expected {plan.wire_out_cts}")
        c.bytes_down += len(msg)
        vecs, noise_s = [], 0.0
        if self.measure_zlib:
            tz = time.perf_counter()
            c.bytes_down_zlib += len(msg) - sum(map(len, blobs)) + sum(len(zlib.compress(b, 6)) for b in blobs)
            noise_s += time.perf_counter() - tz
        for b in blobs:
            ts = time.perf_counter()
            try:
                ct = self.ctx.from_cipher_str(b)
            except (ValueError, RuntimeError) as e:
                raise ConfigError(f"layer {plan.layer.name}: corrupted ciphertext bytes ({e})") from e
            v = self.be.decode(self.decryptor.decrypt(ct))
            dt = time.perf_counter() - ts
            c.seal_s += dt
            c.client_dec_s += dt
            if self.check_noise:
                tn = time.perf_counter()
                budget = self.decryptor.invariant_noise_budget(ct)
                noise_s += time.perf_counter() - tn
                c.min_noise_budget = budget if c.min_noise_budget < 0 else min(budget, c.min_noise_budget)
                if budget <= 0:
                    raise ConfigError(f"layer {plan.layer.name}: noise budget exhausted, parameters "
                                      f"{self.params.label()} are too small for this network")
            vecs.append(v)
        c.decryptions += len(blobs)
        c.decodes += len(blobs)
        out = plan.unpack(vecs)
        c.client_s += time.perf_counter() - t0 - noise_s
        return out

    def infer(self, server, x, per_layer: list[Counts] | None = None) -> np.ndarray:
        """Encrypted inference of one input; returns the logits (last layer's accumulators)."""
        y = check_input(self.net, x)
        stages = self.net.stages
        for i, st in enumerate(stages):
            c = Counts()
            msg = self.encrypt_layer(i, y, c)
            reply = server.handle(msg, i, c)
            acc = self.decrypt_layer(i, reply, c)
            if i < len(stages) - 1:
                t0 = time.perf_counter()
                y = client_step(st, acc)
                c.client_s += time.perf_counter() - t0
            if per_layer is not None:
                per_layer.append(c)
        return acc.reshape(-1)
