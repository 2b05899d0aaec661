"""`veil reproduce he`: CHOCO's evaluation (Figs. 10-13) and the rotational-redundancy study."""

from __future__ import annotations

import numpy as np

from veil.core import Row, Shape, machine_load, median_spread, register_reproducer
from veil.he import costmodel as cm
from veil.he.params import HEParams
from veil.he.taco import report as taco

NETS = ("lenet5_small", "lenet5_large", "squeezenet", "vgg16")
LABEL = {"lenet5_small": "LeNet-5 small", "lenet5_large": "LeNet-5 large",
         "squeezenet": "SqueezeNet", "vgg16": "VGG16", "digits": "digits CNN"}
SEAL_REF = "SEAL timed on a CI-like machine (docs/he.md)"
PARAMS_SRC = "paper text (parameter selection: N <= 8192, CHOCO's (8192, 3))"
# Rows built on the paper's own speedups (TACO 417x / 125x / 603x, HEAX 164x, the i.MX6 time
# 0.66 ms x 417): they restate the paper through Veil's counts and are not reproductions.
TOL_TEXT = 0.25
TOL_TEXT_SRC = "the paper's rounded numbers; Veil's own counts and bytes under them"


def _client_ops(net: dict, op: dict) -> cm.ClientOps:
    enc = op["encode_ms"] + op["sk_encrypt_ms"] + op["serialize_ms"]
    dec = op["load_ms"] + op["decrypt_ms"] + op["decode_ms"]
    return cm.ClientOps(net["encryptions"], net["decryptions"], net["encryptions"] * enc / 1e3,
                        net["decryptions"] * dec / 1e3, net["other_s"], net["bytes_up"],
                        net["bytes_down"], net["macs"])


@register_reproducer("he", title="he: CHOCO client-aided HE inference on SEAL", order=50)
def reproduce(ctx) -> None:
    quick = ctx.quick
    dg, dgm = _digits(ctx, quick)
    nets = {n: ctx.run("he.network", {"network": n, "run_layers": "sample" if quick else "all"})
            for n in NETS}
    masks = {n: ctx.run("he.network", {"network": n, "mode": "mask", "run_layers": "none"})
            for n in NETS}
    ops = _seal_costs(ctx, nets)
    _parameters(ctx, dg, dgm, nets, masks)
    _rr_vs_mask(ctx, nets, masks)
    _fig10(ctx, nets)
    taco.section(ctx, quick)
    breakdown, e2e, ratios = _client(ctx, nets, ops)
    _fig11(ctx, breakdown, e2e, ratios)
    _fig12(ctx, e2e)
    _fig13(ctx)
    _search_text(ctx, nets, masks)


def _digits(ctx, quick: bool) -> tuple[dict, dict]:
    """The real network: the digits CNN encrypted end to end."""
    dg = ctx.run("he.digits", {"images": 120 if quick else 0})
    ctx.metric("he/digits_images", dg["images"])
    ctx.table(f"Digits CNN, {dg['images']} test images encrypted", [
        Row("encrypted logits equal to the plaintext integer logits (fraction of images)", dg["exact_match"],
            ref=1.0, source="analytic (BFV on integers is exact)", tol_abs=0.0,
            tol_source="any difference is a bug", metric="he/digits_exact_match"),
        Row(f"encrypted accuracy ({dg['images']} images)", dg["encrypted_accuracy"],
            note=f"integer model on all test images: {dg['quant_accuracy']:.3f}, float model "
                 f"{dg['float_accuracy']:.3f} (other image sets, so no reference)",
            metric="he/digits_accuracy"),
    ])
    dgm = ctx.run("he.digits", {"images": 3, "mode": "mask"})
    ctx.text(
        f"Real network: a CNN (conv 3x3 8, conv 3x3 16, fc 10) trained here on scikit-learn's "
        f"bundled 8x8 digits ({dg['n_train']} training images) and quantised to 8-bit weights and "
        f"activations. Float accuracy {dg['float_accuracy']:.3f}, integer accuracy "
        f"{dg['quant_accuracy']:.3f}. Encrypted inference on {dg['images']} test images at "
        f"{_pl(dg['params'])}: logits equal the plaintext integer logits on "
        f"{dg['exact_match'] * 100:.1f}% of them, accuracy {dg['encrypted_accuracy']:.3f}, "
        f"{dg['comm_mb']:.2f} MB per inference ({dg['comm_mb_zlib']:.2f} MB if SEAL's zlib "
        f"compression were available, measured by deflating the real bytes; "
        f"{dg['comm_mb_seeded']:.2f} MB with seeded uploads, estimated), "
        f"{dg['wall_s_per_inference'] * 1e3:.0f} ms wall per inference here (client + server, one core).")
    return dg, dgm


