"""Registered experiments of the `he` system."""

from __future__ import annotations

import time
from typing import Annotated, Literal

import numpy as np
import seal
from pydantic import Field

from veil.core import (ComponentName, ConfigError, ExperimentConfig, register_component,
                       register_experiment)
from veil.he.accounting import COUNT_FIELDS, Counts, total
from veil.he.client import Client
from veil.he.digits import train_digits
from veil.he.layers import Conv, QuantModel, client_step, linear_int, network, random_model
from veil.he.packing import network_plans
from veil.he.params import HEParams, make_context, seal_default
from veil.he.search import DEFAULT_MARGIN, search
from veil.he.server import Server, count_plan

register_component("he.layout", "rr", doc="rotational redundancy: padded frames and wrapped "
                   "copies, every rotation a plain row rotation, no masks")
register_component("he.layout", "mask", doc="masking baseline: bare frames, window rotations "
                   "emulated with 0/1 mask multiplications")

Mode = ComponentName("he.layout")
NetName = Literal["lenet5_small", "lenet5_large", "squeezenet", "vgg16"]


def _mean_counts(tot: Counts, n: int) -> dict:
    d = tot.to_dict()
    return {k: (v / n if isinstance(v, (int, float)) and k != "min_noise_budget" else v)
            for k, v in d.items()}


# ---------------------------------------------------------------------------- digits

class DigitsConfig(ExperimentConfig):
    images: int = Field(0, ge=0, le=360, description="test images run encrypted (0: all 360)")
    mode: Mode = Field("rr", description="slot layout: 'rr' (rotational redundancy) or 'mask'")
    margin: int = Field(DEFAULT_MARGIN, ge=0, le=60,
                        description="noise budget in bits every layer must keep (parameter search)")


@register_experiment("he.digits", DigitsConfig, exclusive=True, results={
    "images": ("images", "test images run encrypted"),
    "exact_match": ("", "fraction of images whose encrypted output equals the quantised plaintext output"),
    "encrypted_accuracy": ("", "fraction classified correctly under encryption"),
    "quant_accuracy": ("", "accuracy of the quantised plaintext model"),
    "float_accuracy": ("", "accuracy of the float model"),
    "n_train": ("images", "training images"),
    "params.*": ("", "the HE parameter set: poly_degree (N), coefficient-modulus primes (bits), plain modulus"),
    "search.*": ("", "parameter search: candidates tried and the noise budget each layer keeps (bits)"),
    "per_inference.*": ("", "per inference, mean: operation counts, bytes (bytes_*), seconds (*_s), min_noise_budget (bits)"),
    "per_layer": ("", "per layer, mean: the per_inference counts of each layer"),
    "wall_s_per_inference": ("s", "wall time of one encrypted inference on this machine"),
    "setup_bytes": ("bytes", "keys the client sends once (Galois and relinearisation keys)"),
    "galois_keys": ("keys", "Galois keys the layout needs"),
    "fresh_budget_bits": ("bits", "noise budget of a fresh ciphertext"),
    "weight_prep_s": ("s", "server time to encode the weights, once"),
    "comm_mb": ("MB", "client-server traffic per inference (10^6 bytes)"),
    "comm_mb_zlib": ("MB", "comm_mb with each message zlib-compressed"),
    "comm_mb_seeded": ("MB", "comm_mb with seeded (half-size) uploads"),
    "macs": ("MACs", "multiply-accumulates of one plaintext inference"),
},
                     doc="CNN trained on scikit-learn digits: encrypted vs plaintext quantised inference")
