"""Report section: throughput of Veil's crypto engines, the limits later systems compare against."""

from __future__ import annotations

import os

from veil import _native
from veil.core import register_reproducer
from veil.crypto.baseline import cryptography_gbps
from veil.crypto.throughput import unit_of

# Measured anchors in shared/papers/README.md (oram section): AES-GCM on one core of a
# 2-core x86-64 machine like CI took 4.2 / 12.8 / 28 us per 4 / 64 / 256 KB block.
ANCHOR_GCM_US = {4096: 4.2, 65536: 12.8, 262144: 28.0}
HEADLINE_SIZE = 262144
ENGINES_1T = ["aes-128-ctr", "aes-256-ctr", "aes-128-gcm", "aes-256-gcm", "aes-128-ecb", "xts-aes-128-line", "tdes-ecb"]


def _known(names: list[str]) -> list[str]:
    from veil.crypto.engines import native_engines

    have = {n for n, _ in native_engines()}
    return [n for n in names if n in have]


@register_reproducer("crypto", title="crypto: throughput of Veil's crypto engines", order=10)
def reproduce(ctx) -> None:
    sizes = [16, 256, 4096, 65536, 262144, 1 << 20] if ctx.quick else [16 << (2 * i) for i in range(9)]
    secs = 0.05 if ctx.quick else 0.3
    engines = _known(ENGINES_1T)
    rows = [{"engine": e, "size": s} for e in engines for s in sizes if s % unit_of(e) == 0]
    res = ctx.run_many("crypto.throughput", {"min_seconds": secs, "threads": 1}, rows)
    by = {(r["engine"], r["size"]): out["gb_per_s"] for r, out in zip(rows, res)}

    fig, ax = ctx.subplots()
    for e in engines:
        ok = [s for s in sizes if (e, s) in by]
        ax.plot(ok, [by[(e, s)] for s in ok], marker="o", ms=3, label=e)
    ax.plot(list(ANCHOR_GCM_US), [s / us / 1e3 for s, us in ANCHOR_GCM_US.items()], "k*", ms=10,
            label="AES-GCM, measured anchor")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("GB/s, one thread")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    gcm_rows = [(f"AES-GCM {s // 1024} KB", s / us / 1e3, by.get(("aes-128-gcm", s)), "GB/s")
                for s, us in ANCHOR_GCM_US.items() if ("aes-128-gcm", s) in by]
    ctx.figure(fig, "throughput_vs_size",
               "Single-thread throughput by message size. Stars: AES-GCM per-block times measured on a "
               "CI-like machine (shared/papers/README.md); they include a per-call overhead of a few "
               "microseconds, which dominates small blocks.", gcm_rows)

    threads = list(range(1, (os.cpu_count() or 1) + 1)) if ctx.full else sorted({1, os.cpu_count() or 1})
    scale_engines = _known(["aes-128-ctr", "aes-128-gcm"])
    trow = [{"engine": e, "threads": t} for e in scale_engines for t in threads]
    tres = ctx.run_many("crypto.throughput", {"min_seconds": secs, "size": HEADLINE_SIZE}, trow)
    fig, ax = ctx.subplots()
    for e in scale_engines:
        ax.plot(threads, [o["gb_per_s"] for r, o in zip(trow, tres) if r["engine"] == e], marker="o", label=e)
    ax.set_xlabel("threads")
    ax.set_ylabel("GB/s, 256 KB messages")
    ax.set_xticks(threads)
    ax.legend()
    ax.grid(alpha=0.3)
    ctx.figure(fig, "throughput_vs_threads", "Throughput by thread count (each thread its own buffer).")

    # The ratio to OpenSSL must come from one run: measure both now, never from the store.
    ours = float(_native.crypto.throughput("aes-128-gcm", HEADLINE_SIZE, 1, secs * 4)["gb_per_s"])
    theirs = cryptography_gbps("aes-128-gcm", HEADLINE_SIZE, secs * 4)
    ctr_ours = float(_native.crypto.throughput("aes-128-ctr", HEADLINE_SIZE, 1, secs * 4)["gb_per_s"])
    ctr_theirs = cryptography_gbps("aes-128-ctr", HEADLINE_SIZE, secs * 4)
    ctx.table("Same-run comparison with Python cryptography (OpenSSL), 256 KB, one thread ('paper' = OpenSSL)",
              [("AES-128-GCM", theirs, ours, "GB/s"), ("AES-128-CTR", ctr_theirs, ctr_ours, "GB/s")])
    # Headlines from the longer same-run measurement, not the short sweep points.
    ctx.metric("crypto/aes_ctr_gbps_1t", ctr_ours)
    ctx.metric("crypto/aes_gcm_gbps_1t", ours)
    ctx.metric("crypto/aes_gcm_vs_cryptography", ours / theirs)

    seeds = [1, 2, 3, 4]
    pads = ctx.run_many("crypto.pad_randomness", {"nbytes": 1 << 20}, [{"seed": s} for s in seeds])
    ctx.grid("AES-CTR pad statistics, 1 MiB per seed (ideal: p uniform in (0,1), ones 0.5, correlation 0)",
             ["seed", "chi-square p", "ones fraction", "serial correlation"],
             [[s, p["chi2_p"], p["ones_fraction"], p["serial_correlation"]] for s, p in zip(seeds, pads)])
    ctx.metric("crypto/pad_chi2_p_min", min(p["chi2_p"] for p in pads))
    ctx.text("Headline metrics use 256 KB messages on one thread, AES-128 keys. crypto/aes_gcm_vs_cryptography "
             "is Veil's AES-GCM over OpenSSL's (through Python cryptography), both measured in this run.")
