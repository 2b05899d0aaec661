"""The README's systems table comes from a report's references.json, counted as the report counts."""

import json

from veil.core import readme


def _refs():
    row = {"origin": "model", "basis": "predicted"}
    return {"memnet/a": {**row, "verdict": "within"}, "memnet/b": {**row, "verdict": "fails"},
            "memnet/c": {**row, "verdict": "outside", "basis": "calibrated"},
            "memnet/e": {**row, "verdict": "within", "basis": "calibrated"},
            "memnet/d": {**row, "verdict": "no reference"},
            "memnet/metric_only": {"origin": None, "basis": None, "verdict": "no reference"}}


def test_counts_match_the_report_columns():
    # a calibrated row that agrees counts as calibrated; one that fails counts as failing (marked)
    c = readme.counts(_refs())["memnet"]
    assert c == {"calibrated": 1, "within": 1, "outside": 1, "holds": 0, "fails": 1, "no value": 0,
                 "self-check": 0, "no reference": 1, "calibrated_failing": {"outside": 1}}


def test_rewrite_between_markers(tmp_path):
    (tmp_path / "references.json").write_text(json.dumps(_refs()))
    (tmp_path / "results.json").write_text(json.dumps({"veil/mode": "quick"}))
    md = tmp_path / "README.md"
    md.write_text(f"intro\n{readme.START}\nSTALE TABLE\n{readme.END}\ntail\n")
    readme.rewrite(md, tmp_path / "references.json")
    text = md.read_text()
    assert text.startswith("intro\n") and text.endswith("\ntail\n") and "STALE TABLE" not in text
    assert "| `memnet` |" in text and "1 / 1 / 1 (1 calibrated) / 0 / 1 / 0 / 0 / 1" in text and "(quick report)" in text


def test_the_repository_readme_has_the_generated_table():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    body = text.split(readme.START, 1)[1].split(readme.END, 1)[0]
    for system in readme.SYSTEMS:
        assert f"| `{system}` |" in body, system


def test_the_docs_column_lists_every_page_of_a_system_and_its_main_page_links_them():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    for system in readme.SYSTEMS:
        on_disk = sorted(p.stem.split("-", 1)[1] for p in docs.glob(f"{system}-*.md"))
        assert on_disk == sorted(readme.PAGES.get(system, ())), system
        main = (docs / f"{system}.md").read_text()
        for page in readme.PAGES.get(system, ()):
            assert f"({system}-{page}.md" in main, f"docs/{system}.md does not link {system}-{page}.md"
            assert f"[{page}](docs/{system}-{page}.md)" in readme.docs_cell(system)
