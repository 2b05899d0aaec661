"""Per-row evaluators of memcrypt's shape rows (veil.core.rowcheck): each runs only the variants its
row reads, at the quick report's record counts on the report's workloads (so its nominal points are
the report's own, read back from the store, and its value must be the report's), and names the
perturbation or ablation under which the row fails (docs/memcrypt.md, Shapes that can fail)."""

from __future__ import annotations

import statistics

from veil.core.rowcheck import ablation, register_row_check
from veil.memcrypt import provenance as _provenance  # noqa: F401  (the assumptions the flips name)
from veil.memcrypt.reproduce import VARIANTS, ZERO_CRYPTO, Shape, _Runs, min_gain_kept_row, row, run_length
from veil.memcrypt.workloads import reproducer_workloads

RECORDS = run_length(quick=True)
REDUCED = (f"nothing: the quick report's sizes ({RECORDS['max_records']:,} timed records after "
           f"{RECORDS['warmup_records']:,} of warm-up) on its workloads; only the variants the row reads are run")

# Speculation hides crypto latency: with none to hide, a claim of a gain has nothing to measure.
FREE_CRYPTO = ablation("free cryptography", {f"memcrypt.run.{k}": v for k, v in ZERO_CRYPTO.items()},
                       what="every cipher latency and CAM compare zero: the latency speculation hides is gone")
# Only AES has latency to hide: TDES free and AES's bitmaps carried with its MACs (no bitmap lines).
ONLY_AES_HIDES = ablation("TDES free, AES bitmaps inline", {"memcrypt.run.tdes_latency_ns": 0.0,
                                                           "memcrypt.run.bitmap_fetch": "inline"},
                          what="TDES's latency (nothing left for its speculation to hide) and AES's bitmap lines")
# One frequent value (the FVT holds only its most frequent word): nothing for re-ordering to pair.
ONE_VALUE = ablation("an FVT of one value", {"memcrypt.run.fvt_size": 1},
                     what="the FVT's other frequent values: every predictable chunk is the one most frequent word")
TRIED = [FREE_CRYPTO, ONLY_AES_HIDES, ONE_VALUE]


def _runs(ctx, variants: list[str]) -> _Runs:
    workloads, _ = reproducer_workloads()
    pairs = [(w, v) for w in workloads for v in variants]
    res = ctx.run_many("memcrypt.run", {}, [{"workload": w, **RECORDS, "l2_kb": VARIANTS[v][1], **VARIANTS[v][0]}
                                            for w, v in pairs])
    return _Runs(workloads, dict(zip(pairs, res)))


def _check(name: str, block: str, key: str, variants: list[str], flip, build) -> None:
    """One shape row's evaluator: `build(R)` gives the row (its label as the report's), in the
    report's block `block` ("memcrypt/<block>")."""
    @register_row_check("memcrypt", name, [key], reduced=REDUCED, flips={key: flip}, ablations=TRIED)
    def check(ctx) -> None:
        ctx.table("", [build(_runs(ctx, variants))], name=block.split("/", 1)[1])


FIG7 = "memcrypt/fig7_direct_speedup"


def _mem_minus_compute(R: _Runs):
    order = sorted(R.workloads, key=lambda w: 1 - R.by[(w, "plain")]["ipc"] / 2.0)
    return row("TDES speedup, most memory-bound minus least memory-bound workload",
               R.sp(order[-1], "tdes_direct_256k") - R.sp(order[0], "tdes_direct_256k"), unit="fraction",
               shape=Shape(">", 0.0), source="paper §6.2 (10-30% for memory-bound, little for compute-bound)")


_check("tdes_memory_bound_gains_more", FIG7, FIG7 + "/tdes_speedup_most_memory_bound_minus_least_memory_bou*",
       ["plain", "tdes_base", "tdes_spec"], FREE_CRYPTO, _mem_minus_compute)
_check("tdes_beats_aes", FIG7, FIG7 + "/tdes_beats_aes", ["tdes_base", "tdes_spec", "aes_base", "aes_spec"],
       ONLY_AES_HIDES,
       lambda R: row("workloads on which TDES (64-bit) gains more than AES (128-bit)",
                     R.beats("tdes_direct_256k", "aes_direct_256k"), unit=f"of {len(R.workloads)}",
                     shape=Shape(">=", R.most), source="paper §6.2", key=FIG7 + "/tdes_beats_aes"))
