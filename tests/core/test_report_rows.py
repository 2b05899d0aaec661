"""Report rows: verdicts derived from reference and tolerance, and the files the report writes."""

import csv
import json

import pytest

from veil.core import REGISTRY, Row, load_systems, median_spread
from veil.core.registry import Reproducer
from veil.core.report import reproduce


def test_relative_tolerance_verdicts():
    assert Row("a", 108.0, ref=100.0, source="paper Fig. 1", tol=0.1).outcome == "within"
    assert Row("a", 111.0, ref=100.0, source="paper Fig. 1", tol=0.1).outcome == "outside"
    assert Row("a", 89.0, ref=100.0, source="paper Fig. 1", tol=0.1).outcome == "outside"
    # the band is relative to the reference, not to Veil's value
    assert Row("a", -95.0, ref=-100.0, source="paper text", tol=0.1).outcome == "within"


def test_absolute_and_combined_tolerance():
    assert Row("a", 0.004, ref=0.0, source="analytic", tol_abs=0.005).outcome == "within"
    assert Row("a", 0.006, ref=0.0, source="analytic", tol_abs=0.005).outcome == "outside"
    # both given: the wider band applies (an absolute floor under a relative band)
    assert Row("a", 1.4, ref=1.0, source="analytic", tol=0.1, tol_abs=0.5).outcome == "within"
    assert Row("a", 130.0, ref=100.0, source="analytic", tol=0.5, tol_abs=1.0).outcome == "within"
    assert Row("a", 151.0, ref=100.0, source="analytic", tol=0.5, tol_abs=1.0).outcome == "outside"


def test_verdicts_without_reference_tolerance_or_value():
    assert Row("a", 3.0).outcome == "no reference"
    assert Row("a", 3.0, ref=2.0, source="paper text").outcome == "no tolerance"
    assert Row("a", None, ref=2.0, source="paper text", tol=0.1).outcome == "no value"
    assert Row("a", float("nan"), ref=2.0, source="paper text", tol=0.1).outcome == "no value"
    # a given verdict wins over the derived one
    r = Row("a", 9.0, ref=2.0, source="paper text", tol=0.1, verdict="shape only", note="falls with N")
    assert r.outcome == "shape only"


@pytest.mark.parametrize("kw, needle", [
    ({"basis": "guessed"}, "basis"),
    ({"verdict": "fine"}, "verdict"),
    ({"verdict": "shape only"}, "note"),
    ({"ref": 1.0}, "source"),
    ({"ref": 1.0, "source": "paper text", "tol": -0.1}, ">= 0"),
])
def test_mislabelled_rows_are_refused(kw, needle):
    with pytest.raises(ValueError, match=needle):
        Row("a", 1.0, **kw)


def test_median_spread():
    med, (lo, hi) = median_spread([5, 1, 9, 3, 7])
    assert med == 5 and (lo, hi) == (3, 7)
    med, (lo, hi) = median_spread([4, 1, 2], kind="minmax")
    assert med == 2 and (lo, hi) == (1, 4)
    with pytest.raises(ValueError):
        median_spread([])


def _fake_system(ctx):
    fig, ax = ctx.subplots()
    ax.plot([1, 2, 3], [10, 20, 31])
    ctx.figure(fig, "curve", "a curve", rows=[
        Row("y at 3", 31.0, unit="s", ref=30.0, source="paper Fig. 9", tol=0.05,
            tol_source="read off the figure", basis="predicted", metric="fakesys/y3"),
        Row("y at 1", 10.0, unit="s", ref=20.0, source="paper Fig. 9", tol=0.05, basis="calibrated"),
        Row("timing", 2.0, unit="ms", spread=(1.5, 2.5), basis="measured"),
    ], data={"Veil": {"x": [1, 2, 3], "y": [10, 20, 31]}, "paper Fig. 9": {"x": [3], "y": [30.0]}})
    ctx.table("old style", [("legacy quantity", 2.0, 2.1, "s")])
    ctx.metric("fakesys/plain", 7.5)


def test_report_files(tmp_path, monkeypatch):
    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "fakesys", Reproducer("fakesys", "fakesys: test", _fake_system, 99))
    sections, metrics = reproduce(["fakesys"], tmp_path, None, quick=True, jobs=1, log=lambda *_: None)
    assert sections[0].error is None, sections[0].blocks
    assert metrics["fakesys/y3"] == 31.0
    refs = json.loads((tmp_path / "references.json").read_text())
    assert refs["fakesys/y3"]["verdict"] == "within" and refs["fakesys/y3"]["reference"] == 30.0
    assert refs["fakesys/y3"]["source"] == "paper Fig. 9" and refs["fakesys/y3"]["basis"] == "predicted"
    assert refs["fakesys/y3"]["tolerance_rel"] == 0.05
    assert refs["fakesys/plain"]["verdict"] == "no reference" and refs["fakesys/plain"]["value"] == 7.5
    with open(tmp_path / "figures" / "fakesys_curve.csv") as f:
        table = list(csv.DictReader(f))
    assert [r["series"] for r in table] == ["Veil"] * 3 + ["paper Fig. 9"]
    assert table[2]["y"] == "31" and table[3]["x"] == "3" and table[3]["y"] == "30.0"
    page = (tmp_path / "index.html").read_text()
    assert "href='figures/fakesys_curve.svg'" in page and "fakesys_curve.csv" in page
    # summary at the top: 4 rows, 1 within, 1 outside, 1 without reference, 1 legacy without tolerance
    head = page[:page.index("<section")]
    assert ("<td><a href='#fakesys'>fakesys</a></td><td>4</td><td class='ok'>1</td><td class='bad'>1</td>"
            in head), head
    assert "legacy quantity" in page and "read off the figure" in page


def test_unequal_series_refused(tmp_path, monkeypatch):
    def bad(ctx):
        fig, _ = ctx.subplots()
        ctx.figure(fig, "f", data={"Veil": {"x": [1, 2], "y": [1]}})

    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "badsys", Reproducer("badsys", "badsys", bad, 99))
    sections, _ = reproduce(["badsys"], tmp_path, None, quick=True, jobs=1, log=lambda *_: None)
    assert sections[0].error and "unequal length" in sections[0].error
