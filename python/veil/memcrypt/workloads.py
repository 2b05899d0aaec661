"""Where a workload's L2 miss trace comes from.

Real programs come from the trace foundation (`veil.trace.ensure_trace`): each SPEC-like
workload of its suite is run under the tracing tool with the paper's Table 2 caches (8 KB
direct-mapped L1, 4-way L2 of 256 KB or 1 MB, 64-byte lines) and cached. Synthetic workloads
(`synthetic-*`) are seeded generators of this crate with stated value and access statistics; they
are not programs and the report says so wherever they are used.
"""

from __future__ import annotations

from typing import Any

from veil.core import ConfigError

# Synthetic streams: (doc, generator parameters). Footprints in 64-byte lines; the L2 size sets
# the generator's cache capacity, so a bigger L2 misses less.
SYNTHETIC: dict[str, tuple[str, dict[str, Any]]] = {
    "synthetic-stream": ("sequential sweeps over 8 MB, half the words zero (array code)",
                         {"footprint_lines": 1 << 17, "insts_per_access": 30, "p_zero": 0.5, "p_small": 0.2,
                          "run_lines": 64, "store_share": 0.3}),
    "synthetic-pointer": ("random lines over 4 MB, a quarter of the words zero (pointer chasing)",
                          {"footprint_lines": 1 << 16, "insts_per_access": 40, "p_zero": 0.25, "p_small": 0.15,
                           "run_lines": 2, "store_share": 0.2}),
    "synthetic-compute": ("few misses over 1.5 MB, little value locality (compute bound)",
                          {"footprint_lines": 24576, "insts_per_access": 600, "p_zero": 0.15, "p_small": 0.05,
                           "run_lines": 8, "store_share": 0.3}),
    # The two extremes of value locality, for adaptive re-ordering: the access pattern of a
    # program doing random read-modify-writes over a 32 MB array (almost every fill misses the
    # TLB), with every word random or every word zero.
    "synthetic-random": ("random lines over 32 MB, every word random (no value locality)",
                         {"footprint_lines": 1 << 19, "insts_per_access": 25, "p_zero": 0.0, "p_small": 0.0,
                          "run_lines": 1, "store_share": 0.5}),
    "synthetic-zero": ("random lines over 32 MB, every word zero (all value locality)",
                       {"footprint_lines": 1 << 19, "insts_per_access": 25, "p_zero": 1.0, "p_small": 0.0,
                        "run_lines": 1, "store_share": 0.5}),
}
# The synthetic streams the reproducer falls back to without the trace suite (the extremes are
# run for adaptive re-ordering only).
FALLBACK = ("synthetic-compute", "synthetic-pointer", "synthetic-stream")


def _suite() -> dict[str, Any]:
    try:
        from veil.trace.workloads import WORKLOADS
    except ImportError:
        return {}
    return {n: w for n, w in WORKLOADS.items() if getattr(w, "family", "") == "spec"}


def traced_workloads() -> list[str]:
    """The SPEC-like workloads of the trace suite (empty when the trace foundation is absent)."""
    return sorted(_suite())


def known_workloads() -> list[str]:
    return traced_workloads() + sorted(SYNTHETIC)


def reproducer_workloads() -> tuple[list[str], bool]:
    """(workloads, real): the traced SPEC-like suite when it is there, else the synthetic set."""
    t = traced_workloads()
    return (t, True) if t else (list(FALLBACK), False)


def trace_input(workload: str, l2_kb: int, records: int, seed: int) -> dict[str, Any]:
    """The `trace` or `synth` part of a native run."""
    if workload in SYNTHETIC:
        p = dict(SYNTHETIC[workload][1])
        p.update(records=records, cache_lines=l2_kb * 1024 // 64, seed=seed)
        return {"synth": p}
    if workload in _suite():
        from veil.trace import ensure_trace

        path = ensure_trace(workload, llc_bytes=l2_kb * 1024, llc_assoc=4, l1_bytes=8 * 1024, l1_assoc=1, line_size=64)
        return {"trace": str(path)}
    raise ConfigError(f"workload: unknown workload '{workload}' (known: {', '.join(known_workloads())})")
