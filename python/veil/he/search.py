"""Parameter selection: the smallest BFV parameters under which every layer decrypts correctly.

For a model and a layout mode, each candidate (N, k primes of b bits, plain modulus) must pass:
* the plain modulus exceeds twice the largest |accumulator| any layer can produce (no wrap);
* every layer's frames fit a row of N/2 slots;
* a SEAL *noise probe* of every layer leaves at least `margin` bits of noise budget.

The probe runs the layer's multiplicative structure on real SEAL ciphertexts at the candidate
parameters: a fresh symmetric encryption, the same chain of rotations and plaintext products
(masks, then weights, then masks again where the layout has them), and the accumulation of T
products modelled by log2(T) doublings. Doubling adds correlated noise, the worst case, so the
probe's budget is a lower bound for the layer (tests check it against full layer runs). Noise
in BFV depends on the structure and on t, not on slot values, so random data suffices.

Candidates are visited by ciphertext bytes per inference, ties broken by the cost of a key
switch (~ N * k^2); the first that passes is the smallest, and its prime size is then lowered
while the probe still passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import seal

from veil.core import ConfigError
from veil.he.layers import QuantModel
from veil.he.packing import LinearPlan, network_plans
from veil.he.params import POLY_DEGREES, HEParams, make_context, max_log_q, seal_default

DEFAULT_MARGIN = 10


def plain_bits_needed(model: QuantModel) -> int:
    bound = max(model.acc_bound(i) for i in range(len(model.net.stages)))
    # A batching prime of b bits is >= 2^(b-1); it must exceed 2*bound so that signed values
    # in (-t/2, t/2) round-trip.
    return max(2, (2 * bound).bit_length() + 1)


def probe_signature(plan: LinearPlan) -> tuple:
    """The noise-relevant structure of a layer: (mask before weights, log2 terms, giant
    rotation, mask after weights, log2 giant terms, row swap)."""
    if plan.depthwise:
        return ("pool", math.ceil(math.log2(max(1, len(plan.offsets)))))
    terms = plan.probe_terms()
    mask_in = plan.mode == "mask" and any(
        not plan.input_masks(b, t)[0] for b in range(plan.B) for t in range(len(plan.offsets)))
    mask_in_split = plan.mode == "mask" and plan.B > 1
    giant = plan.G > 1
    mask_out = plan.mode == "mask" and giant and plan.giant_masks(1)[0] is not None
    cross = plan.uses_cross()
    return ("conv", bool(mask_in), bool(mask_in_split), math.ceil(math.log2(max(1, terms))),
            giant, bool(mask_out), math.ceil(math.log2(2 * plan.G)) if giant or cross else 0, cross,
            math.ceil(math.log2(plan.merge)))


class _Probe:
    def __init__(self, p: HEParams, seed: int = 0):
        self.p = p
        self.ctx = make_context(p)
        kg = seal.KeyGenerator(self.ctx)
        self.enc = seal.Encryptor(self.ctx, kg.secret_key())
        self.dec = seal.Decryptor(self.ctx, kg.secret_key())
        self.ev = seal.Evaluator(self.ctx)
        self.be = seal.BatchEncoder(self.ctx)
        self.gk = seal.GaloisKeys()
        kg.create_galois_keys([0, 1], self.gk)
        self.t = self.ctx.first_context_data().parms().plain_modulus().value()
        self.rng = np.random.default_rng(seed)

    def _pt(self, lo, hi):
        return self.be.encode(self.rng.integers(lo, hi, size=self.p.slots, dtype=np.int64))

    def _double(self, ct, times):
        for _ in range(times):
            ct = self.ev.add(ct, ct)
        return ct

    def run(self, sig: tuple) -> int:
        ev = self.ev
        ct = self.enc.encrypt_symmetric(self._pt(0, self.t // 2))
        if sig[0] == "pool":
            return self.dec.invariant_noise_budget(self._double(ev.rotate_rows(ct, 1, self.gk), sig[1]))
        _, mask_in, split, lt, giant, mask_out, lg, cross, merge = sig
        y = ev.rotate_rows(ct, 1, self.gk)
        if mask_in:
            y = ev.multiply_plain(y, self._pt(0, 2))
            if split:
                y = self._double(y, 1)
        y = ev.multiply_plain(y, self._pt(-127, 128))
        y = self._double(y, lt)
        if giant:
            y = ev.rotate_rows(y, 1, self.gk)
            if mask_out:
                y = self._double(ev.multiply_plain(y, self._pt(0, 2)), 1)
        if cross:
            y = ev.rotate_columns(y, self.gk)
        y = self._double(y, lg)
        y = ev.add_plain(y, self._pt(-(self.t // 4), self.t // 4))
        if merge:
            y = self._double(ev.rotate_rows(y, 1, self.gk), merge)
        return self.dec.invariant_noise_budget(y)


@lru_cache(maxsize=2)             # contexts and keys are large; budgets are cached below
def _probe(p: HEParams) -> _Probe:
    return _Probe(p)


@lru_cache(maxsize=4096)
def probe_budget(p: HEParams, sig: tuple) -> int:
    return _probe(p).run(sig)


@dataclass
class Check:
    params: HEParams
    ok: bool
    reason: str = ""
    budgets: dict = field(default_factory=dict)   # layer name -> probed budget (bits)

    @property
    def min_budget(self) -> int:
        return min(self.budgets.values()) if self.budgets else -1


def check_params(model: QuantModel, p: HEParams, mode: str = "rr",
                 margin: int = DEFAULT_MARGIN) -> Check:
    need = plain_bits_needed(model)
    if p.plain_bits < need:
        return Check(p, False, f"plain modulus of {p.plain_bits} bits is below the {need} bits "
                               f"the accumulators need")
    try:
        plans = network_plans(model.net, p, mode)
    except ConfigError as e:
        return Check(p, False, str(e))
    try:
        make_context(p)
    except ConfigError as e:
        return Check(p, False, str(e))
    chk = Check(p, True)
    for plan in plans:
        b = probe_budget(p, probe_signature(plan))
        chk.budgets[plan.layer.name] = b
        if b < margin and chk.ok:
            chk.ok = False
            chk.reason = (f"layer {plan.layer.name}: probed noise budget {b} bits < margin "
                          f"{margin} bits")
    return chk


def require_params(model: QuantModel, p: HEParams, mode: str = "rr",
                   margin: int = DEFAULT_MARGIN) -> Check:
    """check_params that raises ConfigError naming why the parameters are too small."""
    chk = check_params(model, p, mode, margin)
    if not chk.ok:
        raise ConfigError(f"{model.net.name}: parameters {p.label()} too small: {chk.reason}")
    return chk


@dataclass
class SearchResult:
    params: HEParams
    check: Check
    tried: list
    default: HEParams

    @property
    def ct_bytes_ratio(self) -> float:
        return self.params.ct_bytes / self.default.ct_bytes

    def to_dict(self) -> dict:
        return {"params": self.params.to_dict(), "min_probed_budget": self.check.min_budget,
                "budgets": self.check.budgets, "seal_default": self.default.to_dict(),
                "ct_bytes_vs_seal_default": self.ct_bytes_ratio,
                "tried": [(t.label(), ok, why) for t, ok, why in self.tried]}


def candidates(degrees=POLY_DEGREES[1:5]):
    out = []
    for n in degrees:
        maxq = max_log_q(n)
        for k in range(2, 16):
            if 20 * k > maxq:
                break
            out.append((n, k))
    return out


def comm_bytes(model: QuantModel, p: HEParams, mode: str) -> int | None:
    """Ciphertext bytes per inference (both ways) under p, None if a layer does not fit."""
    try:
        plans = network_plans(model.net, p, mode)
    except ConfigError:
        return None
    return sum((pl.in_cts + pl.wire_out_cts) * p.ct_bytes for pl in plans)


def search(model: QuantModel, mode: str = "rr", margin: int = DEFAULT_MARGIN,
           degrees=POLY_DEGREES[1:5], shrink: bool = True) -> SearchResult:
    """Candidates are ordered by communication per inference, then key-switch cost."""
    t_bits = plain_bits_needed(model)
    if t_bits > 60:
        raise ConfigError(f"{model.net.name}: accumulators need a {t_bits}-bit plain modulus")
    ranked = []
    for n, k in candidates(degrees):
        tb = max(t_bits, (2 * n).bit_length() + 1)
        top = min(60, max_log_q(n) // k)
        p = HEParams(n, (top,) * k, tb)
        comm = comm_bytes(model, p, mode)
        if comm is not None:
            # Ties in traffic go to the cheaper rotations: a key switch costs ~ N * k^2.
            ranked.append((comm, n * k * k, n, k, p))
    tried = []
    for _, _, n, k, p in sorted(ranked, key=lambda r: r[:4]):
        chk = check_params(model, p, mode, margin)
        tried.append((p, chk.ok, chk.reason))
        if not chk.ok:
            continue
        if shrink:
            lo, hi = 20, p.coeff_bits[0]      # smallest uniform prime size that still passes
            while lo < hi:
                mid = (lo + hi) // 2
                if check_params(model, HEParams(n, (mid,) * k, p.plain_bits), mode, margin).ok:
                    hi = mid
                else:
                    lo = mid + 1
            p = HEParams(n, (lo,) * k, p.plain_bits)
            chk = check_params(model, p, mode, margin)
        return SearchResult(p, chk, tried, seal_default(n, p.plain_bits))
    raise ConfigError(f"{model.net.name}: no parameters up to N={max(degrees)} decrypt every "
                      f"layer with a {margin}-bit margin ({mode} layout)")
