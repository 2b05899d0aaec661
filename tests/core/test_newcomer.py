"""Issue 41, the hostile-input suite grown by a newcomer's cases: nonsense that used to run,
messages that pointed the wrong way, outputs that overwrote inputs, results you could not see at
a glance, and systems `veil list` did not know."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import one_line_error, write

RUN = 'experiment = "crypto.pad_randomness"\nnbytes = 4096\n'
SWEEP = 'experiment = "crypto.pad_randomness"\n[base]\nnbytes = 4096\n[grid]\nseed = [1, 2, 3, 4, 5, 6, 7]\n'
MEMNET = 'experiment = "memnet.latency_load"\nmode = "fixed"\nwarmup_cycles = 100\nmeasure_cycles = 1000\n'


@pytest.fixture
def files(tmp_path):
    write(tmp_path / "c.toml", RUN)
    write(tmp_path / "s.toml", SWEEP)
    write(tmp_path / "m.toml", MEMNET)
    write(tmp_path / "kstr.toml", MEMNET + "k = '4'\n")
    write(tmp_path / "ms.toml", 'experiment = "memnet.memsys"\nrequests_per_cpu = 10\n')
    write(tmp_path / "mc.toml", 'experiment = "memcrypt.run"\nworkload = "synthetic-pointer"\n')
    write(tmp_path / "t.toml", 'experiment = "he.taco"\nfrontier = false\n')
    (tmp_path / "adir").mkdir()
    return tmp_path


# Item 4: accepted nonsense, refused in one line naming the key and the bound, before any work.
@pytest.mark.parametrize("args, needles", [
    (["run", "kstr.toml"], ["k: expected an integer, got the string '4'"]),
    (["run", "m.toml", 'rate="0.1"'], ["rate: expected a number, got the string '0.1'"]),
    (["reproduce", "crypto", "--jobs", "0"], ["--jobs 0: must be at least 1"]),
    (["sweep", "s.toml", "--jobs", "0"], ["--jobs 0: must be at least 1"]),
    (["run", "mc.toml", "freq_ghz=1e-300"], ["freq_ghz:", "greater than or equal to 0.01"]),
    (["run", "ms.toml", "tck_ns=1e-300"], ["tck_ns:", "greater than or equal to 0.05"]),
    (["run", "ms.toml", "cpu_ghz=1e-300"], ["cpu_ghz:", "greater than or equal to 0.01"]),
    (["run", "ms.toml", "requests_per_cpu=1000000000000"],
     ["requests_per_cpu = 1000000000000 x cpus = 16", "at least 185 days", "more than a day", "--force"]),
    (["run", "m.toml", "k=1024", "n=4"], ["1,099,511,627,776 routers x 1,100 cycles", "at least", "more than a day"]),
    (["run", "memnet.latency_load", "k=1024", "n=3"], ["1,073,741,824 routers x 40,000 cycles", "at least 10 days"]),
    (["sweep", "s.toml", "base.nbytes='4096'"], ["nbytes: expected an integer, got the string '4096'"]),
    (["run", "ms.toml", "secure.batch='2'"], ["secure.batch: expected an integer, got the string '2'"]),
])
def test_nonsense_is_refused_naming_key_and_bound(veil_cli, files, args, needles):
    r = veil_cli(*args)
    one_line_error(r, *needles)
    assert not (files / "report").exists()


def test_a_sweep_point_past_a_day_is_refused_before_any_point_runs(veil_cli, files):
    write(files / "big.toml", 'experiment = "memnet.memsys"\n[base]\ncpus = 2\n'
                              '[grid]\nrequests_per_cpu = [10, 100000000000]\n')
    r = veil_cli("sweep", "big.toml", "--jobs", "1")
    one_line_error(r, "point 1", "more than a day")
    assert "computed" not in r.out


def test_the_cost_estimate_is_a_lower_bound_that_force_skips():
    import veil
    from veil.core.errors import ConfigError
    from veil.memnet.memsys import MemSysConfig, memsys_cost

    seconds, how = memsys_cost(MemSysConfig(requests_per_cpu=10**12, cpus=16))
    assert seconds == 10**12 * 16 * 1e-6 and "x cpus = 16" in how
    assert memsys_cost(MemSysConfig())[0] < 1.0  # the default run is a fraction of a second
    with pytest.raises(ConfigError, match="more than a day"):
        veil.run("memnet.memsys", {"requests_per_cpu": 10**12}, store=False)


# Item 5: messages that pointed the wrong way.
@pytest.mark.parametrize("args, needles", [
    (["trace", "stats", "adir"], ["adir: is a directory, expected a trace file"]),
    (["run", "memnet.nosuch_exp"], ["unknown experiment 'memnet.nosuch_exp'; memnet's experiments:",
                                    "memnet.latency_load", "no file memnet.nosuch_exp"]),
    (["list", "memnet.nosuch"], ["unknown experiment 'memnet.nosuch'; memnet's experiments:"]),
    (["run", "m.toml", "traffic=hotspot", "hotspots=[-1]"], ["hotspots.0:", "greater than or equal to 0"]),
    (["run", "t.toml", "power_cap_mw=0.001"], ["power_cap_mw = 0.001: no design draws this little power"]),
    (["run", "c.toml", "experiment=crypto.nosuch"], ["unknown experiment 'crypto.nosuch'; crypto's experiments:"]),
])
def test_messages_name_the_real_problem(veil_cli, files, args, needles):
    r = veil_cli(*args)
    one_line_error(r, *needles)
    assert "no such file" not in r.err and "expected usize" not in r.err and "0.0 mW" not in r.err


def test_an_unknown_experiment_override_is_a_short_line(veil_cli, files):
    r = veil_cli("run", "c.toml", "experiment=nosuch")
    one_line_error(r, "unknown experiment 'nosuch'", "systems:")
    assert len(r.err) < 250, len(r.err)


# Item 7: no command overwrites an input, a store, a config or a trace.
def _store_with_one_result(veil_cli, store_path):
    assert veil_cli("run", "c.toml").rc == 0
    assert sqlite3.connect(store_path).execute("select count(*) from results").fetchone()[0] == 1


@pytest.mark.parametrize("args, needles", [
    (["results", "export", "--out", "{store}"], ["--out", "own input"]),
    (["results", "export", "--out", "other.sqlite"], ["is a results store (SQLite)"]),
    (["run", "c.toml", "--json", "c.toml"], ["--json c.toml", "own input"]),
    (["run", "c.toml", "--json", "m.toml"], ["--json m.toml: is a config file"]),
    (["run", "c.toml", "--json", "{store}"], ["own input"]),
    (["sweep", "s.toml", "--json", "s.toml"], ["--json s.toml", "own input"]),
    (["leak", "configs/leak/oram.toml", "--json", "configs/leak/oram.toml"], ["own input"]),
    (["bench", "crypto", "--json", "c.toml"], ["--json c.toml: is a config file"]),
    (["bench", "crypto", "--json", "x.vtr"], ["--json x.vtr: is a Veil trace"]),
    (["plot", "s.toml", "--x", "seed", "--y", "chi2_p", "--out", "s.toml"], ["unknown figure format"]),
    (["trace", "run", "mcf", "--out", "x.vtr"], ["--out x.vtr: is a Veil trace"]),
])
def test_no_command_overwrites_an_input_store_config_or_trace(veil_cli, files, store_path, args, needles):
    _store_with_one_result(veil_cli, store_path)
    import shutil

    shutil.copy(store_path, files / "other.sqlite")
    write(files / "x.vtr", "VEILTRC\0" + "rest of a trace")
    (files / "configs" / "leak").mkdir(parents=True)
    import pathlib

    repo = pathlib.Path(__file__).resolve().parents[2]
    shutil.copy(repo / "configs" / "leak" / "oram.toml", files / "configs" / "leak" / "oram.toml")
    before = {p: p.read_bytes() for p in [files / "c.toml", files / "s.toml", files / "m.toml", files / "x.vtr",
                                          files / "other.sqlite", store_path, files / "configs/leak/oram.toml"]}
    r = veil_cli(*[a.replace("{store}", str(store_path)) for a in args])
    one_line_error(r, *needles)
    assert all(p.read_bytes() == b for p, b in before.items())


# Item 6: results at a glance.
def test_results_list_shows_each_headline_and_a_sweep_ends_with_a_table(veil_cli, files):
    r = veil_cli("sweep", "s.toml", "--jobs", "1")
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["config", "seed"])
    assert lines[header].split()[2] == "chi2"
    assert len(lines[header + 1:header + 8]) == 7 and all(len(x.split()) == 3 for x in lines[header + 1:header + 8])
    r = veil_cli("sweep", "s.toml", "--jobs", "1", "grid.seed=[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22]")
    assert "... and 2 more (--table shows all" in r.out
    r = veil_cli("sweep", "s.toml", "--jobs", "1", "--table",
                 "grid.seed=[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22]")
    assert "more (--table" not in r.out and "22 points: 0 computed, 22 cached" in r.out
    assert sum(1 for x in r.out.splitlines() if x.startswith("  ") and len(x.split()) == 3) == 23  # header + 22
    r = veil_cli("results", "list")
    rows = [x for x in r.out.splitlines() if x.startswith("  ") and "seed=" in x]
    assert len(rows) == 22 and all("chi2=" in x for x in rows), r.out


def test_results_show_of_many_summarises_and_all_shows_each(veil_cli, files):
    assert veil_cli("sweep", "s.toml", "--jobs", "1").rc == 0
    r = veil_cli("results", "show", "--experiment", "crypto.pad_randomness")
    assert r.rc == 0 and r.out.startswith("7 results;") and len(r.out.splitlines()) == 9, r.out
    full = veil_cli("results", "show", "--experiment", "crypto.pad_randomness", "--all")
    assert full.out.count("config:") == 7
    one = veil_cli("results", "show", "--experiment", "crypto.pad_randomness", "seed=3")
    assert one.out.count("config:") == 1


# Item 9: every system the README names is known to `veil list`.
def test_list_knows_every_system_the_readme_names(veil_cli):
    from veil.core.readme import SYSTEMS

    for system in SYSTEMS:
        r = veil_cli("list", system)
        assert r.rc == 0 and r.out.startswith(system), (system, r.err)
    r = veil_cli("list", "leak")
    assert "observer oram.server" in r.out and "veil reproduce leak" in r.out


# Item 3 (the parts in veil.core): a sweep's bar runs its clock during the first point; a
# benchmark's lines come as they are known, with its elapsed time on a terminal between them.
def test_a_sweep_bar_shows_elapsed_time_before_the_first_point_ends(veil_cli, files):
    # a first point of several seconds on a quiet machine (8,000 requests took 0.8 s: too short
    # for the bar's one-second clock to show, so the test failed on a fast machine)
    write(files / "slow.toml", 'experiment = "memnet.memsys"\n[base]\nrequests_per_cpu = 40000\n'
                               '[grid]\nseed = [1, 2]\n')
    r = veil_cli("sweep", "slow.toml", "--jobs", "1", env={"VEIL_PROGRESS": "1"})
    assert r.rc == 0, r.err
    frames = [f for f in r.err.replace("\r", "\n").splitlines() if "0/2 [" in f]
    # tqdm draws "0/2 [MM:SS<?, ?pt/s]": a frame after at least a second at 0 means it ticks
    assert any(int(f.split("0/2 [")[1][3:5]) >= 1 for f in frames), r.err[-800:]


def test_a_benchmark_shows_its_elapsed_time_between_its_lines(monkeypatch, capsys):
    import time

    from veil.core.bench import run_benchmarks
    from veil.core.registry import REGISTRY, load_benchmarks, register_benchmark

    load_benchmarks()
    monkeypatch.setenv("VEIL_PROGRESS", "1")
    monkeypatch.setattr(REGISTRY, "benchmarks", {})

    @register_benchmark("crypto", doc="sleeps", name="sleepy")
    def sleepy(ctx):
        ctx.log("first line")
        time.sleep(3.2)
        ctx.report("x", 1.0, "s")

    run_benchmarks(["crypto"], None)
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "[sleepy] sleeps" and "first line" in out
    assert "[sleepy]: 3 s (no total known yet)" in err.replace("\r", "\n"), err


# Item 2: a pivot of a sweep's own points never averages another config into its cells.
def test_dataframe_of_a_sweep_holds_only_its_points(tmp_path):
    import veil

    store = tmp_path / "s.sqlite"
    spec = {"experiment": "crypto.pad_randomness", "base": {"nbytes": 4096}, "grid": {"seed": [1, 2]}}
    veil.sweep(spec, store=store)
    veil.sweep({**spec, "base": {"nbytes": 8192}}, store=store)  # same seeds, another hidden key
    write(tmp_path / "sw.toml", SWEEP)
    with veil.open_store(store) as st:
        assert len(st.dataframe("crypto.pad_randomness")) == 4
        df = st.dataframe(spec)
        assert sorted(df.seed) == [1, 2] and set(df.nbytes) == {4096}
        assert df.attrs["experiment"] == "crypto.pad_randomness"
        assert "chi2" in set(st.units(spec).column)
        assert sorted(st.dataframe(str(tmp_path / "sw.toml")).seed) == [1, 2]  # a sweep file: seeds 1-7 at 4096
