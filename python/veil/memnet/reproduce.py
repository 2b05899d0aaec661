"""`veil reproduce memnet`: latency-load curves against the BookSim2 reference curves."""

from __future__ import annotations

import math

from veil.core import register_reproducer

from . import engine, reproduce_memsys

# Experiment configs reproducing the two reference setups (data/README.md).
SETUPS = {
    "mesh8x8": {"rng": "booksim"},
    "dragonfly72": {"rng": "booksim", "topology": "dragonfly", "p": 2, "a": 4, "h": 2, "latency": 10,
                    "global_latency": 100, "routing": "min", "num_vcs": 2, "vc_buf_size": 256,
                    "internal_speedup": 2.0},
}

TITLES = {"mesh8x8": "8x8 mesh, DOR, 4 VCs x 8", "dragonfly72": "72-node dragonfly, min, 2 VCs x 256"}


def compare(ref: list[dict], veil: dict[float, dict]) -> dict:
    """Max relative latency error over the reference's unsaturated loads, and the relative error
    of the saturation throughput (the highest accepted throughput over all loads)."""
    lat_err = 0.0
    worst = None
    for row in ref:
        rate = row["offered_flits_per_node_cycle"]
        if row["saturated"] or rate not in veil:
            continue
        v = veil[rate]
        if v["saturated"]:
            err = math.inf
        else:
            err = abs(v["avg_packet_latency"] - row["avg_packet_latency"]) / row["avg_packet_latency"]
        if worst is None or err > lat_err:
            lat_err, worst = err, rate
    ref_sat = max(r["accepted_flits_per_node_cycle"] for r in ref if r["offered_flits_per_node_cycle"] in veil)
    veil_sat = max(v["accepted_flits_per_node_cycle"] for v in veil.values())
    return {"max_latency_error": lat_err, "worst_rate": worst,
            "saturation_ref": ref_sat, "saturation_veil": veil_sat,
            "saturation_error": abs(veil_sat - ref_sat) / ref_sat}


@register_reproducer("memnet", title="memnet: memory-centric network simulator vs BookSim2", order=20)
def reproduce(ctx):
    fig, axes = ctx.subplots(1, 2, figsize=(11, 4))
    rows = []
    errors = {}
    for ax, (name, setup) in zip(axes, SETUPS.items()):
        ref = engine.reference_curve(name)
        # All reference loads, also in --quick: about a minute in all, and cached.
        rates = [r["offered_flits_per_node_cycle"] for r in ref]
        veil = {rate: ctx.run("memnet.latency_load", {**setup, "rate": rate}) for rate in rates}
        cmp = compare(ref, veil)
        bx = [r["offered_flits_per_node_cycle"] for r in ref if not r["saturated"]]
        by = [r["avg_packet_latency"] for r in ref if not r["saturated"]]
        ax.plot(bx, by, "o-", label="BookSim2 (reference)")
        vx = [x for x in rates if not veil[x]["saturated"]]
        ax.plot(vx, [veil[x]["avg_packet_latency"] for x in vx], "s--", label="Veil memnet (booksim_compat)")
        if any(v["saturated"] for v in veil.values()):
            ax.axvline(cmp["saturation_veil"], color="grey", lw=0.8, ls=":", label="Veil saturation throughput")
        ax.set_xlabel("offered load (flits/node/cycle)")
        ax.set_ylabel("average packet latency (cycles)")
        ax.set_title(TITLES[name])
        ax.legend(fontsize=8)
        for row in ref:
            x = row["offered_flits_per_node_cycle"]
            if x in veil and not row["saturated"]:
                rows.append((f"{name} latency @{x:.2f}", row["avg_packet_latency"],
                             round(veil[x]["avg_packet_latency"], 1), "cycles"))
        rows.append((f"{name} saturation throughput", cmp["saturation_ref"],
                     round(cmp["saturation_veil"], 3), "flits/node/cycle"))
        errors[name] = cmp["max_latency_error"]
        ctx.metric(f"memnet/booksim_{name}_max_latency_error", cmp["max_latency_error"])
        if name == "mesh8x8":
            ctx.metric("memnet/booksim_mesh8x8_saturation_error", cmp["saturation_error"])
    ctx.figure(fig, "latency_load",
               caption="Average packet latency vs offered load, Veil memnet with the booksim_compat "
                       "preset against BookSim2's reference curves (same settings, seed 1).",
               rows=rows)
    ctx.text(
        "memnet re-implements BookSim2's input-queued VC router (lookahead routing, separable "
        "input-first allocators, credit flow control) and its warm-up / convergence / drain rules. "
        "With rng='booksim' it also draws BookSim2's random numbers in BookSim2's order, so each point "
        "is BookSim2's own run: same cycle count, latencies equal up to the reference CSV's rounding. "
        f"Largest latency error: mesh {errors['mesh8x8']:.2%}, dragonfly {errors['dragonfly72']:.2%}. "
        "The 'paper' column is BookSim2's measurement (seed 1).")
    reproduce_memsys.section(ctx)
