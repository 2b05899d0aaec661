"""memnet's shape rows can fail: the headline rows' evaluators (python/veil/memnet/rowchecks.py, the
quick report's points) give each row holding at the nominal values and failing under its declared
ablation; every holding shape row of the encryption figures has an evaluator. The rest of the
evaluators (the synthetic figure's other rows, the encryption figures) run behind
`python -m veil.core.rowcheck memnet` (docs/memnet.md, "Shapes that can fail")."""

import pytest

from conftest import assert_shapes_covered, assert_shapes_falsifiable

ONE_MISS = "ablation 'one miss in flight per core'"


@pytest.mark.slow
def test_headline_shapes_fail_under_their_declared_perturbations(tmp_path):
    flipped = assert_shapes_falsifiable("memnet", tmp_path / "store.sqlite",
                                        checks={"ghost_synthetic_headline", "ghost_traces"})
    # ghost routing's gain is queued real messages filling its slots: with one miss in flight per
    # core, ghost minimal sends about the analytic low-load dummies (0.58 of minimal + dummies')
    assert flipped["memnet/ghost_traces/ghost_minimal_s_extra_packets_minimal_dummies"].startswith(ONE_MISS)
    # ghost non-minimal's lead under uniform load is lost at a declared level of the router buffers
    assert flipped["memnet/ghost_synthetic/uniform_highest_load_ghost_non_minimal_speedup_the_best_othe"] == \
        "memnet.vc_buf_size = 4"


def test_the_encryption_figures_holding_shapes_have_evaluators(tmp_path):
    from veil.core.explain import ExplainContext
    from veil.core.report import Section
    from veil.memnet import reproduce_memsys as rm

    sec = Section("memnet", "test")
    ctx = ExplainContext(sec, tmp_path, None, True, 1, None, {}, None, True)
    # made-up runtimes in the paper's order: every shape of the figure holds
    cost = {"none": 100, "source_otp": 100.5, "per_hop_otp": 110, "per_hop_aes": 150}
    runtime = {(w, u): cost[u] for w in ("a", "b") for u in rm.UARCHS}
    for block, key in (("encryption_runtime", "synthetic"), ("encryption_runtime_traces", "encryption")):
        rm._uarch_figure(ctx, ["a", "b"], runtime, block, "", key, "workloads")
    refs = {k: {"shape": r.shape.text(), "verdict": r.outcome} for k, r in ctx.taken.items() if r.shape is not None}
    assert len(refs) == 6 and {r["verdict"] for r in refs.values()} == {"holds"}
    assert_shapes_covered("memnet", refs)