def _seal_costs(ctx, nets: dict) -> dict:
    """SEAL's operation costs on this machine against a CI-like one; per-network costs."""
    # timed three times (seeds 1-3, each cached) for a median and a min-max spread
    load0 = machine_load()
    op_reps = [ctx.run("he.op_costs", {"poly_degree": 8192, "coeff_bits": [43, 43, 44], "seed": s})
               for s in (1, 2, 3)]
    op_ref = op_reps[0]
    load1 = machine_load()
    ops = {n: ctx.run("he.op_costs", {"poly_degree": r["params"]["poly_degree"],
                                      "coeff_bits": r["params"]["coeff_bits"],
                                      "plain_bits": r["params"]["plain_bits"]})
           for n, r in nets.items()}
    seal_tol = dict(source=SEAL_REF, tol=0.5, origin="measurement", ref_machine="a CI-like machine (docs/he.md)",
                    tol_source="another VM of the same class, on 2 shared cores",
                    note=f"SEAL on this machine: median and min-max of 3 runs, each the mean of "
                         f"{op_ref.get('reps', 20)} calls; load {load0} -> {load1}")

    def timed(label, key, ref):
        med, sp = median_spread([r[key] for r in op_reps])
        return Row(label, med, unit="ms", ref=ref, spread=sp, **seal_tol)

    ctx.table("SEAL 4.4 single-thread operation costs at N=8192, primes [43, 43, 44], t 20 bits: "
              "SEAL on this machine against SEAL timed on a CI-like machine", [
                  timed("public-key encryption", "pk_encrypt_ms", 2.00),
                  timed("decryption", "decrypt_ms", 0.56),
                  timed("plaintext multiplication", "pt_mult_ms", 0.90),
                  timed("rotation", "rotate_ms", 1.34),
                  Row("ciphertext", op_ref["ct_bytes"], unit="bytes", ref=262257, source=SEAL_REF, tol_abs=0,
                      tol_source="SEAL's serialization is byte-exact", origin="measurement"),
                  Row("fresh noise budget, symmetric encryption", op_ref["fresh_budget_bits"], unit="bits",
                      ref=58, source=SEAL_REF + ", public-key encryption", tol_abs=4,
                      tol_source="symmetric encryption leaves the public key's extra noise out; SEAL's "
                                 "noise varies by a bit", origin="measurement",
                      note="not like for like: Veil's client encrypts symmetrically")])
    return ops


