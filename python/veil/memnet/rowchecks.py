"""Per-row evaluators of memnet's shape rows (veil.core.rowcheck): each runs only the points its
rows read, through the reproducer's own row builders (so the rows get the report's keys and
labels), and names the assumption value or ablation under which the row fails for a stated
physical reason (docs/memnet.md, "Shapes that can fail")."""

from __future__ import annotations

import statistics

from veil.core.rowcheck import ablation, register_row_check
from veil.memnet import provenance as _provenance  # noqa: F401  (the assumptions the flips name)
from veil.memnet import reproduce_ghost as rg
from veil.memnet import reproduce_memsys as rm

# The quick report's sizes and traces (ctx.quick): its nominal points are the report's own, read
# back from the store where the report ran first, so the nominal values must be the report's.
QUICK = "nothing: the quick report's sizes and traces; only the points the rows read are run"

# Ghost routing's gain is real messages filling its permutation slots instead of dummies: with one
# miss in flight per core nothing is ever queued, so every slot before a message's destination is
# a dummy (the analytic low-load value, secure_model.ghost_dummies_low_load: 36.7 dummies per
# packet on 64 modules, 0.58 of minimal + dummies' extra packets), and the ghosts lose their lead.
ONE_MISS = ablation("one miss in flight per core", {"memnet.memsys.mshrs": 1},
                    what="memory-level parallelism: a core waits for each miss (the declared levels are 8-32 MSHRs)")
# Per-hop AES pays the cipher's latency twice at every off-chip hop; with a cipher of no latency
# it costs what per-hop OTP's XOR costs, or less.
FREE_AES = ablation("an AES engine of no latency", {"memnet.memsys.aes_latency": 0},
                    what="the AES latency (10 cycles) that per-hop AES pays at every hop and per-hop OTP hides")
# Per-hop OTP's cost over source OTP is its XOR stage at every hop.
FREE_XOR = ablation("a per-hop XOR of no latency", {"memnet.memsys.xor_cycles": 0},
                    what="per-hop OTP's XOR stage at each hop (1 cycle), its only cost over source OTP")
# Source OTP costs nothing because pads are precomputed ahead of need; with a one-pad buffer
# refilled at a tenth of the rate, senders wait for pads.
STARVED_PADS = ablation("a one-pad OTP buffer refilled slowly", {"memnet.memsys.otp_depth": 1,
                                                                 "memnet.memsys.aes_blocks_per_cycle": 0.2},
                        what="precomputation: one pad per (source, destination) pair, generated at 0.2 blocks a cycle "
                             "(the declared engine makes 2)")


def _algs(ctx) -> list[str]:
    return rg.available(ctx)


# ---------------------------------------------------------------------------------------------
# Synthetic traffic (16 CPUs, batch mode)

SYN = "memnet/ghost_synthetic/"
SYN_KEYS = [SYN + "uniform_ghost_minimal_speedup_highest_lowest_load",
            SYN + "uniform_ghost_non_minimal_speedup_highest_lowest_load",
            SYN + "hotspot_uniform_ghost_minimal_speedup_at_the_highest_load",
            SYN + "hotspot_uniform_ghost_non_minimal_speedup_at_the_highest_loa",
            SYN + "uniform_highest_load_ghost_non_minimal_speedup_the_best_othe",
            SYN + "hotspot_adaptive_ghost_ghost_minimal_speedup_at_the_highest_"]
HEADLINE = SYN_KEYS[4]


# Ghost non-minimal's lead under uniform load is fragile within the declared ranges: with 4-flit VC
# buffers (a declared level) it falls behind another secure routing (on the traces the same
# buffers make it the fastest: docs/memnet.md, "Headline rows and the assumptions they rest on").
@register_row_check("memnet", "ghost_synthetic_headline", [HEADLINE], reduced=QUICK,
                    flips={HEADLINE: ("memnet.vc_buf_size", 4)}, ablations=[ONE_MISS])
