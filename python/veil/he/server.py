"""The server: holds the model in plaintext, evaluates linear layers on ciphertexts.

It never sees the secret key. It receives the encryption parameters and the Galois keys once
(setup), then per layer one message of serialized input ciphertexts, and answers with one
message of serialized output ciphertexts. Weight plaintexts are encoded in NTT form once per
model when they fit `cache_bytes` (offline, as a deployed server would), else built on the fly.
"""

from __future__ import annotations

import time

import numpy as np
import seal

from veil.core import ConfigError
from veil.he import wire
from veil.he.accounting import Counts
from veil.he.layers import QuantModel
from veil.he.packing import LinearPlan, network_plans
from veil.he.params import HEParams, make_context


class _Tok:
    """Stand-in ciphertext for dry (counting) runs."""
    __slots__ = ()


TOK = _Tok()


class CountOps:
    """Counts what the evaluation would do, without SEAL: the static cost of a plan."""

    def __init__(self, counts: Counts, R: int):
        self.c, self.R = counts, R

    def rot(self, x, step):
        if step % self.R == 0:
            return x
        self.c.rotations += 1
        return TOK

    def swap(self, x):
        self.c.column_rotations += 1
        return TOK

    def to_ntt(self, x):
        self.c.ntt += 1
        return TOK

    def from_ntt(self, x):
        self.c.ntt += 1
        return TOK

    def mul_w(self, x, pt):
        self.c.weight_mults += 1
        return TOK

    def mul_mask(self, x, vec):
        self.c.mask_mults += 1
        return TOK

    def add(self, a, b):
        if a is None:
            return b
        self.c.additions += 1
        return TOK

    def add_plain(self, x, vec):
        self.c.additions += 1
        return TOK


class SealOps(CountOps):
    def __init__(self, counts: Counts, ctx, encoder, evaluator, galois_keys, R: int):
        super().__init__(counts, R)
        self.ctx, self.be, self.ev, self.gk = ctx, encoder, evaluator, galois_keys
        self.pid = ctx.first_parms_id()

    def _t(self, fn, *args):
        t0 = time.perf_counter()
        r = fn(*args)
        self.c.seal_s += time.perf_counter() - t0
        return r

    def rot(self, x, step):
        step %= self.R
        if step == 0:
            return x
        self.c.rotations += 1
        try:
            return self._t(self.ev.rotate_rows, x, step, self.gk)
        except ValueError as e:
            raise ConfigError(f"rotation by {step}: {e} (keys were generated for another plan)") from e

    def swap(self, x):
        self.c.column_rotations += 1
        return self._t(self.ev.rotate_columns, x, self.gk)

    def to_ntt(self, x):
        self.c.ntt += 1
        return self._t(self.ev.transform_to_ntt, x)

    def from_ntt(self, x):
        self.c.ntt += 1
        return self._t(self.ev.transform_from_ntt, x)

    def mul_w(self, x, pt):
        self.c.weight_mults += 1
        return self._t(self.ev.multiply_plain, x, pt)

    def mul_mask(self, x, vec):
        self.c.mask_mults += 1
        self.c.encodes += 1
        pt = self._t(self.be.encode, vec)
        return self._t(self.ev.multiply_plain, x, pt)

    def add(self, a, b):
        if a is None:
            return b
        self.c.additions += 1
        self._t(self.ev.add_inplace, a, b)
        return a

    def add_plain(self, x, vec):
        self.c.additions += 1
        self.c.encodes += 1
        pt = self._t(self.be.encode, vec)
        return self._t(self.ev.add_plain, x, pt)


