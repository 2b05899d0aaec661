"""Report rows: verdicts derived from reference and tolerance, and the files the report writes."""

import csv
import json
import re
from dataclasses import replace

import pytest

from veil.core import REGISTRY, Row, Shape, load_systems, median_spread
from veil.core.registry import Reproducer
from veil.core import provenance
from veil.core.provenance import ProvenanceRegistry
from veil.core.report import SUMMARY_COLUMNS, reproduce, summary


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


def test_verdicts_without_reference_or_value():
    assert Row("a", 3.0).outcome == "no reference"
    assert Row("a", None, ref=2.0, source="paper text", tol=0.1).outcome == "no value"
    assert Row("a", float("nan"), ref=2.0, source="paper text", tol=0.1).outcome == "no value"


def test_shapes_hold_or_fail():
    assert Row("a", 7, source="paper §6", shape=Shape(">=", 6)).outcome == "holds"
    assert Row("a", 5, source="paper §6", shape=Shape(">=", 6)).outcome == "fails"
    assert Row("a", 1.5, source="paper §6", shape=Shape("between", 1.2, 2.0)).outcome == "holds"
    assert Row("a", 2.5, source="paper §6", shape=Shape("between", 1.2, 2.0)).outcome == "fails"
    assert Row("a", None, source="paper §6", shape=Shape("<", 1)).outcome == "no value"


@pytest.mark.parametrize("kw, needle", [
    ({"origin": "guessed"}, "origin"),
    ({"basis": "guessed"}, "basis"),
    ({"verdict": "fine"}, "verdict"),
    ({"ref": 1.0}, "source"),
    ({"ref": 1.0, "source": "paper text"}, "tolerance"),
    ({"ref": 1.0, "source": "paper text", "tol": -0.1}, ">= 0"),
    ({"shape": Shape(">", 1)}, "source"),
    ({"shape": Shape(">", 1), "source": "paper", "tol": 0.1}, "predicate"),
])
def test_mislabelled_rows_are_refused(kw, needle):
    with pytest.raises((ValueError, TypeError), match=needle):
        Row("a", 1.0, **kw)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="op"):
        Shape("~", 1)
    with pytest.raises(ValueError, match="lo and hi"):
        Shape("between", 1)
    with pytest.raises(ValueError, match="exceed"):
        Shape("between", 2, 1)


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
            tol_source="read off the figure", metric="fakesys/y3"),
        Row("y at 1", 10.0, unit="s", ref=20.0, source="paper Fig. 9", tol=0.05, key="fakesys/y1"),
        Row("y grows", 3, unit="of 3", source="paper §2", shape=Shape("==", 3)),
        Row("y falls", 0, unit="of 3", source="paper §2", shape=Shape("==", 3)),
        Row("timing", 2.0, unit="ms", spread=(1.5, 2.5), origin="measurement"),
    ], data={"Veil": {"x": [1, 2, 3], "y": [10, 20, 31]}, "paper Fig. 9": {"x": [3], "y": [30.0]}})
    ctx.table("other", [Row("z", 5.0, ref=5.0, source="paper Table 1", tol=0.01)])
    ctx.metric("fakesys/plain", 7.5)


@pytest.fixture
def fakesys(monkeypatch):
    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "fakesys", Reproducer("fakesys", "fakesys: test", _fake_system, 99))
    reg = ProvenanceRegistry()
    monkeypatch.setattr(provenance, "PROVENANCE", reg)
    return reg