def ghost_synthetic_headline(ctx) -> None:
    """The headline row alone: uniform traffic at the highest load, every secure algorithm (5 of
    the figure's 26 points)."""
    base, pts, keys, _ = rg.synthetic_points(ctx, _algs(ctx))
    top = rg.size(ctx, "gaps")[-1]
    mine = [(k, p) for k, p in zip(keys, pts) if k[0] == "uniform" and k[2] == top]
    r = {k[1]: x for (k, _), x in zip(mine, rg.run(ctx, base, [p for _, p in mine]))}
    md = r["minimal_dummy"]["runtime_cycles"]
    ctx.table("", rg.best_other_rows({a: md / r[a]["runtime_cycles"] for a in rg.SECURE if a in r and a != "minimal_dummy"}),
              name="ghost_synthetic")


# One miss in flight on 4 GHz cores: the lowest load's gap (1,600 instructions, 200 ns) is then
# near a miss's own latency, so load has little room to grow (tried on the rows that grow with load).
ONE_MISS_FAST = ablation("one miss in flight per core on 4 GHz cores", {"memnet.memsys.mshrs": 1,
                                                                        "memnet.memsys.cpu_ghz": 4.0},
                         what="memory-level parallelism, on the fastest declared cores")


# The rows of ghost routing's growth with load and ghost non-minimal's hotspot loss are self-checks:
# nothing tried makes them fail (reproduce_ghost.NOT_FLIPPED); `--search` tries them again.
@register_row_check("memnet", "ghost_synthetic", SYN_KEYS[:4] + SYN_KEYS[5:], reduced=QUICK,
                    flips={SYN_KEYS[2]: ONE_MISS, SYN_KEYS[5]: ONE_MISS}, ablations=[ONE_MISS, ONE_MISS_FAST])
def ghost_synthetic(ctx) -> None:
    """The synthetic figure's points (and the dummies figure's low-load ghost points it draws)."""
    rg.synthetic_section(ctx, _algs(ctx))


# ---------------------------------------------------------------------------------------------
# The trace suite (4 CPUs, one thread each), default dragonfly

TR = "memnet/ghost_traces/"
UT = "memnet/ghost_utilisation/"
TRACE_KEYS = [TR + "memory_intensive_programs_on_which_minimal_dummies_is_the_sl",
              TR + "ghost_minimal_s_extra_packets_minimal_dummies",
              TR + "broadcast_runtime_sequential_runtime",
              UT + "blackscholes_highest_injection_utilisation_of_any_algorithm"]


# With one miss in flight, sequential's tour of every module is a serial latency no parallelism
# hides: it, not minimal + dummies, is the slowest. Faster links (SerDes 1.6 ns, a declared end)
# shorten each miss, so even the compute-bound program keeps minimal + dummies' injection channel
# busy more than half the time. Broadcast / sequential is a self-check (nothing tried flips it).
@register_row_check("memnet", "ghost_traces", TRACE_KEYS, reduced=QUICK,
                    flips={TRACE_KEYS[0]: ONE_MISS, TRACE_KEYS[1]: ONE_MISS, TRACE_KEYS[3]: ("memnet.serdes_ns", 1.6)},
                    ablations=[ONE_MISS])
def ghost_traces(ctx) -> None:
    """The main trace figure's points on the default dragonfly (the topology figure's are not run)."""
    algs = _algs(ctx)
    traces = rg.trace_paths(ctx)
    if not traces:
        raise RuntimeError("the trace suite is not traced here (valgrind and the tracer are needed)")
    names = list(traces)
    secure = [a for a in rg.SECURE if a in algs]
    run_algs = [rg.BASE, *secure]
    res = rg.run(ctx, {}, rg.trace_points(traces, run_algs))
    r = dict(zip([(w, a) for w in names for a in run_algs], res))
    norm = {(w, a): r[(w, a)]["runtime_cycles"] / r[(w, rg.BASE)]["runtime_cycles"] for w in names for a in run_algs}
    slow = {a: rg.gmean(norm[(w, a)] for w in names) for a in run_algs}
    extra = {a: statistics.fmean(rg._f(r[(w, a)], "extra_packets_per_request") for w in names) for a in run_algs}
    ctx.table("", rg.trace_shapes(names, secure, norm, slow, extra), name="ghost_traces")
    rg.utilisation_figure(ctx, names, secure, r)


