"""`veil explain`: known answers on a toy system whose row is linear in its assumptions."""

from __future__ import annotations

import math

import pytest

from conftest import assert_shapes_falsifiable, one_line_error
from veil.core.errors import ConfigError
from veil.core.provenance import PROVENANCE, register_assumption
from veil.core.store import ResultStore


@pytest.fixture
def store(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as st:
        yield st


def test_flip_point_of_a_linear_row_is_the_analytic_one(toy, store):
    from veil.core.explain import explain

    ex = explain("toy/fig/y", store, samples=32, seed=1)
    assert ex.nominal.value == 100 and ex.nominal.verdict == "within"
    # y = 100 x + 5 z within 110 +- 22: x = 0.88 (or 1.32) at z = 0; 0.88 is the smaller move
    best = ex.smallest()
    assert best["assumption"] == "toy.x"
    assert best["value"] == pytest.approx(0.88, abs=1e-6)
    assert best["distance"] == pytest.approx(0.12 / 1.5, abs=1e-6)
    flips = sorted(f["value"] for f in ex.flips)
    assert flips == pytest.approx([0.88, 1.32], abs=1e-6)
    # swings: x over [0.5, 2] moves y by 150, z over [-1, 1] by 10
    assert ex.swing("toy.x") == pytest.approx(150) and ex.swing("toy.z") == pytest.approx(10)
    assert ex.first_order["toy.x"] > 0.8 > ex.first_order["toy.z"]
    assert ex.fragile and ex.joint_flip is not None


def test_a_shape_row_flips_at_its_bound_and_a_named_ablation_counts(toy, store):
    from veil.core.explain import explain

    ex = explain("toy/fig/y_b", store, samples=0)
    # y < 120: x = 1.2 at z = 0; level b adds 30 (130: fails) but is a whole-range move
    by = {f["assumption"]: f for f in ex.flips}
    assert by["toy.x"]["value"] == pytest.approx(1.2, abs=1e-6)
    assert by["toy.level"]["value"] == "b" and by["toy.level"]["distance"] == 1.0
    assert ex.smallest()["assumption"] == "toy.x"


def test_a_window_inside_the_range_is_found_not_only_the_ends(toy, store):
    from veil.core.explain import explain, summary_text

    ex = explain("toy/fig/y_window", store, samples=0)
    assert ex.nominal.verdict == "outside"
    (flip,) = [f for f in ex.flips if f["assumption"] == "toy.x"]
    assert flip["interval"] == pytest.approx([1.35, 1.65], abs=1e-6) and flip["verdict"] == "within"
    assert summary_text(ex).startswith("holds if toy.x in [1.35, 1.65]")


def test_robust_row_and_points_read_back_from_the_store(toy, store):
    from veil.core.explain import explain, render

    ex = explain("toy/fig/y_shape", store, samples=0)
    assert ex.smallest()["value"] == pytest.approx(0.9, abs=1e-6)
    n = len(toy.CALLS)
    again = explain("toy/fig/y_shape", store, samples=0)
    assert len(toy.CALLS) == n, "every point and run is read back the second time"
    assert again.as_dict()["flips"] == ex.as_dict()["flips"]
    assert "fragile" in render(ex) and "toy.x" in render(ex)


def test_pool_gives_the_serial_answer(toy, tmp_path):
    from veil.core.explain import explain

    with ResultStore(tmp_path / "a.sqlite") as a, ResultStore(tmp_path / "b.sqlite") as b:
        one = explain("toy/fig/y", a, samples=8, seed=3, jobs=1)
        two = explain("toy/fig/y", b, samples=8, seed=3, jobs=2)
    assert [p.value for p in one.joint] == [p.value for p in two.joint]
    assert one.smallest() == two.smallest()


def test_bad_key_lists_near_matches(toy, store):
    from veil.core.explain import explain

    with pytest.raises(ConfigError, match=r"no report row 'toy/fig/yy'.*near: toy/fig/y"):
        explain("toy/fig/yy", store, samples=0)
    with pytest.raises(ConfigError, match="depends on no assumption"):
        explain("toy/other/fixed", store, samples=0)


def test_assumption_declarations_are_checked():
    with pytest.raises(ValueError, match="source"):
        register_assumption("toy", "bad", value=1, lo=0, hi=2, source="", knobs=["toy.linear.x"])
    with pytest.raises(ValueError, match="lo < hi"):
        register_assumption("toy", "bad", value=3, lo=0, hi=2, source="s", knobs=["toy.linear.x"])
    with pytest.raises(ValueError, match="knobs"):
        register_assumption("toy", "bad", value=1, lo=0, hi=2, source="s", knobs=["x"])
    assert "toy.bad" not in PROVENANCE.assumptions


def test_margin_sign_matches_the_verdict():
    from veil.core.explain import margin
    from veil.core.rows import Row, Shape

    assert margin(Row("a", 5.0, ref=4.0, source="s", tol=0.5, tol_source="t")) == pytest.approx(1.0)
    assert margin(Row("a", 7.0, ref=4.0, source="s", tol=0.5, tol_source="t")) == pytest.approx(-1.0)
    assert margin(Row("a", 3.0, shape=Shape("between", 1, 4), source="s")) == pytest.approx(1.0)
    assert margin(Row("a", 0.5, shape=Shape("<=", 1), source="s")) == pytest.approx(0.5)
    assert math.isinf(margin(Row("a", None, shape=Shape("<=", 1), source="s")))


def test_cli_bad_key_one_line(veil_cli):
    r = veil_cli("explain", "nosuchsystem/row")
    one_line_error(r, "nosuchsystem/row", "systems:")


def test_falsify_finds_a_perturbation_for_every_shape_that_can_fail(toy, store):
    from veil.core.explain import falsify

    found = falsify("toy", store)
    # y >= 90 fails at x = 0.5 (y = 50); y < 120 fails at x = 2 (y = 200)
    assert found["toy/fig/y_shape"] == "toy.x = 0.5"
    assert found["toy/fig/y_b"] == "toy.x = 2.0"
    # the fixed count moves under nothing plausible: it can only be a self-check
    assert found["toy/other/fixed"] is None


def test_summary_for_the_report_and_headline_lookup(toy, store):
    from veil.core import robustness as R
    from veil.core.explain import explain, summary_text

    assert R.robustness_of(store, "toy/fig/y", True).startswith("robustness not explained")
    ex = explain("toy/fig/y", store, samples=0)
    # outside for x below 0.88 (down to the range's end, 0.5)
    assert summary_text(ex) == "fragile: outside if toy.x in [0.500, 0.880] (nominal 1, plausible [0.5, 2])"
    assert R.robustness_of(store, "toy/fig/y", True) == summary_text(ex)
    assert R.robustness_of(store, "toy/fig/y", False).startswith("robustness not explained")


def test_headline_rows_carry_robustness_in_the_report(toy, store, tmp_path, monkeypatch):
    from veil.core import robustness as R
    from veil.core.explain import explain
    from veil.core.report import reproduce

    monkeypatch.setitem(R.HEADLINES, "toy", (("toy/fig/y", "toy/fig/y_b"), "toy abstract"))
    explain("toy/fig/y", store, samples=0)
    reproduce(["toy"], tmp_path / "rep", store, quick=True, jobs=1, log=lambda *_: None)
    refs = __import__("json").loads((tmp_path / "rep" / "references.json").read_text())
    assert refs["toy/fig/y"]["robustness"].startswith("fragile: outside if toy.x in [0.500, 0.880]")
    assert refs["toy/fig/y_b"]["robustness"].startswith("robustness not explained")
    assert "robustness" not in refs["toy/fig/y_shape"]
    page = (tmp_path / "rep" / "toy.html").read_text()
    assert "within; fragile: outside if toy.x" in page


def test_a_recorded_answer_stands_in_until_this_code_is_explained(toy, store, monkeypatch):
    from veil.core import robustness as R
    from veil.core.explain import explain, summary_text

    monkeypatch.setitem(R.HEADLINES, "toy", (("toy/fig/y",), "toy abstract"))
    monkeypatch.setattr(R, "RECORDED", {})
    with pytest.raises(ValueError, match="not a declared headline"):
        R.record_explained("toy/fig/y_b", "robust", robust=True, at="c", date="d", command="veil explain")
    R.record_explained("toy/fig/y", "holds if toy.x = 3", robust=False, at="commit abc1234", date="2026-11-01",
                       command="veil explain toy/fig/y")
    with pytest.raises(ValueError, match="twice differently"):
        R.record_explained("toy/fig/y", "robust", robust=True, at="commit abc1234", date="2026-11-01",
                           command="veil explain toy/fig/y")
    cited = R.robustness_of(store, "toy/fig/y", True)
    assert cited == "holds if toy.x = 3 (veil explain on 2026-11-01, code commit abc1234; not re-run on this code)"
    assert R.robustness_of(None, "toy/fig/y", True) == cited
    assert R.robustness_of(store, "toy/fig/y", False).startswith("robustness not explained")   # another mode
    ex = explain("toy/fig/y", store, samples=0)          # this code's own answer wins
    assert R.robustness_of(store, "toy/fig/y", True) == summary_text(ex)


def test_every_recorded_answer_names_a_declared_headline_of_its_system():
    from veil.core import robustness as R
    from veil.core.registry import load_systems

    load_systems()
    assert R.RECORDED, "the systems record their earlier explain answers"
    for key, rec in R.RECORDED.items():
        assert R.is_headline(key), key
        assert rec.text.startswith(("holds if", "fails under every plausible", "fragile", "robust")), rec.text
        assert rec.command.startswith(f"veil explain {key}"), rec.command


def test_dask_cluster_gives_the_serial_answer(toy, tmp_path):
    from distributed import LocalCluster

    from veil.core.explain import explain

    with ResultStore(tmp_path / "a.sqlite") as a:
        one = explain("toy/fig/y", a, samples=6, seed=2)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster, \
            ResultStore(tmp_path / "b.sqlite") as b:
        two = explain("toy/fig/y", b, samples=6, seed=2, scheduler=cluster.scheduler_address)
    assert [p.value for p in one.joint] == [p.value for p in two.joint]
    assert one.smallest() == two.smallest()


def test_a_shape_nothing_can_fail_is_named(toy, tmp_path):
    with pytest.raises(AssertionError, match=r"mark them self_check\): \['toy/other/fixed'\]"):
        assert_shapes_falsifiable("toy", tmp_path / "s.sqlite")
