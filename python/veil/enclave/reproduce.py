"""Report section: the SSE paper's Fig. 2 (throughput vs workers) and Fig. 3 (64-worker time
breakdown and cache-miss deltas), beside the numbers the paper states, plus sweeps beyond it."""

from __future__ import annotations

from veil.core import register_reproducer
from veil.enclave.server import CATEGORIES

WORKERS = [4, 8, 16, 32, 64]
MODELS = ["bl", "ex-b", "ex-l", "sse-nhp", "sse-hp"]
LABEL = {"bl": "BL", "ex-b": "EX-B", "ex-l": "EX-L", "ex-l0": "EX-L, 0-cycle switch",
         "sse-nhp": "SSE-NHP", "sse-hp": "SSE-HP"}
POLICIES = {"sgx": "SGX-like", "sev": "SEV-like"}

# Stated in the paper's text (Sec. 5.1 and 5.2); Fig. 2 and 3 themselves carry no numbers.
PAPER_SLOWDOWN = {("sgx", "ex-b"): 2.2, ("sev", "ex-b"): 1.5, ("sgx", "ex-l"): 1.7, ("sev", "ex-l"): 1.4,
                  ("sgx", "ex-l0"): 1.6, ("sev", "ex-l0"): 1.3}
PAPER_DELTA = {  # (policy, model, counter): relative change vs BL
    ("sgx", "ex-l", "l1d_misses"): 0.29, ("sgx", "ex-l", "l2_misses"): 0.23,
    ("sev", "ex-l", "l1d_misses"): 0.88, ("sev", "ex-l", "l2_misses"): 0.29,
    ("sgx", "sse-nhp", "l2_misses"): 0.161, ("sev", "sse-nhp", "l2_misses"): 0.118,
    ("sgx", "sse-hp", "l2_misses"): 0.002, ("sev", "sse-hp", "l2_misses"): 0.001,
}
PAPER_SHARING = {("sgx", "sse-nhp"): 4.8, ("sev", "sse-nhp"): 2.4, ("sgx", "sse-hp"): 4.4, ("sev", "sse-hp"): 1.4}
PAPER_TIME_DELTA = {("sgx", "workload"): 0.10, ("sgx", "syscall"): 0.11, ("sev", "workload"): 0.082,
                    ("sev", "syscall"): 0.187}
COLORS = {"workload": "#4c72b0", "pack": "#dd8452", "unpack": "#937860", "syscall": "#55a868",
          "polling": "#c44e52", "ecall": "#8172b3", "ocall": "#64b5cd", "ctx_switch": "#da8bc3"}


def fig2_rows() -> list[dict]:
    """Every point of Fig. 2 plus the 0-cycle-switch EX-L points behind the results keys.
    BL ignores the exit policy: it is run once and shown in both panels."""
    rows = [{"model": "bl", "policy": "sgx", "workers": w} for w in WORKERS]
    for p in POLICIES:
        rows += [{"model": m, "policy": p, "workers": w} for m in MODELS[1:] for w in WORKERS]
        rows += [{"model": "ex-l", "policy": p, "workers": w, "ctx_switch_ns": 0.0} for w in (32, 64)]
    return rows


def _key(row: dict) -> tuple[str, str, int]:
    m = "ex-l0" if row.get("ctx_switch_ns") == 0.0 else row["model"]
    return (row["policy"] if m != "bl" else "any", m, row["workers"])


