"""The Python API (docs/python.md): run and sweep from dicts, the same cache as the CLI, and a
store read into pandas with units."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import veil
from conftest import write
from veil.core.store import Record

ROOT = Path(__file__).resolve().parents[2]
SHORT = {"experiment": "memnet.latency_load", "mode": "fixed", "warmup_cycles": 100, "measure_cycles": 500, "k": 4}


def test_run_from_a_dict_is_the_clis_point(veil_cli, tmp_path, store_path):
    write(tmp_path / "c.toml", 'experiment = "memnet.latency_load"\nmode = "fixed"\nwarmup_cycles = 100\n'
                               'measure_cycles = 500\nk = 4\n')
    assert veil_cli("run", "c.toml", "rate=0.2").rc == 0
    rec = veil.run(SHORT, {"rate": 0.2}, store=store_path)
    listed = veil_cli("results", "list")
    assert "1 results" in listed.out  # read back from the store, not computed again
    assert rec.config_hash in listed.out and rec.config["rate"] == 0.2
    again = veil.run("memnet.latency_load", {"mode": "fixed", "warmup_cycles": 100, "measure_cycles": 500,
                                             "k": 4, "rate": 0.2}, store=False)  # computed: no store
    assert again.config_hash == rec.config_hash
    from_file = veil.run(tmp_path / "c.toml", {"rate": 0.2}, store=store_path)  # a config file's path
    assert from_file.config_hash == rec.config_hash
    assert {k: v for k, v in again.result.items() if "second" not in k} == \
        {k: v for k, v in rec.result.items() if "second" not in k}  # deterministic but for wall time


@pytest.mark.parametrize("call, needle", [
    (lambda: veil.run({**SHORT, "rate": 2.0}, store=False), "rate:"),
    (lambda: veil.run({"experiment": "nosuch"}, store=False), "unknown experiment 'nosuch'"),
    (lambda: veil.run(SHORT, {"histogram": 1}, store=False), "histogram: expected true or false"),
    (lambda: veil.sweep({**{k: v for k, v in SHORT.items() if k != "experiment"}, "experiment": SHORT["experiment"]},
                        store=False), "unknown key"),
    (lambda: veil.sweep({"experiment": "memnet.latency_load", "grid": {"rate": [0.1, 0.1]}}, store=False),
     "same config as point 0"),
])
def test_bad_input_raises_config_error_naming_the_field(call, needle):
    with pytest.raises(veil.ConfigError, match=None) as e:
        call()
    assert needle in str(e.value)


def test_sweep_and_dataframe(store_path):
    base = {k: v for k, v in SHORT.items() if k != "experiment"}
    recs = veil.sweep({"experiment": "memnet.latency_load", "base": base,
                       "grid": {"rate": [0.05, 0.1], "seed": [1, 2]}}, store=store_path)
    assert [(r.config["rate"], r.seed) for r in recs] == [(0.05, 1), (0.05, 2), (0.1, 1), (0.1, 2)]
    import dataclasses

    from veil.core.store import ResultStore

    with ResultStore(store_path) as raw:  # an older code's result of one config
        raw.put(dataclasses.replace(recs[0], veil_version="0.0.1+old", created_at="2000-01-01T00:00:00Z"))
    with veil.open_store(store_path) as st:
        df = st.dataframe("memnet.latency_load")
        every = st.dataframe("memnet.latency_load", latest=False)
        units = st.units("memnet.latency_load")
    assert len(df) == 4 and len(every) == 5
    assert sorted(zip(df["rate"], df["seed"])) == [(0.05, 1), (0.05, 2), (0.1, 1), (0.1, 2)]
    for r in recs:  # every result field of every record is in its row
        row = df[df.config_hash == r.config_hash].iloc[0]
        assert row["avg_packet_latency"] == r.result["avg_packet_latency"] and row["topology"] == "mesh"
    assert df.attrs["units"]["avg_packet_latency"] == "cycles"
    assert {"rate", "topology", "seed"} <= set(df.attrs["config_columns"])
    assert "avg_packet_latency" in df.attrs["result_columns"]
    row = units.set_index("column").loc["avg_packet_latency"]
    assert row["kind"] == "result" and row["unit"] == "cycles" and row["description"]
    assert units.set_index("column").loc["rate", "kind"] == "config"


def test_a_result_named_like_a_config_key_gets_a_prefix():
    from veil.api import records_dataframe

    rec = Record("he.digits", "h", "v", 1, {"seed": 1, "images": 0}, {"images": 360, "exact_match": 1.0}, 1.0,
                 "2026-01-01T00:00:00Z", id=1)
    df = records_dataframe("he.digits", [rec])
    assert df.loc[0, "images"] == 0 and df.loc[0, "result.images"] == 360 and df.loc[0, "exact_match"] == 1.0
    assert df.attrs["units"]["result.images"] == "images"


def test_the_example_script_runs(tmp_path):
    store = tmp_path / "s.sqlite"
    for attempt in range(2):  # the second run reads every point back
        p = subprocess.run([sys.executable, str(ROOT / "examples" / "latency_load_sweep.py"), str(store)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert "sweep: 6 points" in p.stdout and "avg_packet_latency (cycles):" in p.stdout
        assert "flits/node/cycle" in p.stdout
    with veil.open_store(store) as st:
        assert len(st.records("memnet.latency_load")) == 6
