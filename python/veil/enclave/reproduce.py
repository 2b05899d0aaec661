"""Report section: the SSE paper's Fig. 2 (throughput vs workers) and Fig. 3 (64-worker time
breakdown and cache-miss deltas), beside the numbers the paper states, with the calibration
split (SGX-like numbers calibrated, SEV-like numbers and every shape predicted), a sensitivity
table of the calibrated constants, the arithmetic of the EX-L shape the model misses, and sweeps
beyond the paper."""

from __future__ import annotations

import math

from veil.core import Row, Shape, register_reproducer
from veil.enclave.provenance import target_key
from veil.enclave.server import CATEGORIES
from veil.enclave.targets import (CALIBRATED, CALIBRATION_HALF, HAND_TUNED, INTEGER, LAMBDA, PRIOR, TARGETS, defaults,
                                  point_rows, target_values)

WORKERS = [4, 8, 16, 32, 64]
MODELS = ["bl", "ex-b", "ex-l", "sse-nhp", "sse-hp"]
LABEL = {"bl": "BL", "ex-b": "EX-B", "ex-l": "EX-L", "ex-l0": "EX-L, 0-cycle switch",
         "sse-nhp": "SSE-NHP", "sse-hp": "SSE-HP"}
POLICIES = {"sgx": "SGX-like", "sev": "SEV-like"}
SEC51, SEC52, SEC5 = "paper text, Sec. 5.1", "paper text, Sec. 5.2", "paper text, Sec. 5"

# Fig. 3 numbers the paper states in its text (Sec. 5.1, 5.2); neither figure carries numbers.
PAPER_DELTA = {  # (policy, model, counter): relative change vs BL
    ("sgx", "ex-l", "l1d_misses"): 0.29, ("sgx", "ex-l", "l2_misses"): 0.23,
    ("sev", "ex-l", "l1d_misses"): 0.88, ("sev", "ex-l", "l2_misses"): 0.29,
    ("sgx", "sse-nhp", "l2_misses"): 0.161, ("sev", "sse-nhp", "l2_misses"): 0.118,
    ("sgx", "sse-hp", "l2_misses"): 0.002, ("sev", "sse-hp", "l2_misses"): 0.001,
}
PAPER_TIME_DELTA = {("sgx", "workload"): 0.10, ("sgx", "syscall"): 0.11, ("sev", "workload"): 0.082,
                    ("sev", "syscall"): 0.187}
# A change measured in another simulator (Graphite, running real code) set beside a model that
# abstracts the code: within half its size, and never tighter than 5 points (changes near zero).
DELTA_TOLERANCE = {"tol": 0.5, "tol_abs": 0.05,
                   "tol_source": "a change measured in another simulator (Graphite): within half its size, "
                                 "at least 5 points"}
COLORS = {"workload": "#4c72b0", "pack": "#dd8452", "unpack": "#937860", "syscall": "#55a868",
          "polling": "#c44e52", "ecall": "#8172b3", "ocall": "#64b5cd", "ctx_switch": "#da8bc3",
          "client": "#8c8c8c"}
SLEEP_SWEEP = [10.0, 20.0, 40.0, 80.0, 160.0]


def stated_slowdown(policy: str, model: str) -> float:
    return next(t.ref for t in TARGETS[policy] if t.model == model and t.kind == "slowdown")


def basis_of(policy: str) -> str:
    """Calibrated for the numbers of the calibration half, predicted for the rest."""
    return "calibrated" if policy == CALIBRATION_HALF else "predicted"


def fig2_rows() -> list[dict]:
    """Every point of Fig. 2 plus the 0-cycle-switch EX-L points behind the results keys.
    BL ignores the exit policy: it is run once and shown in both panels."""
    rows = [{"model": "bl", "policy": "sgx", "workers": w} for w in WORKERS]
    for p in POLICIES:
        rows += [{"model": m, "policy": p, "workers": w} for m in MODELS[1:] for w in WORKERS]
        rows += [{"model": "ex-l", "policy": p, "workers": w, "ctx_switch_ns": 0.0} for w in (32, 64)]
    return rows


def _key(r: dict) -> tuple[str, str, int]:
    m = "ex-l0" if r.get("ctx_switch_ns") == 0.0 else r["model"]
    return (r["policy"] if m != "bl" else "any", m, r["workers"])