def evaluate(plan: LinearPlan, xs: list, ops: CountOps, weights, bias) -> list:
    """Server-side evaluation of one linear layer on its input ciphertexts.

    `weights(e, a, cross, g)` yields (b, tap, plaintext) for the non-zero weight plaintexts;
    `bias` is an integer vector or None.
    """
    if plan.depthwise:
        outs = []
        for x in xs:
            acc = None
            for _, _, lin in plan.offsets[1:]:
                acc = ops.add(acc, ops.rot(x, lin))     # the first term is a fresh ciphertext
            outs.append(x if acc is None else ops.add(acc, x))
        return outs
    shifted = []
    for x in xs:
        row = {}
        for b, t, s, wrap in plan.baby_steps():
            if plan.mode == "rr":
                y = ops.rot(x, s)
            else:
                full, m1, m2 = plan.input_masks(b, t)
                if full:
                    y = ops.rot(x, s)
                else:
                    y = None
                    if m1 is not None:
                        y = ops.mul_mask(ops.rot(x, s), m1)
                    if m2 is not None:
                        y = ops.add(y, ops.mul_mask(ops.rot(x, wrap), m2))
            if y is not None:
                row[(b, t)] = ops.to_ntt(y)
        shifted.append(row)
    outs = []
    for e in range(plan.out_cts):
        direct = cross_acc = None
        for g in range(plan.G):
            for cross in (False, True):
                acc = None
                for a in range(plan.in_cts):
                    for b, t, pt in weights(e, a, cross, g):
                        y = shifted[a].get((b, t))
                        if y is not None:
                            acc = ops.add(acc, ops.mul_w(y, pt))
                if acc is None:
                    continue
                acc = ops.from_ntt(acc)
                acc = _giant(plan, ops, acc, g)
                if cross:
                    cross_acc = ops.add(cross_acc, acc)
                else:
                    direct = ops.add(direct, acc)
        if cross_acc is not None:
            direct = ops.add(direct, ops.swap(cross_acc))
        if direct is None:
            raise ConfigError(f"{plan.layer.name}: output ciphertext {e} has no non-zero weights")
        if bias is not None:
            direct = ops.add_plain(direct, plan.bias_vector(bias, e))
        outs.append(direct)
    if plan.merge > 1:
        span = plan.n * plan.F
        merged = []
        for w in range(plan.wire_out_cts):
            acc = outs[w * plan.merge]
            for sub in range(1, plan.merge):
                e = w * plan.merge + sub
                if e < len(outs):
                    acc = ops.add(acc, ops.rot(outs[e], -sub * span))
            merged.append(acc)
        outs = merged
    return outs


def _giant(plan: LinearPlan, ops, acc, g: int):
    if g == 0:
        return acc
    step = g * plan.B * plan.F
    if plan.mode == "rr":
        return ops.rot(acc, step)
    m1, m2 = plan.giant_masks(g)
    if m1 is None and m2 is None:
        return ops.rot(acc, step)
    out = None
    if m1 is not None:
        out = ops.mul_mask(ops.rot(acc, step), m1)
    if m2 is not None:
        out = ops.add(out, ops.mul_mask(ops.rot(acc, step - plan.n * plan.F), m2))
    return out


def count_plan(plan: LinearPlan, w: np.ndarray | None = None) -> Counts:
    """Static operation counts of one layer (weights, when given, let zero plaintexts be skipped)."""
    c = Counts()
    ops = CountOps(c, plan.R)
    wpad = plan.pad_weights(w) if (w is not None and not plan.depthwise) else None

    def weights(e, a, cross, g):
        if wpad is not None:
            nz = plan.weight_nonzero(plan.weight_blocks(wpad, e, a, cross, g))
        else:
            nz = _structural_nonzero(plan, e, a, cross, g)
        return [(b, t, None) for b, t in zip(*np.nonzero(nz))]

    evaluate(plan, [TOK] * plan.in_cts, ops, weights, None)
    c.encryptions, c.decryptions = plan.in_cts, plan.wire_out_cts
    return c


def _structural_nonzero(plan: LinearPlan, e, a, cross, g) -> np.ndarray:
    nz = np.zeros((plan.B, len(plan.offsets)), dtype=bool)
    for r in (0, 1):
        if plan.in_group(a, r) is None or plan.out_group(e, 1 - r if cross else r) is None:
            continue
        for b in range(plan.B):
            if g * plan.B + b < plan.nin:
                nz[b, :] = True
    return nz