def _parameters(ctx, dg: dict, dgm: dict, nets: dict, masks: dict) -> None:
    """Chosen parameters and the static rotational-redundancy / masking counts."""
    mask_rr = dg["per_inference"]["mask_mults"] + sum(
        r["totals"]["mask_mults"] + sum(m["mask_mults"] for m in r["measured"]) for r in nets.values())
    ctx.metric("he/masking_mults_rr", mask_rr)
    ratios = [r["ct_bytes_vs_seal_default"] for r in nets.values()]
    for n, r in nets.items():
        ctx.metric(f"he/{n}/poly_degree", r["params"]["poly_degree"])
        ctx.metric(f"he/{n}/comm_mb", r["comm_mb"])
    exact_layers = all(r["all_exact"] for r in nets.values())
    ctx.metric("he/random_layers_exact", exact_layers)

    rows = []
    exact = dict(tol_abs=0, tol_source="a parameter choice: equal or not")
    for n in NETS:
        r, m = nets[n], masks[n]
        rows.append(Row(f"{LABEL[n]}: N (rr)", r["params"]["poly_degree"], ref=8192, source=PARAMS_SRC, **exact))
        rows.append(Row(f"{LABEL[n]}: ciphertext primes (rr)", r["params"]["ct_primes"], ref=2,
                        source=PARAMS_SRC + "; the special prime is dropped", **exact))
        rows.append(Row(f"{LABEL[n]}: ciphertext primes (mask)", m["params"]["ct_primes"]))
    rows.append(Row("ciphertext bytes vs SEAL's default at N=8192 (largest over the networks)", max(ratios),
                    unit="ratio", ref=0.5, source="paper text (50% smaller than SEAL's default at N=8192)",
                    tol_abs=0.01, tol_source="a count of residues (2 of 4)", origin="arithmetic",
                    metric="he/ct_bytes_vs_seal_default"))
    ctx.table("Chosen parameters (paper: every network at N=8192 with 3 primes)", rows)
    ctx.table("Rotational redundancy vs masking baseline (static counts per inference; no reference in the "
              "paper's text)", [
        row for n in NETS for row in (
            Row(f"{LABEL[n]}: rotations (rr)",
                nets[n]["totals"]["rotations"] + nets[n]["totals"]["column_rotations"], origin="arithmetic"),
            Row(f"{LABEL[n]}: rotations (mask)",
                masks[n]["totals"]["rotations"] + masks[n]["totals"]["column_rotations"], origin="arithmetic"),
            Row(f"{LABEL[n]}: mask mults (rr)", nets[n]["totals"]["mask_mults"], origin="arithmetic",
                note="none by design; tests check at SEAL that every product is a weight"),
            Row(f"{LABEL[n]}: mask mults (mask)", masks[n]["totals"]["mask_mults"], origin="arithmetic"),
            Row(f"{LABEL[n]}: log q (rr)", nets[n]["params"]["log_q"], unit="bits"),
            Row(f"{LABEL[n]}: log q (mask)", masks[n]["params"]["log_q"], unit="bits"),
            Row(f"{LABEL[n]}: comm MB (rr)", nets[n]["comm_mb"], unit="MB"),
            Row(f"{LABEL[n]}: comm MB (mask)", masks[n]["comm_mb"], unit="MB"),
        )])
    ctx.text(
        "Measured on the digits network (same layers, each layout at its own smallest "
        f"parameters): rotational redundancy {_pl(dg['params'])}, "
        f"{dg['per_inference']['all_rotations']:.0f} rotations, "
        f"{dg['per_inference']['mask_mults']:.0f} mask multiplications, noise budget "
        f"{dg['fresh_budget_bits']} bits fresh, at worst {_used(dg)} bits used by one layer; "
        f"masking {_pl(dgm['params'])}, {dgm['per_inference']['all_rotations']:.0f} rotations, "
        f"{dgm['per_inference']['mask_mults']:.0f} mask multiplications, budget "
        f"{dgm['fresh_budget_bits']} bits fresh, at worst {_used(dgm)} bits used. Random-weight "
        f"layers of the four networks run encrypted: all equal plaintext: {exact_layers}.")


def _rr_vs_mask(ctx, nets: dict, masks: dict) -> None:
    fig, axes = ctx.subplots(1, 3, figsize=(9.5, 3.4))
    x = np.arange(len(NETS))
    for ax_, title, get in (
            (axes[0], "rotations", lambda r: r["totals"]["rotations"] + r["totals"]["column_rotations"]),
            (axes[1], "mask multiplications", lambda r: r["totals"]["mask_mults"]),
            (axes[2], "log q (bits)", lambda r: r["params"]["log_q"])):
        ax_.bar(x - 0.2, [get(nets[n]) for n in NETS], 0.4, label="rotational redundancy")
        ax_.bar(x + 0.2, [get(masks[n]) for n in NETS], 0.4, label="masking")
        ax_.set_title(title, fontsize=9)
        ax_.set_xticks(x, [LABEL[n] for n in NETS], fontsize=6.5, rotation=20)
        if title != "log q (bits)":
            ax_.set_yscale("symlog")
    axes[0].legend(fontsize=7)
    ctx.figure(fig, "rr_vs_mask",
               caption="Per inference, each layout at its own smallest parameters: rotations, "
                       "mask multiplications and coefficient-modulus size.",
               rows=[Row("mask multiplications with rotational redundancy (all networks)",
                         sum(nets[n]["totals"]["mask_mults"] for n in NETS), ref=0,
                         source="paper §3-B (rotational redundancy needs no masking)", tol_abs=0,
                         tol_source="none by design", origin="arithmetic",
                         note="static count of the evaluation code; tests check it at SEAL's calls")],
               data={f"{LABEL[n]} {mode}": {
                   "rotations": [r["totals"]["rotations"] + r["totals"]["column_rotations"]],
                   "mask_mults": [r["totals"]["mask_mults"]], "log_q": [r["params"]["log_q"]],
                   "comm_mb": [r["comm_mb"]]}
                   for n in NETS for mode, r in (("rr", nets[n]), ("mask", masks[n]))})


