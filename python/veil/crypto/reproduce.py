"""Report section: throughput of Veil's crypto engines, the limits later systems compare against."""

from __future__ import annotations

import os
import time

from veil import _native
from veil.core import Row, machine_load, median_spread, register_reproducer
from veil.crypto.baseline import cryptography_gbps
from veil.crypto.throughput import unit_of

# AES-GCM per-block times measured on one core of a 2-core x86-64 machine like CI (docs/crypto.md,
# "Reference timings"): 4.2 / 12.8 / 28 us per 4 / 64 / 256 KB block.
ANCHOR_GCM_US = {4096: 4.2, 65536: 12.8, 262144: 28.0}
ANCHOR_SOURCE = "AES-GCM timed on a CI-like machine (docs/crypto.md)"
# Another VM of the same class, with its own neighbours on two shared cores: docs/crypto.md
# records moves of +-30% with other work on the cores; the band allows a bit more.
ANCHOR_TOL = 0.5
HEADLINE_SIZE = 262144
ENGINES_1T = ["aes-128-ctr", "aes-256-ctr", "aes-128-gcm", "aes-256-gcm", "aes-128-ecb", "xts-aes-128-line", "tdes-ecb"]
# Veil's AES engines are meant to match OpenSSL's hardware-AES code (same instructions): parity,
# with a band as wide as the round-to-round spread docs/crypto.md reports on a shared machine.
PARITY_TOL = 0.3


def _known(names: list[str]) -> list[str]:
    from veil.crypto.engines import native_engines

    have = {n for n, _ in native_engines()}
    return [n for n in names if n in have]


def _veil_gbps(engine: str, size: int, secs: float) -> float:
    return float(_native.crypto.throughput(engine, size, 1, secs)["gb_per_s"])


def interleaved_vs_openssl(engines: list[str], size: int, rounds: int, secs: float) -> dict:
    """Veil and OpenSSL measured alternately, round after round, so that both see the same load;
    the order within a round flips each round so neither always runs second."""
    out: dict = {"load_before": machine_load()}
    for e in engines:
        out[e] = {"veil": [], "openssl": [], "ratio": []}
    for r in range(rounds):
        for e in engines:
            pair = {}
            for who in (("veil", "openssl") if r % 2 == 0 else ("openssl", "veil")):
                pair[who] = _veil_gbps(e, size, secs) if who == "veil" else cryptography_gbps(e, size, secs)
            for who in ("veil", "openssl"):
                out[e][who].append(pair[who])
            out[e]["ratio"].append(pair["veil"] / pair["openssl"])
    out["load_after"] = machine_load()
    return out