# ---------------------------------------------------------------------------------------------
# §VII baselines: constant-rate injection against ghost non-minimal

BL = "memnet/ghost_baselines/constant_rate_ghost_non_minimal_runtime_geometric_means"


def _only_for(ctx, alg: str, points: list[dict]) -> list[dict]:
    """`points` with the perturbation's `secure.*` fields applied to `alg`'s points only: the
    other algorithms do not read them, and their configs refuse them."""
    over = ctx.overrides.get(rg.EXP, {})
    own = {k: over.pop(k) for k in [k for k in over if k.startswith("secure.")]}
    return [{**p, **own} if p["injection"] == alg else p for p in points]


SLOW_SLOTS = [ablation(f"constant rate, a packet every {n} cycles", {"memnet.memsys.secure.slot_cycles": n},
                       what=f"back-to-back slots: each node injects one packet every {n} cycles instead of every 5")
              for n in (20, 80)]


# A self-check (reproduce_ghost.baseline_shapes): its evaluator stays so `--search` can try it again.
@register_row_check("memnet", "ghost_baselines", [BL], reduced=QUICK, flips={}, ablations=[ONE_MISS, *SLOW_SLOTS])
def ghost_baselines(ctx) -> None:
    """Minimal, constant rate and ghost non-minimal on the baseline figure's traces (the network
    ORAM's row fails as it stands, so its trace is not made)."""
    algs = _algs(ctx)
    traces = rg.trace_paths(ctx)
    names = [w for w in traces if w != rg.COMPUTE_INTENSIVE][:rg.size(ctx, "oram_traces")]
    run_algs = [a for a in [rg.BASE, "constant_rate", "ghost_nonminimal"] if a in algs]
    res = rg.run(ctx, {}, _only_for(ctx, "constant_rate", rg.baseline_rows(ctx, algs, traces)))
    r = dict(zip([(w, a) for w in names for a in run_algs], res))
    g = {a: rg.gmean(r[(w, a)]["runtime_cycles"] / r[(w, rg.BASE)]["runtime_cycles"] for w in names)
         for a in run_algs}
    ctx.table("", rg.baseline_shapes(g), name="ghost_baselines")


# ---------------------------------------------------------------------------------------------
# The packet-encryption microarchitectures

ENC_ROWS = ["per_hop_aes_per_hop_otp_mean_runtime", "per_hop_otp_source_otp_mean_runtime", "source_otp_mean_runtime_none"]


def _enc_flips(block: str) -> dict:
    # Per-hop OTP / source OTP: with the per-hop XOR free it is 1.00007 (synthetic) and 1.0000 (traces),
    # so the XOR is all of per-hop OTP's cost and "> 1" then holds on a schedule's noise. Its flip
    # is pad starvation: only source OTP draws its pads from the per-pair buffer (the model gives
    # per-hop OTP its link pads ready), so starved, source OTP is the slower one.
    k = [f"memnet/{block}/{r}" for r in ENC_ROWS]
    return {k[0]: FREE_AES, k[1]: STARVED_PADS, k[2]: STARVED_PADS}


@register_row_check("memnet", "encryption_synthetic", [f"memnet/encryption_runtime/{r}" for r in ENC_ROWS],
                    reduced=QUICK, flips=_enc_flips("encryption_runtime"),
                    ablations=[FREE_AES, FREE_XOR, STARVED_PADS])
def encryption_synthetic(ctx) -> None:
    """The four synthetic workloads under the four microarchitectures."""
    rm.encryption_section(ctx, "synthetic")


@register_row_check("memnet", "encryption_traces", [f"memnet/encryption_runtime_traces/{r}" for r in ENC_ROWS],
                    reduced=QUICK, flips=_enc_flips("encryption_runtime_traces"),
                    ablations=[FREE_AES, FREE_XOR, STARVED_PADS])
def encryption_traces(ctx) -> None:
    """The traced programs under the four microarchitectures."""
    if not rm.trace_section(ctx):
        raise RuntimeError("the trace suite is not traced here (valgrind and the tracer are needed)")