@register_reproducer("enclave", title="enclave: exit-based, exitless and SSE enclaves (SSE, IEEE CAL 2022)", order=30)
def reproduce(ctx) -> None:
    rows = fig2_rows()
    res = ctx.run_many("enclave.server", {}, rows)
    by = {_key(r): out for r, out in zip(rows, res)}

    def get(p: str, m: str, w: int) -> dict:
        return by[("any", "bl", w)] if m == "bl" else by[(p, m, w)]

    # --- Fig. 2 ---------------------------------------------------------------------------
    fig, axes = ctx.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (p, title) in zip(axes, POLICIES.items()):
        for m in MODELS:
            ax.plot(WORKERS, [get(p, m, w)["throughput_krps"] for w in WORKERS], marker="o", label=LABEL[m])
        ax.set_xscale("log", base=2)
        ax.set_xticks(WORKERS, [str(w) for w in WORKERS])
        ax.set_xlabel("workers")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("thousand requests / s (1 GHz)")
    axes[0].legend(fontsize=8)
    fig2_table = []
    for p in POLICIES:
        bl64 = get(p, "bl", 64)["completion_cycles"]
        for m in ["ex-b", "ex-l", "ex-l0"]:
            s = get(p, m, 64)["completion_cycles"] / bl64
            fig2_table.append((f"{POLICIES[p]} {LABEL[m]} slowdown vs BL, 64 workers", PAPER_SLOWDOWN[(p, m)], s, "x"))
        for m in ["sse-nhp", "sse-hp"]:
            fig2_table.append((f"{POLICIES[p]} {LABEL[m]} slowdown vs BL, 64 workers", None,
                               get(p, m, 64)["completion_cycles"] / bl64, "x"))
        for m in ["bl", "ex-l", "sse-hp"]:
            fig2_table.append((f"{POLICIES[p]} {LABEL[m]} throughput 64 / 32 workers", None,
                               get(p, m, 64)["throughput_krps"] / get(p, m, 32)["throughput_krps"], "x"))
    ctx.figure(fig, "fig2_throughput",
               "Fig. 2: Server throughput, 1000 requests of 16 KB on 64 tiles. The paper states the 64-worker "
               "slowdowns (rows with a paper value) and the shapes: BL highest; EX-L in line with BL up to 32 "
               "workers and falling behind at 64 (128 threads on 64 cores swap on the responder timer); SSE "
               "equal to EX-L up to 32 and still scaling at 64, short of BL.", fig2_table)

    # --- Fig. 3 ---------------------------------------------------------------------------
    bars = ["bl", "ex-b", "ex-l", "ex-l0", "sse-nhp", "sse-hp"]
    fig, axes = ctx.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    top = 0.0
    for ax, (p, title) in zip(axes, POLICIES.items()):
        base = get(p, "bl", 64)["mean_worker_cycles"]
        bottom = [0.0] * len(bars)
        for c in CATEGORIES:
            vals = [get(p, m, 64)[f"time_{c}"] / base for m in bars]
            ax.bar(range(len(bars)), vals, bottom=bottom, color=COLORS[c], label=c.replace("_", " "))
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(range(len(bars)), [LABEL[m].replace(", 0-cycle switch", "\n0-ctx") for m in bars], fontsize=8)
        ax.set_title(f"{title}, 64 workers")
        top = max(top, *bottom)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylim(0, top * 1.06)
    axes[0].set_ylabel("time per worker, normalised to BL")
    axes[1].legend(fontsize=7, loc="upper right")
    fig3_table = []
    for p in POLICIES:
        bl = get(p, "bl", 64)
        for (pp, m, k), paper in PAPER_DELTA.items():
            if pp == p:
                fig3_table.append((f"{POLICIES[p]} {LABEL[m]} {k.replace('_', ' ')} vs BL", paper,
                                   get(p, m, 64)[k] / bl[k] - 1, "rel."))
        for m in ["sse-nhp", "sse-hp"]:
            fig3_table.append((f"{POLICIES[p]} {LABEL[m]} sharing misses vs BL", PAPER_SHARING[(p, m)],
                               get(p, m, 64)["sharing_misses"] / bl["sharing_misses"], "x"))
        for c in ["workload", "syscall"]:
            fig3_table.append((f"{POLICIES[p]} EX-L {c} time vs BL", PAPER_TIME_DELTA[(p, c)],
                               get(p, "ex-l", 64)[f"time_{c}"] / bl[f"time_{c}"] - 1, "rel."))
    ctx.figure(fig, "fig3_breakdown",
               "Fig. 3: where a worker's time goes at 64 workers, normalised to BL's mean worker time. "
               "Polling is a worker waiting for a responder's timer plus responder passes over the shared "
               "buffer on the worker's core; Syscall includes waiting while an SSE or remote responder runs "
               "the call. Rows: miss deltas the paper states (relative change vs BL, or a ratio).", fig3_table)

    for p in POLICIES:
        bl64, bl32 = get(p, "bl", 64), get(p, "bl", 32)
        for name, m in [("exb", "ex-b"), ("exl", "ex-l"), ("exl_zero_ctx", "ex-l0"), ("sse_hp", "sse-hp"),
                        ("sse_nhp", "sse-nhp")]:
            ctx.metric(f"enclave/{p}/{name}_slowdown_64w", get(p, m, 64)["completion_cycles"] / bl64["completion_cycles"])
        for name, m in [("exl", "ex-l"), ("sse_hp", "sse-hp"), ("bl", "bl")]:
            ctx.metric(f"enclave/{p}/{name}_64w_over_32w",
                       get(p, m, 64)["throughput_krps"] / get(p, m, 32)["throughput_krps"])
        ctx.metric(f"enclave/{p}/sse_hp_over_bl_64w", get(p, "sse-hp", 64)["throughput_krps"] / bl64["throughput_krps"])
        del bl32

    _beyond(ctx)
    ctx.text(
        "The model is a discrete-event simulation (Rust, veil-enclave): threads pinned to enclave cores and "
        "SSEs, a scheduler with context switches and responder timers, a shared request buffer, and "
        "set-associative L1s, an S-NUCA L2 and a directory fed by each phase's access stream. The Server "
        "step table (compute costs and access footprints) and the context-switch footprint were set once "
        "for all points, against the 64-worker slowdowns the paper states; no point is fitted on its own, "
        "and the shapes (EX-L falling behind at 64 workers, SSE scaling, HP over NHP) follow from the "
        "mechanisms. "
        "SSE-HP reaches about 0.85x (SGX-like) and 0.9x (SEV-like) of BL at 64 workers: its workers still "
        "pack and unpack every call's data and wait while the SSE runs the call, and the data crossing "
        "between core and SSE shows up as sharing misses. docs/enclave.md lists every parameter and how "
        "the model differs from the paper's Graphite setup.")


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
    fig, axes = ctx.subplots(2, 3, figsize=(12, 7))
    axes = axes.ravel()
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
                ax.plot(values, [o["throughput_krps"] for o in outs], ls, marker="o", ms=3,
                        label=f"{LABEL[m]} {POLICIES[p]}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("thousand requests / s")
        if field in ("responder_sleep_us", "page_bytes", "tiles"):
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    axes[-1].axis("off")
    ctx.figure(fig, "beyond_sweeps",
               f"Beyond the paper, {req} requests, 64 workers unless the x-axis says otherwise (solid SGX-like, "
               "dashed SEV-like); the tile sweep runs as many workers as tiles with 16 requests each (4 in quick "
               "mode, which also runs fewer points). The sweep TOML files under configs/enclave/ run the same grids with `veil sweep`.")
