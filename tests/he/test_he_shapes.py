"""he's shape rows: Fig. 13's ordering of VGG16 over SqueezeNet is arithmetic on the networks'
layer shapes that no declared assumption moves, so it is a self-check, never a "holds"; with
TACO's design-space count and its time over the number of primes (self-checks too) he has no shape that holds, so no per-row
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


def test_taco_time_over_primes_is_a_self_check_not_a_prediction(tmp_path):
    """TACO's time at (8192, 5) over (8192, 3) is 1 because the design evaluated at each set has one
    lane per prime: it cannot miss, so it must not be counted as a prediction within its band."""
    from veil.he.taco import report as taco_report
    with ResultStore(tmp_path / "store.sqlite") as store:
        sec = Section("he", "test")
        taco_report._fig9(ReproduceContext(sec, tmp_path / "out", store, quick=True, jobs=1))
    (r,) = [r for r in sec.rows if r.label.startswith("TACO time (8192, 5)")]
    assert r.ref is None and r.shape is not None and r.outcome == "self-check"
    assert abs(r.value - 1.0) < 0.05
    shaped = {r.label: {"shape": r.shape.text(), "verdict": r.outcome} for r in sec.rows if r.shape is not None}
    assert_shapes_covered("he", shaped)
