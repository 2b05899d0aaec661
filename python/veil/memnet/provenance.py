"""memnet's choices made while looking at results, declared once: the report derives the rows'
basis from them (veil.core.provenance)."""

from veil.core import register_constant

# Adaptive ghost's weight rule (each declared hot module weighted by its declared traffic share,
# secure_model.adaptive_hot_weight) replaced a fixed weight after the fixed weight lost the
# hotspot shape row it now passes.
register_constant(
    "memnet", "adaptive_ghost_weight_rule", targets=["memnet/ghost_synthetic/hotspot_adaptive_ghost*"],
    applies=["memnet/ghost_synthetic/hotspot_adaptive_ghost*"],
    how="hand choice among weight rules (a fixed weight, then the declared traffic share) after seeing the "
        "hotspot speedup row", when="2026-11-22",
    why="w = f (N - H) / (H (1 - f)): a hot module's share of a round's slots equals its declared traffic share")
