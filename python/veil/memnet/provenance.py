"""memnet's choices made while looking at results, declared once: the report derives the rows'
basis from them (veil.core.provenance)."""

from veil.core import record_explained, register_assumption, register_constant, register_headlines

# Adaptive ghost's weight rule (each declared hot module weighted by its declared traffic share,
# secure_model.adaptive_hot_weight) replaced a fixed weight after the fixed weight lost the
# hotspot shape row it now passes.
register_constant(
    "memnet", "adaptive_ghost_weight_rule", targets=["memnet/ghost_synthetic/hotspot_adaptive_ghost*"],
    applies=["memnet/ghost_synthetic/hotspot_adaptive_ghost*"],
    how="hand choice among weight rules (a fixed weight, then the declared traffic share) after seeing the "
        "hotspot speedup row", when="2026-11-22",
    why="w = f (N - H) / (H (1 - f)): a hot module's share of a round's slots equals its declared traffic share")

# The claims the paper's abstract and conclusion rest on: ghost routing keeps the oblivious
# routings' guarantee at the lowest performance overhead of the secure routings (across programs,
# topologies and loads), by replacing most dummy packets with real ones, and far below a network
# ORAM or constant-rate injection.
register_headlines("memnet", ["memnet/ghost_traces/ghost_non_minimal_runtime_the_lowest_other_secure_algorithm_",
                              "memnet/ghost_traces/ghost_minimal_s_extra_packets_minimal_dummies",
                              "memnet/ghost_topologies/topologies_on_which_ghost_non_minimal_has_the_lowest_overhea",
                              "memnet/ghost_synthetic/uniform_highest_load_ghost_non_minimal_speedup_the_best_othe",
                              "memnet/ghost_baselines/*_ghost_non_minimal_runtime_geometric_means"],
                   source="paper abstract and §VIII (conclusion); §VII for the baselines")

# Assumptions with declared ranges that the headline rows depend on (`veil explain` moves them;
# docs/memnet.md, "Headline rows and the assumptions they rest on"). The paper does not give its
# own values for these.
_MEMSYS_ROWS = ["memnet/ghost_*"]
register_assumption(
    "memnet", "serdes_ns", value=3.2, lo=1.6, hi=6.4, unit="ns", knobs=["memnet.memsys.serdes_ns"],
    applies=_MEMSYS_ROWS, what="SerDes latency of an off-chip link (both ends)",
    source="the paper does not give its value; Kim et al. (PACT 2013, the memory-centric network the paper builds "
           "on) model SerDes as a fixed per-link latency; half to twice Veil's 3.2 ns (four network cycles) is "
           "Veil's bracket")
register_assumption(
    "memnet", "cpu_ghz", value=2.0, lo=1.5, hi=4.0, unit="GHz", knobs=["memnet.memsys.cpu_ghz"],
    applies=_MEMSYS_ROWS, what="core clock (the network runs at the HMC's 1.25 GHz): how fast cores make misses",
    source="server cores of the paper's era run at 1.5-4 GHz (base to turbo); Veil's 2 GHz is chosen")
register_assumption(
    "memnet", "mshrs", value=16, levels=(8, 16, 32), knobs=["memnet.memsys.mshrs"], applies=_MEMSYS_ROWS,
    what="outstanding misses per core (memory-level parallelism offered to the network)",
    source="gem5's classic caches use 4-20 MSHRs per cache; Intel cores of the era track 10-16 L1D misses and "
           "up to 32 at L2: levels 8, 16, 32")
register_assumption(
    "memnet", "vc_buf_size", value=8, levels=(4, 8, 16), knobs=["memnet.memsys.vc_buf_size"], applies=_MEMSYS_ROWS,
    what="flit buffers per virtual channel in each memory module's router",
    source="BookSim2's default (vc_buf_size = 8), which the validated router follows; the paper does not "
           "give its router buffers; half to twice that are Veil's levels")
register_assumption(
    "memnet", "global_latency", value=1, lo=1, hi=8, unit="cycles", knobs=["memnet.memsys.global_latency"],
    applies=_MEMSYS_ROWS, what="wire latency of a dragonfly's global links (between groups of cubes)",
    source="cubes sit on one board: a global link is a board trace of a few ns beside the SerDes already "
           "counted; 8 cycles (6.4 ns) is about a meter of trace, beyond a board")
# Not assumptions of these rows: the OTP buffer depth and AES latency. The ghost sections run
# without packet encryption (the encryption microarchitectures are their own section, compared on
# the non-secure routing), so neither enters them (tests/memnet/test_memnet_provenance.py).

# `veil explain` answers measured on earlier code (docs/memnet.md, "`veil explain` on the failing headline row").
record_explained("memnet/ghost_traces/ghost_non_minimal_runtime_the_lowest_other_secure_algorithm_",
                 "holds if memnet.vc_buf_size = 4 (5 assumptions at their range ends; the joint design not run)",
                 robust=False, at="veil 0.1.0+cc7c9df4e3", date="2026-11-29",
                 command="veil explain memnet/ghost_traces/ghost_non_minimal_runtime_the_lowest_other_secure_algorithm_ "
                         "--samples 0 --levels 2 --jobs 2")