def digits(cfg: DigitsConfig) -> dict:
    d = train_digits(cfg.seed)
    r = search(d.model, cfg.mode, cfg.margin)
    cl = Client(d.model.net, r.params, cfg.mode, measure_zlib=True)
    sv = Server(d.model)
    msg, setup = cl.setup_message()
    prep = sv.setup(msg)
    del msg                      # the Galois keys: hundreds of MB for the masking layout
    xs = d.x_test[:cfg.images or len(d.x_test)]
    ys = d.y_test[:len(xs)]
    exact = correct = 0
    per_layer = [Counts() for _ in d.model.net.stages]
    wall = 0.0
    from veil.core.runner import report_progress

    for i, (x, y) in enumerate(zip(xs, ys)):
        report_progress(i, len(xs), "images")
        per: list[Counts] = []
        t0 = time.perf_counter()
        out = cl.infer(sv, x, per)
        wall += time.perf_counter() - t0
        exact += int(np.array_equal(out, d.model.forward(x)))
        correct += int(out.argmax() == y)
        for acc, c in zip(per_layer, per):
            acc.add(c)
    n = len(xs)
    tot = total(per_layer)
    return {
        "images": n, "exact_match": exact / n, "encrypted_accuracy": correct / n,
        "quant_accuracy": d.quant_accuracy, "float_accuracy": d.float_accuracy,
        "n_train": d.n_train, "params": r.params.to_dict(), "search": r.to_dict(),
        "per_inference": _mean_counts(tot, n),
        "per_layer": [{"layer": st.layer.name, **_mean_counts(c, n)}
                      for st, c in zip(d.model.net.stages, per_layer)],
        "wall_s_per_inference": wall / n,
        "setup_bytes": setup.bytes_up, "galois_keys": cl.galois_key_count,
        "fresh_budget_bits": cl.fresh_budget(),
        "weight_prep_s": prep.weight_prep_s,
        "comm_mb": (tot.bytes_up + tot.bytes_down) / n / 1e6,
        "comm_mb_zlib": (tot.bytes_up_zlib + tot.bytes_down_zlib) / n / 1e6,
        "comm_mb_seeded": (tot.bytes_up_seeded + tot.bytes_down) / n / 1e6,
        "macs": d.model.net.macs,
    }


# ---------------------------------------------------------------------------- networks

class NetworkConfig(ExperimentConfig):
    network: NetName = Field("lenet5_small", description="layer specification to evaluate")
    mode: Mode = Field("rr", description="slot layout: 'rr' (rotational redundancy) or 'mask'")
    margin: int = Field(DEFAULT_MARGIN, ge=0, le=60,
                        description="noise budget in bits every layer must keep (parameter search)")
    run_layers: Literal["none", "sample", "all"] = Field(
        "sample", description="layers run encrypted with random quantised weights and checked "
                              "against plaintext: none, a sample (first, middle, last) or all")


def _other_time(model: QuantModel, plans, rng) -> float:
    """Client work that is not encryption or decryption, timed in plaintext: packing,
    unpacking and the ReLU / pooling / re-quantisation steps of one inference."""
    t = 0.0
    for i, (st, plan) in enumerate(zip(model.net.stages, plans)):
        x = rng.integers(0, 256, size=st.layer.in_shape)
        zeros = [np.zeros(plan.params.slots, dtype=np.int64)] * plan.wire_out_cts
        acc = rng.integers(-(1 << 20), 1 << 20, size=st.layer.out_shape)
        t0 = time.perf_counter()
        plan.pack(x)
        plan.unpack(zeros)
        if i < len(plans) - 1:
            client_step(st, acc)
        t += time.perf_counter() - t0
    return t


@register_experiment("he.network", NetworkConfig, exclusive=True, results={
    "network": ("", "network evaluated"),
    "mode": ("", "slot layout"),
    "params.*": ("", "the HE parameter set: poly_degree (N), coefficient-modulus primes (bits), plain modulus"),
    "search.*": ("", "parameter search: candidates tried and the noise budget each layer keeps (bits)"),
    "ct_bytes_vs_seal_default": ("", "ciphertext size relative to SEAL's default parameters at the same N"),
    "seal_default_8192_ct_bytes": ("bytes", "ciphertext size with SEAL's default N = 8192 parameters"),
    "macs": ("MACs", "multiply-accumulates of one inference"),
    "layers": ("", "per layer: shape, MACs, ciphertexts in/out, bytes up/down, rotations"),
    "totals.*": ("", "sums over layers of the per-layer counts (bytes_* in bytes)"),
    "encryptions": ("ciphertexts", "ciphertexts the client encrypts per inference"),
    "decryptions": ("ciphertexts", "ciphertexts the client decrypts per inference"),
    "bytes_up": ("bytes", "client to server per inference"),
    "bytes_down": ("bytes", "server to client per inference"),
    "comm_mb": ("MB", "bytes_up + bytes_down in 10^6 bytes"),
    "comm_mb_seeded": ("MB", "comm_mb with seeded (half-size) uploads"),
    "measured": ("", "layers run encrypted with random weights: counts, times (s) and whether exact"),
    "all_exact": ("", "every measured layer matched plaintext bit for bit"),
    "other_s": ("s", "client time outside HE operations (quantisation, re-packing) on this machine"),
},
                     doc="parameter search, per-layer costs and encrypted random-weight layers of a network")
