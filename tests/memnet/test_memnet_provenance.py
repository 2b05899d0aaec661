"""memnet registers the choice it made while looking at results: the hotspot row is calibrated."""

from veil.core.provenance import derive_basis


def test_adaptive_ghost_weight_rule_makes_the_hotspot_row_calibrated():
    import veil.memnet  # noqa: F401  (registers its provenance)

    key = "memnet/ghost_synthetic/hotspot_adaptive_ghost_ghost_minimal_speedup_at_the_highest_"
    basis, under = derive_basis(key, "model", [key])
    assert basis == "calibrated" and [c.name for c in under] == ["adaptive_ghost_weight_rule"]
    other = "memnet/ghost_synthetic/uniform_highest_load_ghost_non_minimal_speedup_the_best_other"
    assert derive_basis(other, "model", [key, other])[0] == "predicted", "its value does not depend on the rule"