# Gains from hiding latency shrink with a larger L2 (fewer misses to hide): with nothing to hide the
# difference is 0 exactly. Until traces stopped depending on the cache's path (docs/trace.md), free
# cryptography left it below 0 on some tracings, and the flip was the L2 ablation (zero by
# construction); on 29 Nov 2026 it gave -0.0092 nominal and 0.0 with free cryptography.
_check("tdes_gains_shrink_with_l2", FIG7, FIG7 + "/mean_speedup_at_1_mb_minus_at_256_kb_tdes*",
       ["tdes_base", "tdes_spec", "tdes_base_1m", "tdes_spec_1m"], FREE_CRYPTO,
       lambda R: row("mean speedup at 1 MB minus at 256 KB (TDES)", R.mean("tdes_direct_1m") - R.mean("tdes_direct_256k"),
                     unit="fraction", shape=Shape("<", 0.0), source="paper §6.2: gains shrink with a larger L2"))
def _fig6(R: _Runs):
    by, ws = R.by, R.workloads
    nat = [by[(w, "aes_spec")]["paired_share_natural"] for w in ws]
    n_freq = max(sum(by[(w, "aes_spec")]["frequent_words"] for w in ws), 1)
    share = sum(by[(w, "aes_spec")]["frequent_words_paired_reordered"] for w in ws) / n_freq
    return row("frequent chunks predictable without re-ordering (mean) / with the stored bitmap",
               statistics.fmean(nat) / share if share else None, unit="x", shape=Shape("<", 1.0),
               source="paper §6.1: 'few' without re-ordering")


_check("reordering_pairs_more", "memcrypt/fig6_reordering",
       "memcrypt/fig6_reordering/frequent_chunks_predictable_without_re_ordering_mean_with_th*", ["aes_spec"],
       ONE_VALUE, _fig6)


# Adaptive re-ordering's whole point on random data: turned off (re-ordering on every page, the
# paper's scheme) it pays for bitmap lines that pair nothing (-18% on the synthetic random stream).
ALWAYS = ablation("re-ordering on every page", {"memcrypt.run.reorder_policy": "always"},
                  what="adaptive re-ordering's stop: every page re-orders and reads its bitmap line, as in the paper")
EXTREME_RECORDS = run_length(quick=True, extreme=True)


@register_row_check("memcrypt", "adaptive_costs_nothing_on_random_data",
                    ["memcrypt/adaptive/random_cost_vs_no_reorder"],
                    reduced="nothing: the quick report's synthetic random stream and record counts; only the two "
                            "variants the row compares are run",
                    flips={"memcrypt/adaptive/random_cost_vs_no_reorder": ALWAYS},
                    ablations=[ALWAYS, FREE_CRYPTO])
def adaptive_costs_nothing_on_random_data(ctx) -> None:
    pair = ("aes_adaptive", "aes_norder")
    res = ctx.run_many("memcrypt.run", {}, [{"workload": "synthetic-random", **EXTREME_RECORDS, **VARIANTS[v][0]}
                                            for v in pair])
    ctx.table("", [row("adaptive re-ordering's cost against speculation without re-ordering, random data",
                       res[0]["ipc"] / res[1]["ipc"] - 1, unit="fraction", shape=Shape(">", -0.01),
                       source="target set beyond the paper (under 1% cost)",
                       metric="memcrypt/adaptive/random_cost_vs_no_reorder")], name="adaptive")


# Adaptive re-ordering keeps the paper's gain where values are frequent (python) only with a window
# long enough not to flap: at the shortest declared window (8 fills) python's pages stop and resume
# over a thousand times, each stop rewriting the page's re-ordered lines (python -0.4%, 29 Nov).
SHORT_WINDOW = ("memcrypt.adaptive_window", 8)


@register_row_check("memcrypt", "adaptive_keeps_the_gain", ["memcrypt/adaptive/min_gain_kept"],
                    reduced="nothing: the quick report's sizes on its workloads and the synthetic all-zero stream; "
                            "only the three variants the row reads are run",
                    flips={"memcrypt/adaptive/min_gain_kept": SHORT_WINDOW}, ablations=[FREE_CRYPTO])
def adaptive_keeps_the_gain(ctx) -> None:
    variants = ["aes_base", "aes_spec", "aes_adaptive"]
    R = _runs(ctx, variants)
    res = ctx.run_many("memcrypt.run", {}, [{"workload": "synthetic-zero", **EXTREME_RECORDS, **VARIANTS[v][0]}
                                            for v in variants])
    R.by.update({("synthetic-zero", v): r for v, r in zip(variants, res)})
    ctx.table("", [min_gain_kept_row(R, R.workloads + ["synthetic-zero"])], name="adaptive")