def test_report_files(tmp_path, fakesys):
    provenance.register_constant("fakesys", "k", targets=["fakesys/y1"], how="fit: test", when="2026-11-26")
    sections, metrics = reproduce(["fakesys"], tmp_path, None, quick=True, jobs=1, log=lambda *_: None)
    assert sections[0].error is None, sections[0].blocks
    assert metrics["fakesys/y3"] == 31.0
    refs = json.loads((tmp_path / "references.json").read_text())
    # every row is in references.json by its key, with its derived basis and provenance
    assert refs["fakesys/y1"]["basis"] == "calibrated" and refs["fakesys/y1"]["provenance"][0]["name"] == "fakesys.k"
    assert refs["fakesys/y1"]["provenance"][0]["targets"] == ["fakesys/y1"]
    assert refs["fakesys/y3"]["basis"] == "predicted (held out)", "a sibling of a fitted row is held out"
    assert refs["fakesys/other/z"]["basis"] == "predicted", "another figure's row stays predicted"
    assert refs["fakesys/curve/timing"]["basis"] == "measured"
    assert refs["fakesys/y3"]["verdict"] == "within" and refs["fakesys/y3"]["reference"] == 30.0
    assert refs["fakesys/y3"]["source"] == "paper Fig. 9" and refs["fakesys/y3"]["tolerance_rel"] == 0.05
    assert refs["fakesys/curve/y_grows"]["verdict"] == "holds" and refs["fakesys/curve/y_falls"]["verdict"] == "fails"
    assert refs["fakesys/plain"]["verdict"] == "no reference" and refs["fakesys/plain"]["value"] == 7.5
    with open(tmp_path / "figures" / "fakesys_curve.csv") as f:
        table = list(csv.DictReader(f))
    assert [r["series"] for r in table] == ["Veil"] * 3 + ["paper Fig. 9"]
    assert table[2]["y"] == "31" and table[3]["x"] == "3" and table[3]["y"] == "30.0"
    page = (tmp_path / "fakesys.html").read_text()
    assert "src='figures/fakesys_curve.png'" in page and "fakesys_curve.csv" in page
    assert "read off the figure" in page and "Measured here" in page
    index = (tmp_path / "index.html").read_text()
    # the summary's columns add up to the rows; the calibrated row that misses counts as outside,
    # marked calibrated, not hidden in a calibrated column
    (counts,) = summary(sections)
    assert counts["rows"] == 6 == sum(counts[c] for c in SUMMARY_COLUMNS)
    assert (counts["calibrated"], counts["within"], counts["outside"], counts["holds"], counts["fails"],
            counts["no reference"]) == (0, 2, 1, 1, 1, 1)
    assert counts["calibrated_failing"] == {"outside": 1} and "1 (1 calibrated)" in index
    # a row measured here names the host it was measured on
    assert refs["fakesys/curve/timing"]["host"] and "measured on " in page
    # failures first: the failing shape and the calibrated row that misses, each linked to its row
    head = index[:index.index("Rows that fail")]
    assert "<td>6</td>" in head
    fails = index[index.index("Rows that fail"):]
    assert "Rows that fail (2)" in fails
    assert "fakesys.html#row-fakesys-curve-y-falls" in fails and "fakesys.html#row-fakesys-y1" in fails
    assert "id='row-fakesys-curve-y-falls'" in page and "id='row-fakesys-y1'" in page
    for word in ("issue", "notes", "review"):
        assert not re.search(rf"\b{word}", index + page, re.IGNORECASE), word


@pytest.mark.parametrize("kw", [{"source": "the issue's 15% threshold"}, {"tol_source": "see the review"},
                                {"note": "memcrypt notes"}])
def test_report_refuses_words_a_reader_does_not_have(tmp_path, monkeypatch, kw):
    def bad(ctx):
        ctx.table("t", [Row("x", 1.0, **{"ref": 1.0, "source": "paper", "tol": 0.1, **kw})])

    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "badsys", Reproducer("badsys", "badsys", bad, 99))
    sections, _ = reproduce(["badsys"], tmp_path, None, quick=True, jobs=1, log=lambda *_: None)
    assert sections[0].error and "does not have" in sections[0].error


def test_hand_typed_basis_needs_a_reason(tmp_path, fakesys):
    r = Row("a", 1.0, ref=1.0, source="paper", tol=0.1, basis="calibrated")
    with pytest.raises(ValueError, match="basis_reason"):
        r.resolve("fakesys/a", ["fakesys/a"])
    r = Row("a", 1.0, ref=1.0, source="paper", tol=0.1, basis="calibrated", basis_reason="sits on the cap")
    assert r.resolve("fakesys/a", ["fakesys/a"]).basis == "calibrated"