def _fig10(ctx, nets: dict) -> None:
    """Fig. 10: communication per inference against prior protocols."""
    fig, ax = ctx.subplots(figsize=(12, 5))
    labels, vals, colors = [], [], []
    for proto, ds, netname, mb, _src in cm.PRIOR_PROTOCOLS:
        labels.append(f"{proto}\n{ds}")
        vals.append(mb)
        colors.append("0.6")
    for n in NETS:
        labels.append(f"CHOCO\n{LABEL[n]}")
        vals.append(nets[n]["comm_mb"])
        colors.append("tab:blue")
    ax.bar(range(len(vals)), vals, color=colors)
    gaz = next(mb for p, ds, _, mb, _ in cm.PRIOR_PROTOCOLS if p == "Gazelle")
    sq = len(cm.PRIOR_PROTOCOLS) + NETS.index("squeezenet")
    ax.plot([sq], [gaz / 90.0], "D", color="k", mfc="none", ms=10, mew=1.5,
            label="paper text: CHOCO ~90x below Gazelle (CIFAR-10)")
    ax.set_yscale("log")
    ax.set_xticks(range(len(vals)), labels, fontsize=8)
    ax.set_ylabel("communication per inference (MB)")
    ax.legend(fontsize=8)
    red = gaz / nets["squeezenet"]["comm_mb"]
    ctx.figure(fig, "fig10_communication",
               caption="Communication per single-image inference: prior protocols (published, "
                       "grey; see docs/he.md for sources) and CHOCO here (blue, serialized "
                       "ciphertexts both ways). Open diamond: where the paper's '~90x below Gazelle' "
                       "puts CHOCO's CIFAR-10 network.",
               rows=[Row("Gazelle CIFAR / CHOCO SqueezeNet", red, unit="x", ref=90.0, source="paper text (Fig. 10)",
                         tol=TOL_TEXT, tol_source=TOL_TEXT_SRC,
                         note="Gazelle's MB is its published number; CHOCO's is Veil's bytes"),
                     Row("SqueezeNet comm", nets["squeezenet"]["comm_mb"], unit="MB"),
                     Row("LeNet-5 large comm", nets["lenet5_large"]["comm_mb"], unit="MB")],
               data={"published prior protocols": {"label": [f"{p} {ds}" for p, ds, *_ in cm.PRIOR_PROTOCOLS],
                                                   "mb": [mb for *_, mb, _ in cm.PRIOR_PROTOCOLS]},
                     "Veil CHOCO": {"label": [LABEL[n] for n in NETS], "mb": [nets[n]["comm_mb"] for n in NETS]},
                     "paper text: Gazelle / 90": {"label": ["SqueezeNet"], "mb": [gaz / 90.0]}})
    ctx.grid("Published communication of prior protocols (single image; inputs of Fig. 10, not results)",
             ["protocol", "data set", "network", "MB", "source"],
             [[p, ds, net, mb, src] for p, ds, net, mb, src in cm.PRIOR_PROTOCOLS])


