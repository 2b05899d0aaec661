"""he's shape rows: Fig. 13's ordering of VGG16 over SqueezeNet is arithmetic on the networks'
layer shapes that no declared assumption moves, so it is a self-check, never a "holds"; with
TACO's design-space count (a self-check too) he has no shape that holds, so no per-row
evaluator is owed (tests/conftest.py::assert_shapes_covered)."""

from conftest import assert_shapes_covered
from veil.core.report import ReproduceContext, Section
from veil.core.store import ResultStore
from veil.he import reproduce as he_reproduce


def test_fig13_is_a_self_check_not_a_holds(tmp_path):
    with ResultStore(tmp_path / "store.sqlite") as store:
        sec = Section("he", "test")
        he_reproduce._fig13(ReproduceContext(sec, tmp_path / "out", store, quick=True, jobs=1))
    (r,) = [r for r in sec.rows if r.shape is not None]
    assert r.outcome == "self-check" and r.basis == "computed" and r.value > 1.0
    refs = {r.key: {"shape": r.shape.text(), "verdict": r.outcome}}
    assert_shapes_covered("he", refs)   # nothing that holds goes without an evaluator