def network_cost(cfg: NetworkConfig) -> dict:
    model = random_model(network(cfg.network), cfg.seed)
    r = search(model, cfg.mode, cfg.margin)
    p = r.params
    plans = network_plans(model.net, p, cfg.mode)
    layers = []
    for i, (st, plan) in enumerate(zip(model.net.stages, plans)):
        c = count_plan(plan, model.weights[i])
        layers.append({"layer": st.layer.name, "kind": type(st.layer).__name__,
                       "in_shape": list(st.layer.in_shape), "out_shape": list(st.layer.out_shape),
                       "macs": st.layer.macs, "n": plan.n, "baby": plan.B, "giant": plan.G,
                       "in_cts": plan.in_cts, "out_cts": plan.wire_out_cts,
                       "bytes_up": plan.in_cts * p.ct_bytes,
                       "bytes_up_seeded": plan.in_cts * p.ct_bytes_seeded,
                       "bytes_down": plan.wire_out_cts * p.ct_bytes,
                       **{k: getattr(c, k) for k in COUNT_FIELDS}})
    n = len(plans)
    chosen = {"none": [], "all": list(range(n)),
              "sample": sorted({0, n // 2, n - 1})}[cfg.run_layers]
    measured = []
    if chosen:
        rng = np.random.default_rng(cfg.seed)
        cl = Client(model.net, p, cfg.mode, plans=plans, key_layers=set(chosen))
        sv = Server(model, cache_bytes=0)
        msg, _ = cl.setup_message()
        sv.setup(msg, set(chosen))
        del msg
        for i in chosen:
            st = model.net.stages[i]
            x = rng.integers(0, 256, size=st.layer.in_shape)
            c = Counts()
            reply = sv.handle(cl.encrypt_layer(i, x, c), i, c)
            out = cl.decrypt_layer(i, reply, c)
            ok = bool(np.array_equal(out, linear_int(st.layer, x, model.weights[i], model.biases[i])))
            measured.append({"layer": st.layer.name, "index": i, "exact": ok, **c.to_dict()})
    tot = {k: sum(l[k] for l in layers) for k in COUNT_FIELDS if k in layers[0]}
    up = sum(l["bytes_up"] for l in layers)
    down = sum(l["bytes_down"] for l in layers)
    enc_n, dec_n = sum(pl.in_cts for pl in plans), sum(pl.wire_out_cts for pl in plans)
    return {
        "network": cfg.network, "mode": cfg.mode, "params": p.to_dict(), "search": r.to_dict(),
        "ct_bytes_vs_seal_default": r.ct_bytes_ratio,
        "seal_default_8192_ct_bytes": seal_default(8192).ct_bytes,
        "macs": model.net.macs, "layers": layers, "totals": tot,
        "encryptions": enc_n, "decryptions": dec_n,
        "bytes_up": up, "bytes_down": down, "comm_mb": (up + down) / 1e6,
        "comm_mb_seeded": (sum(l["bytes_up_seeded"] for l in layers) + down) / 1e6,
        "measured": measured, "all_exact": all(m["exact"] for m in measured),
        "other_s": _other_time(model, plans, np.random.default_rng(cfg.seed)),
    }


# ---------------------------------------------------------------------------- op costs

class OpCostConfig(ExperimentConfig):
    poly_degree: int = Field(8192, description="N")
    coeff_bits: list[int] = Field([43, 43, 44], description="prime sizes, special prime last")
    plain_bits: int = Field(20, ge=2, le=60, description="plain modulus bits")
    reps: int = Field(20, ge=1, le=1000, description="repetitions per operation")


@register_experiment("he.op_costs", OpCostConfig, exclusive=True, results={
    "params.*": ("", "the HE parameter set: poly_degree (N), coefficient-modulus primes (bits), plain modulus"),
    "*_ms": ("ms", "mean wall time of one SEAL operation on this machine, one thread"),
    "ct_bytes": ("bytes", "serialised ciphertext size"),
    "fresh_budget_bits": ("bits", "noise budget of a fresh ciphertext"),
},
                     doc="single-thread SEAL operation times at one parameter set")
def op_costs(cfg: OpCostConfig) -> dict:
    p = HEParams(cfg.poly_degree, tuple(cfg.coeff_bits), cfg.plain_bits)
    ctx = make_context(p)
    kg = seal.KeyGenerator(ctx)
    pk = kg.create_public_key()
    sk = kg.secret_key()
    gk = seal.GaloisKeys()
    kg.create_galois_keys([1], gk)
    enc_pk, enc_sk = seal.Encryptor(ctx, pk), seal.Encryptor(ctx, sk)
    dec, ev, be = seal.Decryptor(ctx, sk), seal.Evaluator(ctx), seal.BatchEncoder(ctx)
    rng = np.random.default_rng(cfg.seed)
    v = rng.integers(0, 1 << (cfg.plain_bits - 2), size=p.slots, dtype=np.int64)
    pt = be.encode(v)
    ct = enc_sk.encrypt_symmetric(pt)
    w = be.encode(rng.integers(-127, 128, size=p.slots, dtype=np.int64))
    ct_ntt = ev.transform_to_ntt(ct)
    w_ntt = ev.transform_to_ntt(w, ctx.first_parms_id())
    blob = ct.to_string()

    def timeit(fn):
        fn()
        t0 = time.perf_counter()
        for _ in range(cfg.reps):
            fn()
        return (time.perf_counter() - t0) / cfg.reps * 1e3

    return {
        "params": p.to_dict(),
        "encode_ms": timeit(lambda: be.encode(v)),
        "pk_encrypt_ms": timeit(lambda: enc_pk.encrypt(pt)),
        "sk_encrypt_ms": timeit(lambda: enc_sk.encrypt_symmetric(pt)),
        "decrypt_ms": timeit(lambda: dec.decrypt(ct)),
        "decode_ms": timeit(lambda: be.decode(pt)),
        "rotate_ms": timeit(lambda: ev.rotate_rows(ct, 1, gk)),
        "pt_mult_ms": timeit(lambda: ev.multiply_plain(ct, w)),
        "pt_mult_ntt_ms": timeit(lambda: ev.multiply_plain(ct_ntt, w_ntt)),
        "to_ntt_ms": timeit(lambda: ev.transform_to_ntt(ct)),
        "add_ms": timeit(lambda: ev.add(ct, ct)),
        "serialize_ms": timeit(lambda: ct.to_string()),
        "load_ms": timeit(lambda: ctx.from_cipher_str(blob)),
        "ct_bytes": len(blob),
        "fresh_budget_bits": dec.invariant_noise_budget(ct),
    }


# ---------------------------------------------------------------------------- Fig. 13

class MacsPerMBConfig(ExperimentConfig):
    sizes: list[Annotated[int, Field(ge=1)]] = Field([2, 4, 8, 16, 32], description="image sizes (square)")
    channels: list[Annotated[int, Field(ge=1)]] = Field([32, 64, 128, 256, 512],
                                                        description="input = output channels")
    filters: list[Annotated[int, Field(ge=1)]] = Field([1, 3], description="filter sizes ('same' padding)")
    poly_degree: int = Field(8192, description="N of the layouts")
    primes: int = Field(3, ge=2, le=8, description="number of primes (special included)")


@register_experiment("he.macs_per_mb", MacsPerMBConfig, results={
    "params.*": ("", "the HE parameter set: poly_degree (N), coefficient-modulus primes (bits), plain modulus"),
    "grid": ("", "per conv shape (size, channels, filter): macs (MACs), mb (10^6 bytes), macs_per_mb (MACs/MB)"),
    "networks.*": ("", "the same for each layer of VGG16 and SqueezeNet"),
},
                     doc="MACs per MB communicated over conv layer shapes, with VGG16/SqueezeNet layers")
def macs_per_mb(cfg: MacsPerMBConfig) -> dict:
    from veil.he.packing import plan_layer
    bits = min(60, 218 // cfg.primes) if cfg.poly_degree == 8192 else 40
    p = HEParams(cfg.poly_degree, (bits,) * cfg.primes, 30)

    def point(layer):
        plan = plan_layer(layer, p, "rr")
        mb = (plan.in_cts + plan.wire_out_cts) * p.ct_bytes / 1e6
        return {"macs": layer.macs, "mb": mb, "macs_per_mb": layer.macs / mb}

    grid = []
    for s in cfg.sizes:
        for c in cfg.channels:
            for k in cfg.filters:
                try:
                    pt = point(Conv(f"s{s}c{c}k{k}", c, c, s, s, k, (k - 1) // 2))
                except ConfigError:
                    continue
                grid.append({"size": s, "channels": c, "filter": k, **pt})
    nets = {}
    for name in ("vgg16", "squeezenet"):
        nets[name] = [{"layer": st.layer.name, "size": st.layer.h, **point(st.layer)}
                      for st in network(name).stages if isinstance(st.layer, Conv) and st.layer.h > 1]
    return {"params": p.to_dict(), "grid": grid, "networks": nets}