def _client(ctx, nets: dict, ops: dict) -> tuple[dict, dict, dict]:
    """Per network: the client's time split (software, HEAX-like, TACO), end to end, and the
    i.MX6-over-this-host ratio that scales its host timings. The ratio's baseline is this host's
    public-key encryption at the network's parameters from the same he.op_costs record that timed
    the client's operations (one process, back to back), so the host's load divides out of them;
    the time outside HE operations comes from the network's own run and does not share it."""
    breakdown, e2e, ratios = {}, {}, {}
    for n in NETS:
        co = _client_ops(nets[n], ops[n])
        pr = nets[n]["params"]
        acc = cm.Accel.from_dict(taco.accel(ctx, HEParams(pr["poly_degree"], tuple(pr["coeff_bits"]),
                                                          pr["plain_bits"])))
        ratios[n] = acc.imx6_enc_s / (ops[n]["pk_encrypt_ms"] / 1e3)
        breakdown[n] = cm.client_breakdown(co, ratios[n], acc)
        e2e[n] = cm.end_to_end(co, ratios[n], acc)
    return breakdown, e2e, ratios


_HOST_NOTE = ("built on SEAL's operation times measured on this host, each scaled to the i.MX6 by a ratio to "
              "this host's encryption timed in the same run (caption), so the load of that run divides out; the "
              "time outside HE operations is the network run's own and still moves with the load")


def _fig11(ctx, breakdown: dict, e2e: dict, ratios: dict) -> None:
    """Fig. 11: client compute time per inference on the i.MX6."""
    kinds = (("sw", "software", "S", "0.45"), ("heax", "NTT-only (HEAX-like)", "H", "tab:purple"),
             ("taco", "TACO", "T", "tab:olive"))
    fig, (ax, axf) = ctx.subplots(1, 2, figsize=(14, 5), width_ratios=[3, 2])
    x = np.arange(len(NETS))
    wdt = 0.25
    d11: dict = {}
    # Totals side by side on a log axis, and each total's split as shares on a linear axis: stacked
    # bars on a log axis would misstate the parts.
    for j, (kind, lab, short, colour) in enumerate(kinds):
        tot = [breakdown[n][kind]["total_s"] for n in NETS]
        ax.bar(x + (j - 1) * wdt, tot, wdt, color=colour, label=f"{lab} client")
        parts = {p: [breakdown[n][kind][f"{p}_s"] for n in NETS] for p in ("enc", "dec", "other")}
        bottom = np.zeros(len(NETS))
        for p, col in (("enc", "tab:blue"), ("dec", "tab:orange"), ("other", "tab:green")):
            share = np.array(parts[p]) / np.array(tot)
            axf.bar(x + (j - 1) * wdt, share, wdt, bottom=bottom, color=col,
                    label={"enc": "encrypt", "dec": "decrypt", "other": "other"}[p] if j == 0 else None)
            bottom += share
        for xi in x + (j - 1) * wdt:
            axf.text(xi, 1.01, short, ha="center", va="bottom", fontsize=8)
        d11[f"Veil {lab}"] = {"network": [LABEL[n] for n in NETS], "total_s": tot,
                              "enc_s": parts["enc"], "dec_s": parts["dec"], "other_s": parts["other"]}
    loc = [e2e[n]["local_time_s"] for n in NETS]
    ax.scatter(x, loc, marker="_", s=500, color="k", label="local (TFLite-like)", zorder=3)
    d11["Veil local (TFLite-like)"] = {"network": [LABEL[n] for n in NETS], "total_s": loc}
    ax.set_yscale("log")
    ax.set_xticks(x, [LABEL[n] for n in NETS])
    ax.set_ylabel("client compute time on i.MX6 (s)")
    ax.legend(fontsize=8)
    axf.set_xticks(x, [LABEL[n] for n in NETS], fontsize=8)
    axf.set_ylim(0, 1.2)
    axf.set_ylabel("share of client time (S software, H HEAX-like, T TACO)")
    axf.legend(fontsize=7, loc="upper center", ncols=3)
    speed = float(np.mean([breakdown[n]["sw"]["total_s"] / breakdown[n]["taco"]["total_s"] for n in NETS]))
    vs_local = float(np.mean([e2e[n]["local_time_s"] / breakdown[n]["taco"]["total_s"] for n in NETS]))
    sw_vs_local = float(np.mean([breakdown[n]["sw"]["total_s"] / e2e[n]["local_time_s"] for n in NETS]))
    heax_adv = float(np.mean([breakdown[n]["heax"]["total_s"] / breakdown[n]["taco"]["total_s"]
                              for n in NETS]))
    ctx.figure(fig, "fig11_client_time",
               caption=f"Client time per inference on the i.MX6, estimated: operation times "
                       f"measured here times {min(ratios.values()):.1f}-{max(ratios.values()):.1f} (per network, "
                       f"the i.MX6 model's encryption at its parameters over this host's SEAL encryption "
                       f"timed in the same run as its operations); HEAX-like runs the "
                       f"NTT/INTT/dyadic steps on TACO's blocks and the rest in software; TACO's "
                       f"encryption and decryption times come from its model at the selected design.",
               # every client time here is SEAL (or the local inference) timed on this host and
               # scaled: the rows are measurements of this host, not model predictions
               rows=[taco.row("client speedup TACO vs software (mean)", speed, unit="x", ref=121.0,
                              source="paper §6-C", metric="he/taco/client_speedup_mean", origin="measurement",
                              note=_HOST_NOTE),
                     taco.row("software client vs local (mean slowdown)", sw_vs_local, unit="x",
                              ref=25.0, source="paper §6-C", origin="measurement", note=_HOST_NOTE),
                     taco.row("TACO client vs local (mean speedup)", vs_local, unit="x", ref=2.2,
                              source="paper §6-C", metric="he/taco/client_vs_local", origin="measurement",
                              note=_HOST_NOTE),
                     taco.row("TACO advantage over HEAX-like on client compute (mean)", heax_adv,
                              unit="x", ref=54.3, source="paper §6 intro", origin="measurement",
                              note=_HOST_NOTE)],
               data=d11)


