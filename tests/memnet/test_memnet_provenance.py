"""memnet registers the choice it made while looking at results: the hotspot row is calibrated."""

from veil.core.provenance import derive_basis


def test_adaptive_ghost_weight_rule_makes_the_hotspot_row_calibrated():
    import veil.memnet  # noqa: F401  (registers its provenance)

    key = "memnet/ghost_synthetic/hotspot_adaptive_ghost_ghost_minimal_speedup_at_the_highest_"
    basis, under = derive_basis(key, "model", [key])
    assert basis == "calibrated" and [c.name for c in under] == ["adaptive_ghost_weight_rule"]
    other = "memnet/ghost_synthetic/uniform_highest_load_ghost_non_minimal_speedup_the_best_other"
    assert derive_basis(other, "model", [key, other])[0] == "predicted", "its value does not depend on the rule"


def test_every_assumption_moves_the_simulation_through_its_knob():
    # A knob that names no field, or a field the simulation ignores, would make `veil explain`
    # report a row as robust to an assumption it never moved. Each assumption's ends of range,
    # written through its knobs, must change a small ghost-minimal run (the headline rows'
    # setting: no packet encryption) - in the direction the assumption says where it says one.
    import veil.memnet  # noqa: F401
    from veil.core.explain import overrides_for
    from veil.core.provenance import PROVENANCE
    from veil.core.runner import compute

    mine = {n: a for n, a in PROVENANCE.assumptions.items() if a.system == "memnet"}
    assert set(mine) == {"memnet.serdes_ns", "memnet.cpu_ghz", "memnet.mshrs", "memnet.vc_buf_size",
                         "memnet.global_latency"}
    base = {"requests_per_cpu": 120, "injection": "ghost_minimal"}

    def runtime(name, value):
        over = overrides_for({name: value})["memnet.memsys"]
        return compute("memnet.memsys", {**base, **over})[0]["runtime_ns"]

    ends = {}
    for name, a in mine.items():
        lo, hi = (a.levels[0], a.levels[-1]) if a.levels else (a.lo, a.hi)
        ends[name] = (runtime(name, lo), runtime(name, hi))
        assert ends[name][0] != ends[name][1], name
    assert ends["memnet.serdes_ns"][1] > ends["memnet.serdes_ns"][0]  # slower links, longer run
    assert ends["memnet.cpu_ghz"][1] < ends["memnet.cpu_ghz"][0]  # faster cores finish sooner
    assert ends["memnet.vc_buf_size"][1] < ends["memnet.vc_buf_size"][0]  # deeper buffers, fewer stalls
    # and the two left out, the OTP buffer depth and AES latency: the ghost sections run without
    # packet encryption (the default), so neither enters their rows
    import inspect

    from veil.memnet import reproduce_ghost
    from veil.memnet.memsys import MemSysConfig

    assert MemSysConfig().encryption == "none" and "encryption" not in inspect.getsource(reproduce_ghost)
