"""`veil leak CONFIG`: bad input is one line and exit 2; a run prints every family's verdict,
stores it by config hash and reads it back; the leakage table's rows are shaped as the report
needs them."""

from __future__ import annotations

import json

import pytest

from conftest import one_line_error, write
from veil.core import ConfigError
from veil.core.leak.run import load

BASE = 'system = "oram"\nobserver = "server"\nsetting = "plain"\na = "uniform"\nb = "hot"\nsize = 32\n'


@pytest.mark.parametrize("override, needle", [
    ("system=teleport", "system: unknown 'teleport'"),
    ("observer=bus", "observer: unknown oram.bus"),
    ("setting=ecb", "setting: unknown 'ecb'"),
    ("b=sideways", "pattern: unknown 'sideways'"),
    ("b=uniform", "both 'uniform'"),
    ("repeats=5", "needs at least 13"),
    ("alpha=2", "alpha"),
    ("colour=1", "colour: unknown key"),
    ("size=4", "size: 4 is too small for oram.server; at least 16"),
])
def test_bad_input_is_found_before_any_run(tmp_path, override, needle):
    cfg = write(tmp_path / "leak.toml", BASE)
    with pytest.raises(ConfigError, match=needle):
        load(cfg, [override])


def test_cli_bad_input_is_one_line_and_a_run_is_stored(veil_cli, tmp_path):
    cfg = write(tmp_path / "leak.toml", BASE)
    one_line_error(veil_cli("leak", str(cfg), "system=teleport"), "system: unknown")
    one_line_error(veil_cli("leak", str(cfg), "b=uniform"), "both 'uniform'")
    r = veil_cli("leak", str(cfg), "power_trials=5", "--json", "out.json")
    assert r.rc == 0, r.err
    assert "negative control (must leak)" in r.out and "spatial: leaks" in r.out
    rep = json.loads((tmp_path / "out.json").read_text())
    assert rep["families"]["spatial"]["leaks"] and rep["families"]["spatial"]["power"] >= 0.95
    again = veil_cli("leak", str(cfg), "power_trials=5", "--json", "again.json")  # read back from the store
    assert json.loads((tmp_path / "again.json").read_text()) == rep


def test_table_rows_flag_negative_controls_on_measured_power():
    from veil.core.leak_table import rows_for

    fam = {"detectable": {"effect": 0.05, "power": 1.0}, "statement": "leaks", "p": 1e-4, "leaks": True,
           "power": 1.0, "classifier": {"accuracy": 1.0}}
    rep = {"system": "oram", "observer": "server", "setting": "plain", "a": "uniform", "b": "hot", "negative_control": True,
           "families": {"spatial": fam}, "cost_a": {}}
    rows = rows_for(rep)
    assert [r.key for r in rows] == ["leak/oram/server/plain/uniform-vs-hot/spatial", "leak/oram/server/plain/uniform-vs-hot/power"]
    assert rows[0].value is None  # a family that leaks states no smallest effect
    assert rows[1].outcome == "holds" and rows[1].origin == "measurement"
    assert rows[0].note.startswith("tests: negative control;")
    blind = rows_for({**rep, "families": {"spatial": {**fam, "leaks": False}}})
    assert blind[1].value == 0.0 and blind[1].outcome == "fails"  # a control that does not leak fails
    assert blind[0].value == 0.05
    defended = rows_for({**rep, "setting": "proram", "negative_control": False, "defence": True}, "PRO-ORAM")
    assert defended[0].note.startswith("tests: the paper's claim that under proram (PRO-ORAM) the attacker cannot tell "
                                       "uniform from hot;")
    assert "no claim" in rows_for({**rep, "negative_control": False, "defence": False})[0].note


def test_dask_and_local_processes_give_the_same_verdict_as_one_process(tmp_path):
    from distributed import LocalCluster

    from veil.core.leak.run import execute

    cfg = load(write(tmp_path / "leak.toml", BASE), ["power_trials=5"])
    one = execute(cfg, None, jobs=1)
    assert execute(cfg, None, jobs=2) == one
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        assert execute(cfg, None, scheduler=cluster.scheduler_address) == one


def test_shipped_configs_load():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "configs" / "leak"
    for path in sorted(root.glob("*.toml")):
        cfg = load(path)
        assert cfg.repeats >= 13 and cfg.alpha == 1e-3


def test_leakage_table_is_on_its_own_page_linked_from_the_summary(tmp_path, monkeypatch):
    from veil.core.registry import REGISTRY, Reproducer
    from veil.core.report import reproduce

    def fake(ctx):
        ctx.grid("Leakage table", ["system", "verdict"], [["toy", "leaks"]])

    monkeypatch.setitem(REGISTRY.reproducers, "toyleak", Reproducer("toyleak", "toyleak", fake, 99))
    reproduce(["toyleak"], tmp_path, None, quick=True, jobs=1, log=lambda *_: None)
    index = (tmp_path / "index.html").read_text()
    # the first screen is the summary and the failing rows; the long table is one link away
    assert "<td>leaks</td>" not in index and "Leakage table (1 rows)" in index and "href='toyleak.html'" in index
    assert "<td>leaks</td>" in (tmp_path / "toyleak.html").read_text()


def test_observer_without_cases_is_named_not_guessed(monkeypatch):
    import veil.core.leak.analyse as an
    from veil.core.leak import observer as ob
    from veil.core.leak.observer import Observer
    from veil.core.leak_table import untabled

    obs = Observer(system="toy", name="t", sees="", settings={"x": ""}, patterns={"p": "", "p-twin": ""},
                   run=lambda *a: None, leaky=("x",))
    monkeypatch.setitem(ob._OBSERVERS, ("toy", "t"), obs)
    monkeypatch.setattr(an, "_systems_with_observers", lambda: ["toy"])
    assert untabled() == ["toy.t"]
