"""`veil reproduce trace`: every workload of the suite traced through the memcrypt paper's caches
(8 KB direct-mapped L1s, a 4-way LLC of 256 KB and of 1 MB, 64 B lines): instructions, LLC MPKI,
writebacks, frequent-value coverage, and the cache model checked against cachegrind."""

from __future__ import annotations

import shutil

from veil.core import Row, Shape, register_reproducer

from .crosscheck import compare
from .runner import Geometry, cache_dir, ensure_traces
from .stats import trace_stats
from .workloads import WORKLOADS, get_workload

NS = (1, 2, 4, 8, 16, 32, 64)


@register_reproducer("trace", title="trace: memory and value traces of real programs", order=15)
def reproduce(ctx) -> None:
    if shutil.which("valgrind") is None:
        ctx.text("valgrind is not installed here (apt-get install valgrind; `make trace-deps`): no traces.")
        return
    geoms = {"256k": Geometry(llc_bytes=256 * 1024), "1m": Geometry(llc_bytes=1024 * 1024)}
    grid, fv_rows, mpki_rows, data = [], [], [], {}
    zero_top = 0
    names = sorted(WORKLOADS, key=lambda n: (WORKLOADS[n].family, n))
    # Traced on ctx.jobs valgrind processes at once (the cold part of `make run`), then read back.
    ctx.progress(f"tracing {len(names)} workloads x {len(geoms)} caches on {ctx.jobs} threads ...")
    paths = iter(ensure_traces([{"workload": n, "size": "small", "llc_bytes": g.llc_bytes, "llc_assoc": g.llc_assoc}
                                for n in names for g in geoms.values()], jobs=ctx.jobs))
    for name in names:
        w = WORKLOADS[name]
        s = {}
        for tag in geoms:
            s[tag] = trace_stats(next(paths), NS)
        a, b = s["256k"], s["1m"]
        zero_top += a["top_values"][0][0] == 0
        kilo = a["insts"] / 1000
        grid.append([name, w.family, len(a["threads"]), f"{a['insts'] / 1e6:.1f}", f"{a['mpki']:.3f}",
                     f"{b['mpki']:.3f}", f"{a['writebacks'] / kilo:.3f}", f"{100 * a['coverage'][8]:.1f}",
                     f"{100 * a['coverage'][32]:.1f}"])
        ctx.metric(f"trace/{name}/mpki_1m", b["mpki"])
        data[name] = {"N": list(NS), "coverage": [a["coverage"][n] for n in NS]}
        mpki_rows.append(Row(f"{name}: LLC MPKI, 256 KB / 1 MB", a["mpki"], unit="MPKI", origin="measurement",
                             metric=f"trace/{name}/mpki_256k", note=f"1 MB: {b['mpki']:.3f} MPKI"))
        fv_rows.append(Row(f"{name}: top-8 frequent values' share of fetched words", a["coverage"][8], unit="",
                           origin="measurement", metric=f"trace/{name}/fv8_coverage"))
    ctx.grid("Workloads through 8 KB direct-mapped L1s and a 4-way LLC (64 B lines), small inputs",
             ["workload", "family", "threads", "M instructions", "MPKI 256 KB", "MPKI 1 MB",
              "writebacks / k-instr (256 KB)", "top-8 cover % (256 KB)", "top-32 cover %"], grid)

    fig, ax = ctx.subplots(figsize=(7.5, 4.2))
    import matplotlib.pyplot as plt

    for i, (name, d) in enumerate(data.items()):
        style = "-" if WORKLOADS[name].family == "spec" else "--"
        ax.plot(d["N"], [100 * c for c in d["coverage"]], style, marker="o", ms=3, label=name,
                color=plt.cm.tab20(i / max(1, len(data) - 1)))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N most frequent 64-bit values")
    ax.set_ylabel("share of fetched words (%)")
    ax.set_title("Frequent-value coverage of LLC fills, 256 KB LLC")
    ax.legend(ncol=3, fontsize=7)
    n = len(data)
    rows = fv_rows + [Row("workloads whose most frequent fetched value is zero", zero_top, unit=f"of {n}",
                          shape=Shape("==", n), origin="measurement",
                          source="frequent-value studies (Zhang, Yang and Gupta, ASPLOS 2000): zero is the most "
                                 "frequent value",
                          self_check="a count over the values the traced programs fetched: no assumption or setting of "
                                     "Veil's enters it beyond the cache geometry, which only chooses which fills are "
                                     "counted, so nothing Veil declares can make it fail; only other programs' "
                                     "data could")]
    ctx.figure(fig, "fv_coverage", caption="Share of the 64-bit words in LLC fills equal to one of the N most "
               "frequent values of the whole run (solid: SPEC-like, dashed: SPLASH-2/PARSEC-like).",
               rows=rows, data=data)
    ctx.table("LLC misses per thousand instructions (no published figure for these inputs)", mpki_rows)

    errors = []
    for name in ("mcf", "mgrid"):
        wd = cache_dir() / "inputs" / name
        inv = get_workload(name).prepare("small", None, wd)
        c = compare(inv.program, list(inv.args), geoms["256k"], wd)
        errors.append(c["ll_miss_error"])
        ctx.metric(f"trace/{name}/cachegrind_ll_miss_error", c["ll_miss_error"])
    ctx.table("The cache model against cachegrind (same program, same geometry)", [
        Row("largest LL-miss difference, mcf and mgrid", max(errors), ref=0.0, tol_abs=0.01,
            source="cachegrind 3.19, same run",
            tol_source="accuracy goal of the cache model: 1% of cachegrind's LL misses", origin="measurement",
            metric="trace/cachegrind_max_miss_error")])