def test_unequal_series_refused(tmp_path, monkeypatch):
    def bad(ctx):
        fig, _ = ctx.subplots()
        ctx.figure(fig, "f", data={"Veil": {"x": [1, 2], "y": [1]}})

    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "badsys", Reproducer("badsys", "badsys", bad, 99))
    sections, _ = reproduce(["badsys"], tmp_path, None, quick=True, jobs=1, log=lambda *_: None)
    assert sections[0].error and "unequal length" in sections[0].error


def test_constants_are_declared_with_their_targets(fakesys):
    with pytest.raises(ValueError, match="chosen against nothing"):
        provenance.register_constant("fakesys", "k", targets=[], how="fit", when="2026-11-26")
    with pytest.raises(ValueError, match="how it was chosen"):
        provenance.register_constant("fakesys", "k", targets=["fakesys/a"], how="", when="2026-11-26")
    with pytest.raises(ValueError, match="must start with 'fakesys/'"):
        provenance.register_constant("fakesys", "k", targets=["othersys/a"], how="fit", when="2026-11-26")
    provenance.register_constant("fakesys", "k", targets=["fakesys/a"], how="fit", when="2026-11-26")
    with pytest.raises(ValueError, match="twice"):
        provenance.register_constant("fakesys", "k", targets=["fakesys/b"], how="fit", when="2026-11-26")


@pytest.mark.parametrize("origin, siblings, applies, basis", [
    ("model", ["fakesys/f/a"], (), "calibrated"),                       # fitted on the row itself
    ("arithmetic", ["fakesys/f/a"], (), "calibrated"),                  # whatever the origin
    ("model", ["fakesys/f/b", "fakesys/f/a"], (), "predicted (held out)"),
    ("arithmetic", ["fakesys/f/b", "fakesys/f/a"], (), "computed"),
    ("measurement", ["fakesys/f/b"], (), "measured"),
    ("model", ["fakesys/f/b"], (), "predicted"),                        # no target in its figure
    ("model", ["fakesys/f/b", "fakesys/f/a"], ("fakesys/g/*",), "predicted"),  # does not depend on it
])
def test_derived_basis(fakesys, origin, siblings, applies, basis):
    provenance.register_constant("fakesys", "k", targets=["fakesys/f/a"], applies=applies, how="fit",
                                 when="2026-11-26")
    key = siblings[0]
    got, under = provenance.derive_basis(key, origin, siblings)
    assert got == basis
    assert [c.name for c in under] == ([] if applies else ["k"])


def test_ratio_within_by_cancellation_shows_its_factors():
    # 397 x against 417 x is within, but the client is 3.3x fast and TACO 3.1x fast: errors cancel
    client = Row("client", 84.0, unit="ms", ref=275.0, source="paper", tol=0.15, tol_source="t")
    taco = Row("taco", 0.2116, unit="ms", ref=0.66, source="paper", tol=0.15, tol_source="t")
    r = Row("speedup", 397.0, ref=417.0, source="paper", tol=0.15, tol_source="t", factors=(client, taco))
    assert r.outcome == "within" and r.by_cancellation and r.verdict_text() == "within by cancellation"
    d = r.as_dict()
    assert d["by_cancellation"] and [f["verdict"] for f in d["factors"]] == ["outside", "outside"]
    fine = replace(r, factors=(replace(client, value=270.0), replace(taco, value=0.65)))
    assert not fine.by_cancellation and fine.verdict_text() == "within"


def test_self_check_shape_is_not_a_holds():
    r = Row("configurations", 101150, shape=Shape(">=", 31340), source="paper", origin="arithmetic",
            self_check="the size of the knob grid")
    assert r.outcome == "self-check" and not r.failing
    assert replace(r, value=3).outcome == "fails"
    with pytest.raises(ValueError, match="self_check"):
        Row("a", 1.0, self_check="x")