def _fig12(ctx, e2e: dict) -> None:
    """Fig. 12: end-to-end time and energy against local inference."""
    x = np.arange(len(NETS))
    fig, (a1, a2) = ctx.subplots(1, 2, figsize=(13, 4.8))
    d12: dict = {}
    for ax_, key, unit in ((a1, "time_s", "s"), (a2, "energy_j", "J")):
        ch = [e2e[n][f"choco_{key}"] for n in NETS]
        lo = [e2e[n][f"local_{key}"] for n in NETS]
        ax_.bar(x - 0.2, ch, 0.4, label="CHOCO-TACO + Bluetooth")
        ax_.bar(x + 0.2, lo, 0.4, label="local TFLite-like")
        ax_.set_yscale("log")
        ax_.set_xticks(x, [LABEL[n] for n in NETS], fontsize=8)
        ax_.set_ylabel(f"end-to-end {key.split('_')[0]} ({unit})")
        d12[f"CHOCO-TACO {key}"] = {"network": [LABEL[n] for n in NETS], "value": ch}
        d12[f"local {key}"] = {"network": [LABEL[n] for n in NETS], "value": lo}
    # the paper's energy ratios (VGG16 -37%, SqueezeNet +82.5%) drawn at the local bars' scale
    for n, r in (("vgg16", 0.63), ("squeezenet", 1.825)):
        i = NETS.index(n)
        a2.plot([i - 0.2], [e2e[n]["local_energy_j"] * r], "D", color="k", mfc="none", ms=9, mew=1.5,
                label="paper text: CHOCO energy = local x 0.63 (VGG16) / 1.825 (SqueezeNet)" if n == "vgg16" else None)
        d12[f"paper text {n} energy"] = {"network": [LABEL[n]], "value": [e2e[n]["local_energy_j"] * r]}
    a1.legend(fontsize=7)
    a2.legend(fontsize=7)
    vgg_e = e2e["vgg16"]["choco_energy_j"] / e2e["vgg16"]["local_energy_j"]
    comm_over = float(np.mean([e2e[n]["choco_time_s"] / e2e[n]["local_time_s"] for n in NETS]))
    ctx.figure(fig, "fig12_end_to_end",
               caption="End-to-end time and energy per inference: CHOCO-TACO client compute "
                       "plus Bluetooth (22 Mbps, 10 mW) against local inference at 1 MAC/cycle "
                       "on the 528 MHz Cortex-A7 (269.5 mW). Open diamonds: the paper's energy ratios "
                       "applied to Veil's local bars.",
               rows=[taco.row("VGG16 energy CHOCO / local", vgg_e, unit="ratio", ref=0.63,
                              source="paper §6-D (37% less)", metric="he/taco/vgg16_energy_vs_local"),
                     taco.row("SqueezeNet energy CHOCO / local",
                              e2e["squeezenet"]["choco_energy_j"] / e2e["squeezenet"]["local_energy_j"],
                              unit="ratio", ref=1.825, source="paper §6-E (82.5% more)"),
                     taco.row("time CHOCO / local (mean)", comm_over, unit="x", ref=24.0,
                              source="paper §6-D")],
               data=d12)


