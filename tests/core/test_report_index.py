"""The report's first screen and its merging: the summary and the failing rows first, counts
that match the fail list, a partial run that keeps every other system's page, words a reader
can decode, measured rows that name both machines, and progress while a section runs."""

import html
import json
import re

import pytest

from veil.core import REGISTRY, Row, Shape, load_systems
from veil.core.registry import Reproducer
from veil.core.report import reproduce, summary


def _alpha(ctx):
    ctx.table("t", [
        Row("hit", 1.0, ref=1.0, source="paper Table 1", tol=0.1),
        Row("miss", 2.0, ref=1.0, source="paper Table 1", tol=0.1),
        Row("shape miss", 0.0, source="paper §2", shape=Shape(">", 1)),
        Row("fast", 5.0, unit="GB/s", ref=10.0, source="paper Fig. 2", tol=0.1, origin="measurement",
            ref_machine="the paper's 40-core server"),
    ])
    ctx.grid("Leakage table", ["case", "verdict"], [["x", "leaks"]] * 40)


def _beta(ctx):
    ctx.table("u", [Row("beta miss", 3.0, ref=1.0, source="paper Table 2", tol=0.1), Row("beta ok", 1.0)])


@pytest.fixture
def two(monkeypatch):
    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "alpha", Reproducer("alpha", "alpha: test", _alpha, 97))
    monkeypatch.setitem(REGISTRY.reproducers, "beta", Reproducer("beta", "beta: test", _beta, 98))


def _quiet(systems, out):
    return reproduce(systems, out, None, quick=True, jobs=1, log=lambda *_: None)


def test_first_screen_is_summary_then_failing_rows(tmp_path, two):
    sections, _ = _quiet(["alpha", "beta"], tmp_path)
    index = (tmp_path / "index.html").read_text()
    # the summary, then the fail list; the 40-row leakage table is on alpha's page, linked
    assert index.index("class='summary'") < index.index("Rows that fail (4)")
    assert "<td>leaks</td>" not in index and "Leakage table (40 rows)" in index
    assert index.count("<td>leaks</td>") == 0 and (tmp_path / "alpha.html").read_text().count("<td>leaks</td>") == 40
    # every system's failing count equals its rows in the fail list
    fails = index[index.index("Rows that fail"):]
    for c in summary(sections):
        listed = len(re.findall(rf"<tr><td>{c['system']}</td>", fails))
        assert c["failing"] == listed == c["outside"] + c["fails"] + c["no value"], c


def test_a_calibrated_row_that_misses_counts_as_failing(tmp_path, monkeypatch):
    from veil.core import provenance
    from veil.core.provenance import ProvenanceRegistry

    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "alpha", Reproducer("alpha", "alpha: test", _alpha, 97))
    monkeypatch.setattr(provenance, "PROVENANCE", ProvenanceRegistry())
    provenance.register_constant("alpha", "k", targets=["alpha/t/miss", "alpha/t/hit"], how="fit: test",
                                 when="2026-11-28")
    sections, _ = _quiet(["alpha"], tmp_path)
    (c,) = summary(sections)
    assert c["calibrated"] == 1 and c["calibrated_failing"] == {"outside": 1}
    index = (tmp_path / "index.html").read_text()
    assert c["failing"] == 3 and "Rows that fail (3)" in index and "alpha.html#row-alpha-t-miss" in index


def test_partial_run_keeps_every_other_system(tmp_path, two):
    _quiet(["alpha", "beta"], tmp_path)
    _quiet(["alpha"], tmp_path)
    index = (tmp_path / "index.html").read_text()
    assert "href='beta.html'" in index and "beta.html#row-beta-u-beta-miss" in index
    assert "Rows that fail (4)" in index
    assert "href='beta.html'" in (tmp_path / "alpha.html").read_text(), "the nav keeps beta too"
    kept = json.loads((tmp_path / "summary.json").read_text())
    assert [e["system"] for e in kept["systems"]] == ["alpha", "beta"]
    # a report written before summary.json: rebuilt from references.json
    (tmp_path / "summary.json").unlink()
    _quiet(["alpha"], tmp_path)
    index = (tmp_path / "index.html").read_text()
    assert "href='beta.html'" in index and "beta.html#row-beta-u-beta-miss" in index and "Rows that fail (4)" in index
    # a page gone from disk is not linked
    (tmp_path / "beta.html").unlink()
    _quiet(["alpha"], tmp_path)
    assert "beta.html" not in (tmp_path / "index.html").read_text()


def test_measured_row_against_another_machine_says_so(tmp_path, two):
    _quiet(["alpha"], tmp_path)
    index, page = (tmp_path / "index.html").read_text(), (tmp_path / "alpha.html").read_text()
    for text in (index, page):
        text = html.unescape(text)
        assert "the machines differ: measured on " in text and "the reference on the paper's 40-core server" in text
    refs = json.loads((tmp_path / "references.json").read_text())
    assert refs["alpha/t/fast"]["reference_machine"] == "the paper's 40-core server"
    with pytest.raises(ValueError, match="ref_machine"):
        Row("model", 1.0, ref=1.0, source="paper", tol=0.1, ref_machine="elsewhere")


@pytest.mark.parametrize("kw, needle", [({"note": "its numbers were stripped from our copy"}, "internal phrase"),
                                        ({"unit": "x-1"}, "shorthand"), ({"unit": "rel."}, "shorthand")])
def test_internal_phrases_and_units_refused(tmp_path, monkeypatch, kw, needle):
    def bad(ctx):
        ctx.table("t", [Row("x", 1.0, **{"ref": 1.0, "source": "paper", "tol": 0.1, **kw})])

    load_systems()
    monkeypatch.setitem(REGISTRY.reproducers, "badsys", Reproducer("badsys", "badsys", bad, 99))
    sections, _ = _quiet(["badsys"], tmp_path)
    assert sections[0].error and needle in sections[0].error


@pytest.mark.parametrize("env, shown", [("1", True), ("0", False)])
def test_progress_per_figure_and_table(tmp_path, two, monkeypatch, capsys, env, shown):
    monkeypatch.setenv("VEIL_PROGRESS", env)
    _quiet(["beta"], tmp_path)
    err = capsys.readouterr().err
    assert bool(re.search(r"\[beta\] table 'u' done \(\d+ s\)", err)) is shown, err