class Server:
    def __init__(self, model: QuantModel, cache_bytes: int = 1 << 29):
        self.model = model
        self.cache_bytes = cache_bytes
        self.ctx = None
        self.plans: list[LinearPlan] = []
        self._cache: dict = {}
        self._wpad: dict = {}

    # ---------------------------------------------------------------- setup
    def setup(self, msg: bytes, layers: set[int] | None = None) -> Counts:
        """Receive parameters, Galois keys and the layout mode; derive the public layouts and
        prepare the weights of `layers` (None: all)."""
        _, blobs = wire.unpack(msg, 1, 0)
        if len(blobs) != 3:
            raise ConfigError("setup message: expected parameters, Galois keys and mode")
        parms = seal.EncryptionParameters(seal.scheme_type.bfv)
        try:
            parms.load_bytes(blobs[0])
        except (ValueError, RuntimeError) as e:
            raise ConfigError(f"setup message: bad encryption parameters: {e}") from e
        p = HEParams(parms.poly_modulus_degree(),
                     tuple(m.bit_count() for m in parms.coeff_modulus()),
                     parms.plain_modulus().bit_count())
        mode = blobs[2].decode("ascii", "replace")
        plans = network_plans(self.model.net, p, mode)
        self.ctx = make_context(p)
        self.be = seal.BatchEncoder(self.ctx)
        self.ev = seal.Evaluator(self.ctx)
        try:
            self.gk = self.ctx.from_galois_str(blobs[1])
        except (ValueError, RuntimeError) as e:
            raise ConfigError(f"setup message: bad Galois keys: {e}") from e
        self.plans = plans
        prep = Counts()
        t0 = time.perf_counter()
        pt_bytes = p.ct_primes * p.poly_degree * 8
        budget = self.cache_bytes
        for i, plan in enumerate(plans):
            if plan.depthwise or (layers is not None and i not in layers):
                continue
            self._wpad[i] = plan.pad_weights(self.model.weights[i])
            n_pts = count_plan(plan).weight_mults
            if n_pts * pt_bytes <= budget:
                budget -= n_pts * pt_bytes
                self._cache[i] = {}
                for e in range(plan.out_cts):
                    for a in range(plan.in_cts):
                        for cross in (False, True):
                            for g in range(plan.G):
                                self._cache[i][(e, a, cross, g)] = self._build(i, e, a, cross, g, prep)
        prep.weight_prep_s = time.perf_counter() - t0
        return prep

    def _build(self, i, e, a, cross, g, c: Counts):
        plan = self.plans[i]
        blocks = plan.weight_blocks(self._wpad[i], e, a, cross, g)
        nz = plan.weight_nonzero(blocks)
        out = []
        for b, t in zip(*np.nonzero(nz)):
            pt = self.be.encode(plan.weight_vector(blocks, b, t))
            self.ev.transform_to_ntt_inplace(pt, self.ctx.first_parms_id())
            c.encodes += 1
            out.append((int(b), int(t), pt))
        return out

    # ---------------------------------------------------------------- per layer
    def handle(self, msg: bytes, i: int, counts: Counts) -> bytes:
        if self.ctx is None:
            raise ConfigError("server: layer message before setup")
        if not 0 <= i < len(self.plans):
            raise ConfigError(f"server: no layer {i}")
        t0 = time.perf_counter()
        plan = self.plans[i]
        if not plan.depthwise and i not in self._wpad:
            raise ConfigError(f"server: layer {plan.layer.name} was not prepared at setup")
        _, blobs = wire.unpack(msg, 2, i)
        if len(blobs) != plan.in_cts:
            raise ConfigError(f"layer {plan.layer.name}: got {len(blobs)} ciphertexts, "
                              f"the layout needs {plan.in_cts}")
        xs = []
        for b in blobs:
            ts = time.perf_counter()
            try:
                xs.append(self.ctx.from_cipher_str(b))
            except (ValueError, RuntimeError) as e:
                raise ConfigError(f"layer {plan.layer.name}: corrupted ciphertext bytes ({e})") from e
            counts.seal_s += time.perf_counter() - ts
        ops = SealOps(counts, self.ctx, self.be, self.ev, self.gk, plan.R)
        cache = self._cache.get(i)

        def weights(e, a, cross, g):
            if cache is not None:
                return cache[(e, a, cross, g)]
            tw = time.perf_counter()
            r = self._build(i, e, a, cross, g, counts)
            counts.weight_prep_s += time.perf_counter() - tw
            return r

        outs = evaluate(plan, xs, ops, weights, self.model.biases[i])
        blobs_out = []
        for ct in outs:
            ts = time.perf_counter()
            blobs_out.append(ct.to_string())
            counts.seal_s += time.perf_counter() - ts
        reply = wire.pack(3, i, blobs_out)
        counts.server_s += time.perf_counter() - t0
        return reply