def _fig13(ctx) -> None:
    """Fig. 13: MACs per MB communicated, conv-layer grid and two networks."""
    mm = ctx.run("he.macs_per_mb", {})
    fig, ax = ctx.subplots(figsize=(9, 5))
    d13: dict = {}
    for k, mk in ((1, "o"), (3, "s")):
        pts = [g for g in mm["grid"] if g["filter"] == k]
        ax.scatter([g["size"] for g in pts], [g["macs_per_mb"] for g in pts], marker=mk,
                   facecolors="none", edgecolors="0.5", label=f"{k}x{k} conv grid")
        d13[f"{k}x{k} grid"] = {"size": [g["size"] for g in pts], "macs_per_mb": [g["macs_per_mb"] for g in pts]}
    for name, col in (("vgg16", "tab:blue"), ("squeezenet", "tab:red")):
        pts = mm["networks"][name]
        ax.scatter([p["size"] for p in pts], [p["macs_per_mb"] for p in pts], color=col,
                   s=14, label=LABEL[name])
        d13[LABEL[name]] = {"size": [p["size"] for p in pts], "macs_per_mb": [p["macs_per_mb"] for p in pts]}
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("image size")
    ax.set_ylabel("MACs per MB communicated")
    ax.legend(fontsize=8)
    vgg_med = float(np.median([p["macs_per_mb"] for p in mm["networks"]["vgg16"]]))
    sq_med = float(np.median([p["macs_per_mb"] for p in mm["networks"]["squeezenet"]]))
    ctx.figure(fig, "fig13_macs_per_mb",
               caption="MACs per MB of ciphertext traffic for conv layers (image 2..32, "
                       "channels 32..512, 1x1 and 3x3 filters) at N=8192 with 3 primes; "
                       "VGG16's layers sit higher than SqueezeNet's, which is why VGG gains "
                       "energy and SqueezeNet does not.",
               rows=[Row("median MACs/MB VGG16 / SqueezeNet", vgg_med / sq_med, unit="x",
                         source="paper text (Fig. 13)", shape=Shape(">", 1.0), origin="arithmetic",
                         note="paper: VGG16's layers do more MACs per MB than SqueezeNet's",
                         self_check="MACs and ciphertext bytes per layer follow from the two networks' layer shapes "
                                    "and the packing; no declared assumption moves them (N and the primes scale "
                                    "both networks' bytes alike), so the predicate cannot fail: computed, not a "
                                    "finding")],
               data=d13)


def _search_text(ctx, nets: dict, masks: dict) -> None:
    ratios = [r["ct_bytes_vs_seal_default"] for r in nets.values()]
    ctx.text(
        f"Parameter search: all four networks at N={sorted({r['params']['poly_degree'] for r in nets.values()})} "
        f"with {sorted({r['params']['ct_primes'] for r in nets.values()})} ciphertext primes; "
        f"ciphertexts are {100 * (1 - max(ratios)):.0f}% smaller than SEAL's default at the "
        f"same N (paper: 50%). The masking baseline needs "
        f"{sorted({m['params']['ct_primes'] for m in masks.values()})} ciphertext primes.")



def _used(d: dict) -> int:
    return d["fresh_budget_bits"] - min(c["min_noise_budget"] for c in d["per_layer"])


def _pl(p: dict) -> str:
    return f"N={p['poly_degree']}, primes {p['coeff_bits']}, t {p['plain_bits']} bits"