@register_reproducer("enclave", title="enclave: exit-based, exitless and SSE enclaves (SSE, IEEE CAL 2022)", order=30)
def reproduce(ctx) -> None:
    rows = fig2_rows()
    res = ctx.run_many("enclave.server", {}, rows)
    by = {_key(r): out for r, out in zip(rows, res)}

    def get(p: str, m: str, w: int) -> dict:
        return by[("any", "bl", w)] if m == "bl" else by[(p, m, w)]

    def tput(p: str, m: str, w: int) -> float:
        return get(p, m, w)["throughput_krps"]

    # Slowdowns and sharing ratios keyed like the calibration targets.
    trows = point_rows(list(POLICIES))
    vals = target_values(trows, [get(r["policy"], "ex-l0" if r.get("ctx_switch_ns") == 0.0 else r["model"], 64)
                                 for r in trows])

    # --- Fig. 2 ---------------------------------------------------------------------------
    fig, axes = ctx.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    data: dict[str, dict[str, list]] = {}
    for ax, (p, title) in zip(axes, POLICIES.items()):
        for m in MODELS:
            ys = [tput(p, m, w) for w in WORKERS]
            line, = ax.plot(WORKERS, ys, marker="o", label=f"Veil {LABEL[m]}")
            data[f"{POLICIES[p]} Veil {LABEL[m]}"] = {"x": WORKERS, "y": ys}
            if m in ("ex-b", "ex-l"):
                # The paper states these as slowdowns against BL at 64 workers: drawn at Veil's
                # BL throughput over the paper's slowdown.
                ref = tput(p, "bl", 64) / stated_slowdown(p, m)
                ax.plot([64], [ref], marker="*", ms=13, color=line.get_color(), mec="k", ls="none",
                        label=f"paper {LABEL[m]} (Veil BL / stated slowdown)")
                data[f"{POLICIES[p]} paper {LABEL[m]} (Veil BL / stated slowdown)"] = {"x": [64], "y": [ref]}
        ax.set_xscale("log", base=2)
        ax.set_xticks(WORKERS, [str(w) for w in WORKERS])
        ax.set_xlabel("workers")
        ax.set_title(f"{title} ({basis_of(p)})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("thousand requests / s (1 GHz)")
    fig2_table = []
    for p in POLICIES:
        for t in TARGETS[p]:
            if t.kind != "slowdown":
                continue
            k = {"ex-b": "exb", "ex-l": "exl", "ex-l0": "exl_zero_ctx"}[t.model]
            fig2_table.append(Row(f"{POLICIES[p]} {LABEL[t.model]} slowdown vs BL, 64 workers", vals[t.key], unit="x",
                                  ref=t.ref, source=t.source, tol_abs=t.tol, tol_source=t.tol_source,
                                  metric=target_key(p, t.model, t.kind)))
        for m, k in (("sse-nhp", "sse_nhp"), ("sse-hp", "sse_hp")):
            fig2_table.append(Row(f"{POLICIES[p]} {LABEL[m]} slowdown vs BL, 64 workers", vals[f"{p}/{m}/slowdown"],
                                  unit="x", note="the paper states no number",
                                  metric=f"enclave/{p}/{k}_slowdown_64w"))
    fig2_table += _shape_rows(tput)
    ctx.figure(fig, "fig2_throughput",
               "Fig. 2: Server throughput, 1000 requests of 16 KB on 64 tiles. The paper's figure carries no numbers; "
               "its text states the 64-worker slowdowns (stars: Veil's BL over the stated slowdown) and the shapes "
               f"(rows marked shape). {POLICIES[CALIBRATION_HALF]} slowdowns are calibrated (the constants were fitted "
               "on them), every SEV-like number and every shape is predicted.", fig2_table, data)

    # --- Fig. 3 ---------------------------------------------------------------------------
    bars = ["bl", "ex-b", "ex-l", "ex-l0", "sse-nhp", "sse-hp"]
    fig, axes = ctx.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    top = 0.0
    data = {}
    for ax, (p, title) in zip(axes, POLICIES.items()):
        base = get(p, "bl", 64)["mean_worker_cycles"]
        bottom = [0.0] * len(bars)
        for c in CATEGORIES:
            ys = [get(p, m, 64)[f"time_{c}"] / base for m in bars]
            ax.bar(range(len(bars)), ys, bottom=bottom, color=COLORS[c], label=c.replace("_", " "))
            data[f"{POLICIES[p]} {c}"] = {"x": [LABEL[m] for m in bars], "y": ys}
            bottom = [b + v for b, v in zip(bottom, ys)]
        ax.set_xticks(range(len(bars)), [LABEL[m].replace(", 0-cycle switch", "\n0-ctx") for m in bars], fontsize=9)
        ax.set_title(f"{title}, 64 workers")
        top = max(top, *bottom)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylim(0, top * 1.06)
    axes[0].set_ylabel("time per worker, normalised to BL")
    axes[1].legend(fontsize=8, loc="upper right")
    fig3_table = []
    for p in POLICIES:
        bl = get(p, "bl", 64)
        for (pp, m, k), paper in PAPER_DELTA.items():
            if pp == p:
                fig3_table.append(Row(f"{POLICIES[p]} {LABEL[m]} {k.replace('_', ' ')} vs BL",
                                      get(p, m, 64)[k] / bl[k] - 1, unit="fraction", ref=paper,
                                      source=SEC51 if m == "ex-l" else SEC52, **DELTA_TOLERANCE))
        for t in TARGETS[p]:
            if t.kind == "sharing":
                fig3_table.append(Row(f"{POLICIES[p]} {LABEL[t.model]} sharing misses vs BL", vals[t.key],
                                      unit="x", ref=t.ref, source=t.source, tol=t.tol, tol_source=t.tol_source,
                                      key=target_key(p, t.model, t.kind)))
        for c in ["workload", "syscall"]:
            fig3_table.append(Row(f"{POLICIES[p]} EX-L {c} time vs BL",
                                  get(p, "ex-l", 64)[f"time_{c}"] / bl[f"time_{c}"] - 1, unit="fraction",
                                  ref=PAPER_TIME_DELTA[(p, c)], source=SEC51, **DELTA_TOLERANCE))
    ctx.figure(fig, "fig3_breakdown",
               "Fig. 3: where a worker's time goes at 64 workers, normalised to BL's mean worker time. "
               "Polling is a worker waiting for a responder's timer plus responder passes over the shared "
               "buffer on the worker's core; Syscall includes waiting while an SSE or remote responder runs "
               "the call. Rows: the miss and time changes the paper states in its text. Only the SGX-like "
               "sharing ratios were in the calibration's view; every other row is predicted.", fig3_table, data)

    for p in POLICIES:
        ctx.metric(f"enclave/{p}/bl_64w_over_32w", tput(p, "bl", 64) / tput(p, "bl", 32))
        ctx.metric(f"enclave/{p}/sse_hp_over_bl_64w", tput(p, "sse-hp", 64) / tput(p, "bl", 64))

    _calibration(ctx)
    _sensitivity(ctx)
    _exl_decrease(ctx, tput)
    _beyond(ctx)
    ctx.text(
        "The model is a discrete-event simulation (Rust, veil-enclave): threads pinned to enclave cores and "
        "SSEs, a scheduler with context switches and responder timers, a shared request buffer, and "
        "set-associative L1s, an S-NUCA L2 and a directory fed by each phase's access stream. "
        f"SSE-HP reaches {tput('sgx', 'sse-hp', 64) / tput('sgx', 'bl', 64):.2f}x (SGX-like) and "
        f"{tput('sev', 'sse-hp', 64) / tput('sev', 'bl', 64):.2f}x (SEV-like) of BL at 64 workers: its workers still "
        "pack and unpack every call's data and wait while the SSE runs the call, and the data crossing "
        "between core and SSE shows up as sharing misses. docs/enclave-model.md lists every parameter and "
        "docs/enclave.md how "
        "the model differs from the paper's Graphite setup.")


def _shape_rows(tput) -> list:
    """The shapes the paper states in Sec. 5 (Fig. 2) as predicates on the model's throughputs."""
    out = []
    for p in POLICIES:
        for m, what in (("bl", "BL achieves the highest throughput ... as the number of workers are increased from 4 "
                               "to 64"),
                        ("ex-b", "EX-B is able to achieve performance scaling under both configurations")):
            g = min(tput(p, m, b) / tput(p, m, a) for a, b in zip(WORKERS, WORKERS[1:]))
            out.append(Row(f"{POLICIES[p]} {LABEL[m]} throughput, smallest gain per doubling of workers (4-64)", g,
                           unit="x", source=SEC5, shape=Shape(">", 1.0), note=f"paper: '{what}'"))
        g = tput(p, "ex-l", 64) / tput(p, "ex-l", 32)
        out.append(Row(f"{POLICIES[p]} EX-L throughput 64 / 32 workers", g, unit="x", source=SEC5, shape=Shape("<", 1.0),
                       metric=f"enclave/{p}/exl_64w_over_32w",
                       note="paper: 'suffers a decrease in performance at 64 workers'"))
        g = tput(p, "sse-hp", 64) / tput(p, "sse-hp", 32)
        out.append(Row(f"{POLICIES[p]} SSE-HP throughput 64 / 32 workers", g, unit="x", source=SEC5, shape=Shape(">", 1.0),
                       metric=f"enclave/{p}/sse_hp_64w_over_32w", note="paper: SSE 'continues to scale at 64 workers'"))
        lo = min(tput(p, "bl", w) / tput(p, m, w) for w in WORKERS for m in MODELS[1:])
        out.append(Row(f"{POLICIES[p]} BL over the best other model, lowest over 4-64 workers", lo, unit="x",
                       source=SEC5, shape=Shape(">=", 1.0),
                       note="paper: BL has the highest throughput at every worker count",
                       self_check="every other model does BL's work plus exits, copies or hand-overs: no declared "
                                  "assumption and no ablation tried (free exits, switches and memory crypto; an SSE "
                                  "2x or 4x faster than its core) gives another model less work than BL"))
        r = min(tput(p, "ex-l", w) / tput(p, "bl", w) for w in WORKERS if w <= 32)
        out.append(Row(f"{POLICIES[p]} EX-L over BL, lowest over 4-32 workers", r, unit="x", source=SEC5,
                       shape=Shape(">=", 0.9),
                       note="paper: EX-L scales 'relatively in line with the baseline up to 32 workers' (no number: "
                            "taken as within 10% of BL)"))
        d = max(abs(tput(p, m, w) / tput(p, "ex-l", w) - 1) for w in WORKERS if w <= 32 for m in ("sse-nhp", "sse-hp"))
        out.append(Row(f"{POLICIES[p]} SSE vs EX-L, largest difference over 4-32 workers", d, unit="fraction",
                       source=SEC5, shape=Shape("<=", 0.1),
                       note="paper: SSE 'behaves identically to EX-L up to 32 workers' (no number: taken as within "
                            "10%)"))
    return out


def _calibration(ctx) -> None:
    from veil.enclave.calibrate import BOUNDS

    now = defaults()

    def at_bound(k: str) -> str:
        lo, hi = BOUNDS[k]
        return "lower" if now[k] <= lo else "upper" if now[k] >= hi else ""

    ctx.grid(f"Calibrated constants: fitted on the {POLICIES[CALIBRATION_HALF]} half "
             "(python -m veil.enclave.calibrate); a fit that ends at a search bound is marked",
             ["constant", "first estimate (prior)", "hand-tuned on all six slowdowns (before)", "fitted on the "
              f"{POLICIES[CALIBRATION_HALF]} half (now)", "search bounds", "ends at a bound"],
             [[k, PRIOR[k], HAND_TUNED[k], now[k], f"{BOUNDS[k][0]:g} - {BOUNDS[k][1]:g}", at_bound(k)]
              for k in CALIBRATED])
    for k in CALIBRATED:
        ctx.metric(f"enclave/calibration/{k}_at_bound", at_bound(k) or "no")
    ctx.text(
        f"Calibration split. The paper gives no per-call costs or footprints, so ten constants are free. They are "
        f"fitted by a deterministic coordinate descent (python -m veil.enclave.calibrate) on the "
        f"{POLICIES[CALIBRATION_HALF]} numbers only: the 64-worker slowdowns of EX-B, EX-L and EX-L with a 0-cycle "
        f"switch and the SSE sharing-miss ratios, minimising the squared errors in units of each tolerance plus "
        f"{LAMBDA} x the squared log-distance of each constant from its first estimate (which picks, among the many "
        f"settings that meet five numbers, the one nearest the first estimates). Every SEV-like number, every "
        f"Fig. 3 miss and time change and every shape of Fig. 2 is a prediction. The 'before' column is the earlier "
        f"hand calibration, done while looking at all six slowdowns.")


def _slowdown_points(ctx, base: dict, policies: list[str]) -> dict[str, float]:
    rows = [r for r in point_rows(policies) if r["model"] not in ("sse-nhp", "sse-hp")]
    outs = ctx.run_many("enclave.server", base, rows)
    res = target_values(rows, outs)
    return {k: v for k, v in res.items() if k.endswith("/slowdown")}


def _sensitivity(ctx) -> None:
    """Each calibrated constant at -25% and +25% (integers at least one unit away), the others at their
    fitted values: the effect on each of the six slowdowns the paper states."""
    req = 128 if ctx.quick else 1000
    base = {"workers": 64, "requests": req}
    pol = list(POLICIES)
    ref = _slowdown_points(ctx, base, pol)
    keys = [t.key for p in pol for t in TARGETS[p] if t.kind == "slowdown"]
    now = defaults()
    table = [["(fitted values)", "—"] + [f"{ref[k]:.3f}" for k in keys]]
    for c in CALIBRATED:
        for f in (0.75, 1.25):
            v = now[c] * f
            if c in INTEGER:  # at least one unit away (2 KB -> 1 and 3 KB)
                v = max(1, min(math.floor(v), now[c] - 1)) if f < 1 else max(math.ceil(v), now[c] + 1)
            out = _slowdown_points(ctx, {**base, c: v}, pol)
            table.append([f"{c} x{f:g}", f"{v:g}"] + [f"{out[k] - ref[k]:+.3f}" for k in keys])
    header = ["constant", "value"] + [f"{POLICIES[k.split('/')[0]]} {LABEL[k.split('/')[1]]}" for k in keys]
    ctx.grid(f"Sensitivity: change of each 64-worker slowdown when one calibrated constant moves by 25% "
             f"({req} requests{', quick mode' if ctx.quick else ''}; first row: the slowdowns themselves)",
             header, table)


def _exl_decrease(ctx, tput) -> None:
    """Whether the responder mechanisms can turn EX-L's 32 -> 64 gain into the paper's decrease.

    Slowdowns are completion-time ratios for the same 1000 requests, so throughput ratios too;
    hence, exactly, EX-L(64)/EX-L(32) = [BL(64)/BL(32)] / [S64 x EX-L(32)/BL(32)] with S64 the
    64-worker slowdown. A decrease needs BL's own gain g_BL below S64 x r32."""
    grid = []
    for p in POLICIES:
        g_bl = tput(p, "bl", 64) / tput(p, "bl", 32)
        r32 = tput(p, "ex-l", 32) / tput(p, "bl", 32)
        paper_s = stated_slowdown(p, "ex-l")
        grid.append([POLICIES[p], f"{g_bl:.3f}", f"{r32:.3f}", f"{paper_s:g}", f"{paper_s * r32:.3f}",
                     f"{g_bl / r32:.2f}"])
    ctx.grid("EX-L's decrease at 64 workers: what the paper's own numbers require. Exactly, EX-L(64)/EX-L(32) = "
             "g_BL / (S64 x r32), with g_BL = BL(64)/BL(32), r32 = EX-L(32)/BL(32) and S64 the 64-worker slowdown",
             ["policy", "Veil g_BL", "Veil r32", "paper S64", "a decrease needs g_BL below S64 x r32",
              "a decrease with Veil's BL needs S64 above g_BL / r32"], grid)
    # EX-L's own mechanisms at 64 workers: a longer responder timer means more polling per call.
    # At 32 workers responders have their own cores and never sleep, so r32 does not move.
    req = 1000
    sleeps = SLEEP_SWEEP[::2] if ctx.quick else SLEEP_SWEEP
    rows = [{"model": m, "policy": p, "workers": w, "responder_sleep_us": s}
            for p in POLICIES for s in sleeps for m, w in (("ex-l", 32), ("ex-l", 64))]
    outs = ctx.run_many("enclave.server", {"requests": req}, rows)
    sweep = []
    for i in range(0, len(rows), 2):
        p, s = rows[i]["policy"], rows[i]["responder_sleep_us"]
        e32, e64 = outs[i]["throughput_krps"], outs[i + 1]["throughput_krps"]
        sweep.append([POLICIES[p], f"{s:g}", f"{e64 / e32:.3f}", f"{tput(p, 'bl', 64) / e64:.2f}",
                      "decrease" if e64 < e32 else "gain"])
    ctx.grid("EX-L's mechanisms pushed harder: the responder sleep timer (polling time per call and swaps) at "
             "32 and 64 workers", ["policy", "responder_sleep_us", "EX-L 64/32", "EX-L slowdown at 64 vs BL",
                                   "32 -> 64"], sweep)
    ctx.text(
        "The EX-L decrease. EX-L's polling, timer swaps and cache thrashing all act on EX-L(64) alone, and "
        "through the identity above every one of them moves the 64-worker slowdown and the 32 -> 64 change "
        "together: with Veil's BL gaining g_BL from 32 to 64 workers and EX-L at r32 of BL at 32, the "
        "decrease appears exactly when the slowdown exceeds g_BL / r32 (table), far above the paper's 1.7 and "
        "1.4. The paper's three statements (EX-L 'relatively in line' with BL up to 32, slowdowns 1.7 / 1.4 at 64, "
        "and a decrease from 32 to 64) hold together only if BL itself gains less than 1.7 x r32 (SGX-like) and "
        "1.4 x r32 (SEV-like) from 32 to 64 workers, i.e. less than 1.4x, though each of its 64 workers has a "
        "core of its own; the paper names no mechanism that would stop BL scaling (it says SSE scales 'at par' "
        "with BL). Veil keeps the stated slowdowns and reports the decrease as missed.")


def _beyond(ctx) -> None:
    """Sweeps past the paper at 64 workers (and tiles = workers for the tile sweep)."""
    req = 128 if ctx.quick else 1000
    base = {"workers": 64, "requests": req}
    q = ctx.quick
    sweeps = [
        ("responder_sleep_us", [2.5, 10.0, 40.0] if q else [1.0, 2.5, 5.0, 10.0, 20.0, 40.0], ["ex-l"],
         "responder sleep timer (us)"),
        ("ctx_switch_ns", [0.0, 500.0, 2000.0] if q else [0.0, 250.0, 500.0, 1000.0, 2000.0], ["ex-l"],
         "context switch (ns)"),
        ("cores_per_sse", [1, 2, 4], ["sse-hp", "sse-nhp"], "enclave cores per SSE"),
        ("page_bytes", [1024, 16384, 65536] if q else [1024, 4096, 16384, 65536, 262144],
         ["bl", "ex-b", "ex-l", "sse-hp"], "request (page) size, bytes"),
        ("tiles", [16, 64] if q else [16, 32, 64, 128, 256], ["bl", "ex-b", "ex-l", "sse-hp"], "tiles (= workers)"),
    ]
    fig, axes = ctx.subplots(2, 3, figsize=(13, 8))
    axes = axes.ravel()
    data = {}
    for ax, (field, values, models, xlabel) in zip(axes, sweeps):
        for p, ls in (("sgx", "-"), ("sev", "--")):
            for m in models:
                rows = []
                for v in values:
                    r = {"model": m, "policy": p, field: v}
                    if field == "tiles":
                        # Weak scaling: as many workers as tiles, 16 requests each.
                        r["workers"] = v
                        r["requests"] = (4 if q else 16) * v
                    rows.append(r)
                outs = ctx.run_many("enclave.server", base, rows)
                ys = [o["throughput_krps"] for o in outs]
                ax.plot(values, ys, ls, marker="o", ms=3, label=f"{LABEL[m]} {POLICIES[p]}")
                data[f"{field}: {LABEL[m]} {POLICIES[p]}"] = {"x": values, "y": ys}
        ax.set_xlabel(xlabel)
        ax.set_ylabel("thousand requests / s")
        if field in ("responder_sleep_us", "page_bytes", "tiles"):
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[-1].axis("off")
    ctx.figure(fig, "beyond_sweeps",
               f"Beyond the paper, {req} requests, 64 workers unless the x-axis says otherwise (solid SGX-like, "
               "dashed SEV-like); the tile sweep runs as many workers as tiles with 16 requests each (4 in quick "
               "mode, which also runs fewer points). The sweep TOML files under configs/enclave/ run the same grids "
               "with `veil sweep`. No paper numbers: nothing to compare.", [], data)