@register_reproducer("crypto", title="crypto: throughput of Veil's crypto engines", order=10)
def reproduce(ctx) -> None:
    sizes = [16, 256, 4096, 65536, 262144, 1 << 20] if ctx.quick else [16 << (2 * i) for i in range(9)]
    secs = 0.05 if ctx.quick else 0.3
    repeats = 5 if ctx.quick else 9
    engines = _known(ENGINES_1T)
    rows = [{"engine": e, "size": s} for e in engines for s in sizes if s % unit_of(e) == 0]
    res = ctx.run_many("crypto.throughput", {"min_seconds": secs, "threads": 1}, rows)
    by = {(r["engine"], r["size"]): out["gb_per_s"] for r, out in zip(rows, res)}

    # The anchor sizes are timed again here, several times, for a median and a spread.
    load0 = machine_load()
    gcm = {s: median_spread([_veil_gbps("aes-128-gcm", s, secs / 2) for _ in range(repeats)])
           for s in ANCHOR_GCM_US}
    anchor_gbps = {s: s / us / 1e3 for s, us in ANCHOR_GCM_US.items()}

    fig, ax = ctx.subplots(figsize=(10, 5.5))
    data = {}
    for e in engines:
        ok = [s for s in sizes if (e, s) in by]
        ax.plot(ok, [by[(e, s)] for s in ok], marker="o", ms=3, label=e)
        data[e] = {"size_bytes": ok, "gb_per_s": [by[(e, s)] for s in ok], "gb_per_s_lo": [None] * len(ok),
                   "gb_per_s_hi": [None] * len(ok)}
    xs = list(gcm)
    med = [gcm[s][0] for s in xs]
    ax.errorbar(xs, med, yerr=[[m - gcm[s][1][0] for s, m in zip(xs, med)],
                               [gcm[s][1][1] - m for s, m in zip(xs, med)]],
                fmt="D", color="k", mfc="none", ms=7, capsize=4, label=f"aes-128-gcm, median of {repeats} (IQR)")
    ax.plot(list(anchor_gbps), list(anchor_gbps.values()), "*", color="gold", mec="k", ms=14, label=ANCHOR_SOURCE)
    data[f"aes-128-gcm repeated x{repeats}"] = {"size_bytes": xs, "gb_per_s": med,
                                                "gb_per_s_lo": [gcm[s][1][0] for s in xs],
                                                "gb_per_s_hi": [gcm[s][1][1] for s in xs]}
    data[ANCHOR_SOURCE] = {"size_bytes": list(anchor_gbps), "gb_per_s": list(anchor_gbps.values())}
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("GB/s, one thread")
    ax.legend(fontsize=8, ncols=2)
    ax.grid(alpha=0.3)
    gcm_rows = [Row(f"AES-128-GCM, {s // 1024} KB blocks", gcm[s][0], unit="GB/s", ref=anchor_gbps[s],
                    source=ANCHOR_SOURCE, tol=ANCHOR_TOL,
                    tol_source="another VM of the same class; docs/crypto.md: ±30% under shared load",
                    origin="measurement", spread=gcm[s][1], ref_machine="a CI-like VM (docs/crypto.md)",
                    note=f"median and IQR of {repeats} runs; load {load0}")
                for s in ANCHOR_GCM_US]
    ctx.figure(fig, "throughput_vs_size",
               "Single-thread throughput by message size (lines: one short run per point). Open diamonds: "
               f"AES-128-GCM at the anchor sizes, median of {repeats} runs with the IQR as error bars. Stars: "
               "AES-GCM per-block times measured on a CI-like machine (docs/crypto.md); they include a per-call "
               "overhead of a few microseconds, which dominates small blocks.", gcm_rows, data=data)

    threads = list(range(1, (os.cpu_count() or 1) + 1)) if ctx.full else sorted({1, os.cpu_count() or 1})
    scale_engines = _known(["aes-128-ctr", "aes-128-gcm"])
    trow = [{"engine": e, "threads": t} for e in scale_engines for t in threads]
    tres = ctx.run_many("crypto.throughput", {"min_seconds": secs, "size": HEADLINE_SIZE}, trow)
    fig, ax = ctx.subplots(figsize=(8, 4.5))
    tdata = {}
    for e in scale_engines:
        ys = [o["gb_per_s"] for r, o in zip(trow, tres) if r["engine"] == e]
        ax.plot(threads, ys, marker="o", label=e)
        tdata[e] = {"threads": threads, "gb_per_s": ys}
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s, 256 KB messages")
    ax.set_xticks(threads)
    ax.legend()
    ax.grid(alpha=0.3)
    ctx.figure(fig, "throughput_vs_threads", "Throughput by thread count (each thread its own buffer; one "
               f"run per point; {os.cpu_count()} cores on this machine).", data=tdata)

    # The ratio to OpenSSL must come from one run: both measured now, interleaved, never from the store.
    t0 = time.perf_counter()
    cmp = interleaved_vs_openssl(["aes-128-gcm", "aes-128-ctr"], HEADLINE_SIZE, repeats, secs)
    cmp_s = time.perf_counter() - t0
    stats = {e: {k: median_spread(cmp[e][k]) for k in ("veil", "openssl", "ratio")}
             for e in ("aes-128-gcm", "aes-128-ctr")}
    load = f"load (1/5/15 min) {cmp['load_before']} before, {cmp['load_after']} after"
    fig, ax = ctx.subplots(figsize=(8, 4.5))
    cdata = {}
    for e, mk in (("aes-128-gcm", "o"), ("aes-128-ctr", "s")):
        rounds = list(range(1, repeats + 1))
        ax.plot(rounds, cmp[e]["ratio"], mk + "-", label=f"{e.upper()} Veil / OpenSSL")
        cdata[e] = {"round": rounds, "veil_gb_per_s": cmp[e]["veil"], "openssl_gb_per_s": cmp[e]["openssl"],
                    "ratio": cmp[e]["ratio"]}
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="parity")
    ax.axhspan(1 - PARITY_TOL, 1 + PARITY_TOL, color="0.9", zorder=0, label=f"±{PARITY_TOL:.0%} band")
    ax.set_xlabel("round (Veil and OpenSSL measured back to back, order alternating)")
    ax.set_ylabel("Veil / OpenSSL throughput, 256 KB, one thread")
    ax.set_xticks(list(range(1, repeats + 1)))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    note = (f"median and IQR over {repeats} interleaved rounds; {load}; OpenSSL's figure includes Python's "
            "call and a fresh 256 KB output per call, Veil's loop encrypts in place in Rust")
    src = "OpenSSL same run (Python cryptography, interleaved)"
    rows = []
    for e, key in (("aes-128-gcm", "gcm"), ("aes-128-ctr", "ctr")):
        st = stats[e]
        rows += [
            Row(f"{e.upper()} Veil / OpenSSL, 256 KB", st["ratio"][0], unit="x", ref=1.0, source=src,
                tol=PARITY_TOL, tol_source="parity goal; round-to-round spread on 2 shared cores (docs/crypto.md)",
                origin="measurement", spread=st["ratio"][1], note=note,
                metric="crypto/aes_gcm_vs_cryptography" if key == "gcm" else "crypto/aes_ctr_vs_cryptography"),
            Row(f"{e.upper()} Veil, 256 KB", st["veil"][0], unit="GB/s", origin="measurement", spread=st["veil"][1],
                metric=f"crypto/aes_{key}_gbps_1t"),
            Row(f"{e.upper()} OpenSSL, 256 KB", st["openssl"][0], unit="GB/s", origin="measurement",
                spread=st["openssl"][1]),
        ]
    ctx.figure(fig, "vs_openssl",
               f"Veil over OpenSSL (Python cryptography) per round: each round measures both for {secs:g} s, "
               f"back to back, swapping which goes first ({cmp_s:.1f} s in all). The rows give the median and "
               "the interquartile range over rounds; one measurement under load has swung 0.8-2.2x.",
               rows, data=cdata)
    ctx.metric("crypto/aes_gcm_vs_cryptography_iqr", list(stats["aes-128-gcm"]["ratio"][1]))
    ctx.metric("crypto/vs_openssl_rounds", repeats)
    ctx.metric("crypto/vs_openssl_loadavg", cmp["load_before"])

    seeds = [1, 2, 3, 4]
    pads = ctx.run_many("crypto.pad_randomness", {"nbytes": 1 << 20}, [{"seed": s} for s in seeds])
    ctx.grid("AES-CTR pad statistics, 1 MiB per seed (ideal: p uniform in (0,1), ones 0.5, correlation 0)",
             ["seed", "chi-square p", "ones fraction", "serial correlation"],
             [[s, p["chi2_p"], p["ones_fraction"], p["serial_correlation"]] for s, p in zip(seeds, pads)])
    ones_dev = max(abs(p["ones_fraction"] - 0.5) for p in pads)
    # 8 Mi bits per pad: a fair coin's ones fraction has sd 0.5/sqrt(8 Mi) = 1.7e-4; 5 sd bounds it.
    ctx.table("AES-CTR pads against an ideal random source", [
        Row("smallest chi-square p over four seeds", min(p["chi2_p"] for p in pads),
            origin="measurement", note="uniform on (0,1) for an ideal source; four draws",
            metric="crypto/pad_chi2_p_min"),
        Row("largest |ones fraction - 0.5|", ones_dev, ref=0.0, source="analytic (fair coin)",
            tol_abs=5 * 0.5 / (8 * (1 << 20)) ** 0.5, tol_source="5 standard deviations of 8 Mi fair bits",
            origin="arithmetic"),
    ])
    ctx.text("Headline metrics use 256 KB messages on one thread, AES-128 keys. crypto/aes_gcm_vs_cryptography "
             "is the median, over interleaved rounds in this run, of Veil's AES-GCM throughput over OpenSSL's "
             "(through Python cryptography). All timings here come from two cores shared with other work: "
             "treat single points as noisy and read the spreads.")
