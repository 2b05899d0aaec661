"""Issue 11: bad input is one line and exit 2 before any work; options anywhere; a browsable
store; plots of any sweep; planned systems."""

from __future__ import annotations

import json

import pytest

from conftest import one_line_error, write

RUN = 'experiment = "crypto.pad_randomness"\nnbytes = 4096\n'
SWEEP = 'experiment = "crypto.pad_randomness"\n[base]\nnbytes = 4096\n[grid]\nseed = [1, 2, 3]\n'
MEMNET = 'experiment = "memnet.latency_load"\nmode = "fixed"\nwarmup_cycles = 100\nmeasure_cycles = 1000\n'


@pytest.fixture
def files(tmp_path):
    write(tmp_path / "c.toml", RUN)
    write(tmp_path / "s.toml", SWEEP)
    write(tmp_path / "m.toml", MEMNET)
    write(tmp_path / "blocker", "a file where a folder should be")
    return tmp_path


@pytest.mark.parametrize("args, needles", [
    (["run", "c.toml", "--json", "blocker/out.json"], ["--json blocker/out.json", "not a directory"]),
    (["sweep", "s.toml", "--json", "blocker/out.json"], ["--json blocker/out.json"]),
    (["results", "export", "--out", "blocker/r.csv"], ["--out blocker/r.csv"]),
    (["reproduce", "crypto", "--out", "blocker/report"], ["--out blocker/report"]),
    (["bench", "crypto", "--json", "blocker/b.json"], ["--json blocker/b.json"]),
    (["plot", "s.toml", "--x", "seed", "--y", "chi2_p", "--out", "fig.bmp"], ["unknown figure format '.bmp'"]),
    (["memnet", "latency-load", "m.toml", "--out", "fig.jpeg"], ["--out fig.jpeg: unknown figure format"]),
    (["memnet", "latency-load", "m.toml", "--out", "blocker/f.png"], ["--out blocker/f.png", "not a directory"]),
    (["run", "/dev/zero"], ["/dev/zero: not a regular file"]),
    (["run", "c.toml", "nbytes=inf"], ["nbytes:", "finite"]),
    (["run", "c.toml", "nbytes=true"], ["nbytes: expected a number, got the boolean true"]),
    (["run", "m.toml", "a.b.c=1"], ["override 'a.b.c=1': a is a value, not a table"]),
    (["run", "m.toml", "num_vcs=true"], ["num_vcs: expected a number"]),
    (["run", "m.toml", "rate=1.5"], ["rate:", "less than or equal to 1"]),
    (["run", "m.toml", "latency_threshold=inf"], ["latency_threshold:", "finite"]),
    (["run", "s.toml"], ["a sweep file", "use `veil sweep s.toml`"]),
    (["sweep", "c.toml"], ["a run config", "use `veil run c.toml`"]),
    (["results", "list", "--experiment", "nosuch"], ["unknown experiment 'nosuch'"]),
    (["results", "show", "999"], ["no result with ID or config hash '999'"]),
])
def test_bad_input_is_one_line_exit_2(veil_cli, files, args, needles):
    r = veil_cli(*args)
    one_line_error(r, *needles)
    assert not (files / "out.json").exists() and "computed" not in r.out  # refused before any work


def test_oversized_config_and_he_zero_size(veil_cli, files):
    write(files / "big.toml", "# " + "x" * (5 << 20) + "\n" + RUN)
    one_line_error(veil_cli("run", "big.toml"), "too large for a config")
    write(files / "h.toml", 'experiment = "he.macs_per_mb"\nsizes = [0]\n')
    one_line_error(veil_cli("run", "h.toml"), "sizes.0:", "greater than or equal to 1")


def test_inf_inside_a_list_names_the_field(veil_cli, files):
    write(files / "hot.toml", 'experiment = "memnet.latency_load"\nhotspot_fraction = nan\n')
    one_line_error(veil_cli("run", "hot.toml"), "hotspot_fraction:", "finite")


def test_options_anywhere(veil_cli, files):
    r = veil_cli("run", "c.toml", "--store", str(files / "x.sqlite"), "seed=5", "--json", "o.json", "nbytes=8192")
    assert r.rc == 0, r.err
    rec = json.loads((files / "o.json").read_text())
    assert rec["config"]["seed"] == 5 and rec["config"]["nbytes"] == 8192
    assert (files / "x.sqlite").exists()
    one_line_error(veil_cli("run", "c.toml", "--store", "x.sqlite", "stray"), "unrecognized arguments: stray")


def test_run_prints_its_config_in_the_same_order_fresh_or_cached(veil_cli, files):
    fresh = veil_cli("run", "m.toml", "k=4", "seed=9")
    cached = veil_cli("run", "m.toml", "k=4", "seed=9")
    assert fresh.rc == 0 and "(cached)" in cached.out.splitlines()[0]

    def config_block(out: str) -> list[str]:
        lines = out.splitlines()
        return lines[lines.index(next(x for x in lines if x.startswith("config"))):lines.index("result:")]

    block = config_block(fresh.out)
    assert block == config_block(cached.out)
    keys = [line.split()[0] for line in block[1:]]
    assert keys == ["seed", "k", "mode", "warmup_cycles", "measure_cycles"]  # declaration order


    def result_keys(out: str) -> list[str]:
        lines = out.splitlines()
        return [x.split()[0] for x in lines[lines.index("result:") + 1:]]

    assert result_keys(fresh.out) == result_keys(cached.out)  # the store kept the experiment's order
    assert result_keys(fresh.out) != sorted(result_keys(fresh.out))


def test_a_newcomers_small_things(veil_cli, files):
    r = veil_cli("run", "memnet.latency_load", "mode=fixed", "warmup_cycles=10", "measure_cycles=100", "k=4")
    assert r.rc == 0, r.err  # an experiment's name runs its defaults, no file needed
    assert r.out.startswith("memnet.latency_load ") and "  k " in r.out
    one_line_error(veil_cli("run", "memnet.nosuch", "k=4"), "unknown experiment 'memnet.nosuch'")
    listed = veil_cli("list", "memnet.memsys")
    assert listed.rc == 0 and "hot_modules" in listed.out and "runtime_cycles" in listed.out
    assert "latency_load" not in listed.out  # that experiment only
    for cmd, needle in (("run", "dotted for nested tables"), ("sweep", "base.KEY=V"), ("sweep", "VEIL_PROGRESS"),
                        ("reproduce", "one per core")):
        assert needle in " ".join(veil_cli(cmd, "--help").out.split()), (cmd, needle)
    one_line_error(veil_cli("sweep", "s.toml", "nbytes=8192"), "nbytes: unknown key", "base.nbytes=")


def test_results_list_show_filter_delete(veil_cli, files):
    assert veil_cli("sweep", "s.toml", "--jobs", "1").rc == 0
    listed = veil_cli("results", "list")
    assert "differing: seed" in listed.out and "seed=2" in listed.out and "3 results" in listed.out
    only = veil_cli("results", "list", "seed=2")
    assert "1 results" in only.out and "seed=2" in only.out
    one_line_error(veil_cli("results", "list", "sede=2"), "filter 'sede'")
    row = next(line for line in only.out.splitlines() if "seed=2" in line)
    rid, chash = row.split()[:2]
    shown = veil_cli("results", "show", rid)
    assert shown.rc == 0 and f"config {chash}" in shown.out and "nbytes" in shown.out and "chi2_p" in shown.out
    assert veil_cli("results", "show", chash[:8]).out == shown.out
    gone = veil_cli("results", "delete", rid)
    assert gone.rc == 0 and "deleted 1 results" in gone.out
    assert "2 results" in veil_cli("results", "list").out
    again = veil_cli("sweep", "s.toml", "--jobs", "1")
    assert "1 computed, 2 cached" in again.out


def test_plot_a_sweep_and_an_experiment(veil_cli, files):
    pytest.importorskip("matplotlib")
    one_line_error(veil_cli("plot", "s.toml", "--x", "seed", "--y", "chi2_p"), "none of its 3 points", "veil sweep")
    assert veil_cli("sweep", "s.toml", "--jobs", "1").rc == 0
    for ext in ("png", "svg", "pdf"):
        r = veil_cli("plot", "s.toml", "--x", "seed", "--y", "chi2_p", "--hue", "nbytes", "--out", f"f.{ext}")
        assert r.rc == 0, r.err
        assert "3 points" in r.out and (files / f"f.{ext}").stat().st_size > 1000
    assert (files / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert (files / "f.pdf").read_bytes()[:4] == b"%PDF"
    r = veil_cli("plot", "crypto.pad_randomness", "seed=2", "--x", "seed", "--y", "result.ones_fraction",
                 "--out", "one.png")
    assert r.rc == 0 and "1 points" in r.out, r.err
    one_line_error(veil_cli("plot", "s.toml", "--x", "sede", "--y", "chi2_p"), "--x sede: not a key", "seed")


def test_planned_systems(veil_cli):
    from veil.core.registry import PLANNED, REGISTRY

    assert "memcrypt" in PLANNED
    for name in REGISTRY.planned():  # until the system lands and registers
        r = veil_cli("list", name)
        assert r.rc == 0 and f"{name}: planned" in r.out
    for name in set(PLANNED) - set(REGISTRY.planned()):  # landed: listed like any other
        r = veil_cli("list", name)
        assert r.rc == 0 and "planned" not in r.out and r.out.startswith(name)
    one_line_error(veil_cli("list", "nosuch"), "unknown system 'nosuch'", "planned: ")


def test_a_system_that_registers_stops_being_planned():
    from veil.core.registry import PLANNED, REGISTRY, register_component

    PLANNED["testplanned"] = "a test system"
    try:
        assert "testplanned" in REGISTRY.planned()
        register_component("testplanned.kind", "x", doc="now built")  # registers from this module...
        from veil.core.registry import Component

        REGISTRY.components["testplanned.kind"]["x"] = Component("testplanned.kind", "x", "now built", "testplanned")
        assert "testplanned" not in REGISTRY.planned()
    finally:
        PLANNED.pop("testplanned")
        REGISTRY.components.pop("testplanned.kind", None)


def test_sweep_with_one_job_reports_a_failing_point_and_goes_on(veil_cli, files):
    write(files / "dl.toml", 'experiment = "memnet.latency_load"\n[base]\ntopology = "torus"\nk = 8\nn = 1\n'
                             'num_vcs = 1\nvc_buf_size = 2\nvc_classes = false\npacket_size = 8\nmode = "fixed"\n'
                             'warmup_cycles = 100\nmeasure_cycles = 3000\nwatchdog_cycles = 2000\n'
                             '[zip]\nrate = [0.05, 0.9, 0.06]\n')
    for jobs in ("1", "2"):
        r = veil_cli("sweep", "dl.toml", "--jobs", jobs, "--force")
        assert r.rc == 1
        assert "point 1 failed: memnet: deadlock" in r.err
        assert "2 computed" in r.out and "1 failed" in r.out


def test_settings_not_honoured_and_saturation_are_reported(veil_cli, files):
    r = veil_cli("run", "m.toml", "traffic=hotspot", "rng=booksim", "rate=0.6")
    assert r.rc == 0, r.err
    assert "[SATURATED]" in r.out.splitlines()[0] and "<- SATURATED" in r.out
    err = r.err.strip().splitlines()
    assert any("rng='booksim' is not honoured" in e and "hotspot" in e for e in err), r.err
    assert any(e.startswith("veil: warning: saturated at offered load 0.6") for e in err), r.err
    cached = veil_cli("run", "m.toml", "traffic=hotspot", "rng=booksim", "rate=0.6")
    assert cached.err == r.err  # a cached result repeats its warnings
    quiet = veil_cli("run", "m.toml", "rate=0.05", "rng=booksim")
    assert quiet.rc == 0 and quiet.err == "" and "SATURATED" not in quiet.out
    write(files / "sat.toml", MEMNET.replace("experiment", "[base]\nexperiment").replace(
        '[base]\nexperiment = "memnet.latency_load"\n', 'experiment = "memnet.latency_load"\n[base]\n')
        + "[grid]\nrate = [0.05, 0.7]\n")
    sw = veil_cli("sweep", "sat.toml", "--jobs", "1")
    assert sw.rc == 0 and "1 with warnings" in sw.out and "saturated at offered load 0.7" in sw.err


def test_every_experiment_documents_its_result_fields():
    from veil.core.registry import REGISTRY, load_systems

    load_systems()
    for name, exp in REGISTRY.experiments.items():
        if name.startswith("test"):
            continue
        assert exp.results, f"{name}: register_experiment(..., results={{field: (unit, doc)}}) missing"
        for key, (unit, doc) in exp.results.items():
            assert isinstance(unit, str) and doc, (name, key)


@pytest.mark.parametrize("experiment, config", [
    ("memnet.latency_load", {"mode": "fixed", "warmup_cycles": 100, "measure_cycles": 1000, "histogram": True,
                             "channel_detail": True, "rate": 0.9}),
    ("crypto.pad_randomness", {"nbytes": 4096}),
    ("crypto.throughput", {"min_seconds": 0.01, "size": 1024}),
    ("enclave.server", {"requests": 64}),
    ("oram.access", {"n_blocks": 64, "block_size": 1024, "accesses": 20}),
    ("he.taco", {}),
    ("memcrypt.run", {"workload": "synthetic-pointer", "max_records": 20000}),
    ("memcrypt.check", {"workload": "synthetic-pointer", "max_records": 2000}),
    ("memnet.memsys", {"workload": "uniform", "requests_per_cpu": 200, "encryption": "source_otp",
                       "functional": True}),
])
def test_every_returned_result_field_is_documented(experiment, config):
    from veil.core.registry import REGISTRY
    from veil.core.runner import compute
    from veil.core.store import flatten

    result, _ = compute(experiment, config)
    exp = REGISTRY.experiment(experiment)
    missing = [k for k in flatten("", result, {}) if exp.result_doc(k) is None]
    assert not missing, f"{experiment}: undocumented result fields {missing}"


def test_list_shows_result_fields_with_units(veil_cli):
    r = veil_cli("list", "crypto")
    assert r.rc == 0
    assert "gb_per_s (GB/s):" in r.out and "gbps" not in r.out
    m = veil_cli("list", "memnet")
    assert "avg_packet_latency (cycles):" in m.out and "accepted_flits_per_node_cycle (flits/node/cycle)" in m.out


def test_run_prints_units(veil_cli, files):
    r = veil_cli("run", "m.toml")
    row = next(line for line in r.out.splitlines() if line.split()[:1] == ["avg_packet_latency"])
    assert row.split()[-1] == "cycles"


@pytest.mark.parametrize("config, unit, short", [
    ('experiment = "memnet.latency_load"\nmode = "fixed"\nwarmup_cycles = 0\nmeasure_cycles = 200000\n', "cycles",
     "measure_cycles=20000"),
    ('experiment = "enclave.server"\nrequests = 10000\n', "requests", "requests=2000"),
    ('experiment = "crypto.throughput"\nsize = 4096\nmin_seconds = 3\n', "ms", "min_seconds=0.1"),
    ('experiment = "memnet.memsys"\nrequests_per_cpu = 20000\n', "records", "requests_per_cpu=100"),
    ('experiment = "memcrypt.run"\nworkload = "synthetic-pointer"\nmax_records = 2000000\nwarmup_records = 1000\n',
     "records", "max_records=1000"),
    pytest.param('experiment = "he.digits"\nimages = 6\n', "images", None, marks=pytest.mark.slow),
])
def test_long_single_runs_show_progress_with_an_eta(veil_cli, tmp_path, config, unit, short):
    write(tmp_path / "long.toml", config)
    r = veil_cli("run", "long.toml", env={"VEIL_PROGRESS": "1"})  # as on a terminal
    assert r.rc == 0, r.err
    frames = [f for f in r.err.replace("\r", "\n").splitlines() if f" {unit}" in f and "%|" in f]
    assert frames, r.err
    assert any("<" in f for f in frames)  # elapsed<remaining: an ETA
    never = veil_cli("run", "long.toml", "--force", env={"VEIL_PROGRESS": "0"})
    assert never.rc == 0 and never.err == ""  # VEIL_PROGRESS=0: never drawn
    if short is not None:
        quiet = veil_cli("run", "long.toml", short)
        assert quiet.rc == 0 and quiet.err == ""  # not a terminal: nothing drawn


def test_memnet_leak_shows_progress_and_honours_store(veil_cli, tmp_path):
    write(tmp_path / "leak.toml", 'experiment = "memnet.leak"\n')
    r = veil_cli("memnet", "leak", "leak.toml", "--store", "mine.sqlite", env={"VEIL_PROGRESS": "1"})
    assert r.rc == 0, r.err
    # the bar counts runs against the honest total (2 x 13 repeats), and ends at it
    frames = [f for f in r.err.replace("\r", "\n").splitlines() if " runs" in f and "%|" in f]
    assert frames and all("/26" in f for f in frames), r.err
    assert any("26/26" in f or "26.0/26.0" in f for f in frames), r.err
    assert (tmp_path / "mine.sqlite").exists() and not (tmp_path / ".veil").exists()
    cached = veil_cli("memnet", "leak", "leak.toml", "--store", "mine.sqlite")
    assert cached.rc == 0 and cached.err == "" and cached.out == r.out  # read back, nothing drawn in a pipe


def test_a_big_sweep_shows_progress_while_it_validates(veil_cli, files):
    seeds = ", ".join(str(i) for i in range(1, 12000)) + ", -1"  # the last point is bad
    write(files / "big.toml", f'experiment = "crypto.pad_randomness"\n[base]\nnbytes = 4096\n[grid]\nseed = [{seeds}]\n')
    r = veil_cli("sweep", "big.toml", env={"VEIL_PROGRESS": "1"})
    assert r.rc == 2
    frames = r.err.replace("\r", "\n").splitlines()
    assert any(f.startswith("validating:") and "/12.0k" in f.replace("12000", "12.0k") for f in frames), r.err[-500:]
    assert frames[-1].startswith("veil: error: big.toml: point 11999 (seed=-1): seed:")


# Issue 29: hostile inputs that used to be internal errors (exit 1), serde messages without a
# field, or accepted nonsense. One test per class; each case must be one line, exit 2, naming the
# flag or field.
ENCLAVE = 'experiment = "enclave.server"\nrequests = 8\n'
MEMSYS = 'experiment = "memnet.memsys"\nrequests_per_cpu = 10\n'
MEMCRYPT = 'experiment = "memcrypt.run"\nworkload = "synthetic-pointer"\n'


@pytest.fixture
def systems(files):
    write(files / "e.toml", ENCLAVE)
    write(files / "ms.toml", MEMSYS)
    write(files / "mc.toml", MEMCRYPT)
    write(files / "shift.toml", MEMNET + 'traffic = "shift"\n')
    return files


@pytest.mark.parametrize("args, needles", [
    (["trace", "run", "mcf", "--out", "/proc/x.vtr"], ["--out /proc/x.vtr", "not writable"]),
    (["trace", "stats", "--top", "-3", "nosuch.vtr"], ["--top -3: must be in 1.."]),
    (["oram", "init", "d", "--block-size", "inf", "--blocks", "4"], ["--block-size inf: must be a finite number"]),
    (["oram", "init", "d", "--block-size", "1e30", "--blocks", "4"], ["--block-size 1e30: must be a finite number"]),
    (["oram", "init", "d", "--block-size", "4096", "--blocks", "4", "--redis", "nohost:notaport"],
     ["--redis nohost:notaport: expected HOST:PORT"]),
    (["run", "oram.access", "redis=nohost:notaport"], ["redis: String should match pattern"]),
])
def test_bad_flags_are_one_line_exit_2_before_any_work(veil_cli, systems, args, needles):
    one_line_error(veil_cli(*args), *needles)
    assert not (systems / "d").exists()


@pytest.mark.parametrize("config, override, needles", [
    ("ms.toml", "gb=1000000000000", ["gb:", "less than or equal to"]),
    ("ms.toml", "hot_modules=[-1]", ["hot_modules.0:", "greater than or equal to 0"]),
    ("ms.toml", "secure.hot_modules=[-1]", ["secure.hot_modules.0:"]),
])
def test_out_of_range_integers_name_the_field(veil_cli, systems, config, override, needles):
    one_line_error(veil_cli("run", config, override), *needles)


def test_a_native_serde_error_names_the_field_it_points_at():
    import json as _json

    from veil.core.config import name_serde_error

    text = _json.dumps({"module": {"layers": 4, "gb": 10**12}, "workload": {"hot_modules": [1, -1]}})
    col = text.index("-1") + 2
    assert name_serde_error(f"invalid value: integer `-1`, expected u64 at line 1 column {col}", text) == \
        "workload.hot_modules[1]: invalid value: integer `-1`, expected u64"
    col = text.index(str(10**12)) + 13
    assert name_serde_error(f"expected u32 at line 1 column {col}", text) == "module.gb: expected u32"
    assert name_serde_error("no position here", text) == "no position here"


@pytest.mark.parametrize("config, override, needles", [
    ("m.toml", "histogram=1", ["histogram: expected true or false, got 1"]),
    ("mc.toml", "encryption=yes", ["encryption: expected true or false, got 'yes'"]),
    ("c.toml", 'seed="on"', ["seed:"]),
])
def test_a_flag_takes_only_true_or_false(veil_cli, systems, config, override, needles):
    one_line_error(veil_cli("run", config, override), *needles)


@pytest.mark.parametrize("config, override, needles", [
    ("e.toml", "cores_per_sse=3", ["cores_per_sse (3) must divide tiles (64)"]),
    ("shift.toml", "shift=1000000", ["shift: 1000000 must be below the number of nodes (64)"]),
    ("mc.toml", "cpu_mem_ratio=1e300", ["cpu_mem_ratio:", "less than or equal to 1000"]),
    ("ms.toml", "hot_modules=[999]", ["hot_modules: module(s) [999] do not exist (the network has 64 modules"]),
    ("ms.toml", "hot_modules=[]", ["hot_modules: the hotspot workload needs at least one hot module"]),
    ("ms.toml", "secure.hot_modules=[64]", ["secure.hot_modules: module(s) [64] do not exist"]),
    ("ms.toml", "address_space=1", ["address_space: 1 bytes is less than one 64-byte line per module"]),
])
def test_relations_between_fields_are_checked_before_the_run(veil_cli, systems, config, override, needles):
    if "hot_modules=[" in override and not override.startswith("secure"):
        override = [override, "workload=hotspot"]
    else:
        override = [override]
    r = veil_cli("run", config, *override)
    one_line_error(r, *needles)
    assert "computed" not in r.out and r.out == ""


def test_relations_hold_where_the_values_are_sound(veil_cli, systems):
    assert veil_cli("run", "e.toml", "cores_per_sse=4", "--no-progress").rc == 0
    assert veil_cli("run", "e.toml", "cores_per_sse=3", "sses=21", "--no-progress").rc == 0
    for topo in (["topology=mesh", "routing=dor", "k=4", "hot_modules=[15]"], ["topology=flatfly", "routing=min", "k=3", "hot_modules=[8]"]):
        r = veil_cli("run", "ms.toml", "workload=hotspot", "cpus=4", *topo, "--no-progress")
        assert r.rc == 0, r.err
    assert veil_cli("run", "shift.toml", "shift=63", "measure_cycles=100").rc == 0


def test_a_sweep_with_a_repeated_point_is_refused(veil_cli, files):
    write(files / "dup.toml", 'experiment = "crypto.pad_randomness"\n[base]\nnbytes = 4096\n[grid]\nseed = [1, 2, 1]\n')
    one_line_error(veil_cli("sweep", "dup.toml"), "point 2 (seed=1) is the same config as point 0")
    write(files / "dup2.toml", 'experiment = "crypto.pad_randomness"\n[base]\nseed = 3\n[grid]\nnbytes = [4096]\n'
                               '[zip]\nseed = [3, 3]\n')
    one_line_error(veil_cli("sweep", "dup2.toml"), "point 1 (nbytes=4096, seed=3) is the same config as point 0")


def test_plot_refuses_to_join_points_that_differ_in_a_key_not_on_the_plot(veil_cli, files):
    pytest.importorskip("matplotlib")
    write(files / "mix.toml", 'experiment = "crypto.pad_randomness"\n[grid]\nseed = [1, 2]\nnbytes = [4096, 8192]\n')
    assert veil_cli("sweep", "mix.toml", "--jobs", "1").rc == 0
    one_line_error(veil_cli("plot", "mix.toml", "--x", "seed", "--y", "chi2_p"),
                   "differ in nbytes", "--hue nbytes", "nbytes=4096")
    for fix in (["--hue", "nbytes"], ["nbytes=8192"]):
        r = veil_cli("plot", "mix.toml", "--x", "seed", "--y", "chi2_p", *fix)
        assert r.rc == 0, r.err
    # all results of an experiment: the seeds differ too
    one_line_error(veil_cli("plot", "crypto.pad_randomness", "--x", "nbytes", "--y", "chi2_p"), "differ in seed")


def _trace(path, n: int, damage_last_block: bool = False):
    import numpy as np

    from veil.trace.format import TraceWriter, record_dtype

    header = {"workload": "synthetic", "program": "synthetic", "args": [], "input_hash": "00",
              "l1": {"size": 8192, "assoc": 1}, "llc": {"size": 262144, "assoc": 4}, "line_size": 64,
              "tool_version": "test", "threads": 1, "extra": {}}
    w = TraceWriter(path, header, block_records=1000, codec="lz4")
    if n:
        r = np.zeros(n, record_dtype(64))
        r["addr"] = (np.arange(n) * 7919 % (1 << 20)) * 64
        r["insts"] = 50
        w.write(r)
    w.finish()
    if damage_last_block:
        b = bytearray(path.read_bytes())
        b[-400] ^= 0xFF  # inside the last block's payload, long after the first records
        path.write_bytes(bytes(b))


@pytest.mark.parametrize("config", [
    'experiment = "memcrypt.run"\ntrace = "t.vtrace"\nmax_records = 100\nwarmup_records = 0\nwindow = "start"\n',
    'experiment = "memnet.memsys"\nworkload = "trace"\ntrace = "t.vtrace"\ncpus = 1\nrequests_per_cpu = 100\n',
])
def test_an_empty_or_damaged_trace_input_is_refused(veil_cli, tmp_path, config):
    write(tmp_path / "c.toml", config)
    _trace(tmp_path / "t.vtrace", 5000)
    assert veil_cli("run", "c.toml").rc == 0  # sound: runs, reading only its first records
    _trace(tmp_path / "t.vtrace", 5000, damage_last_block=True)
    one_line_error(veil_cli("run", "c.toml"), "t.vtrace", "corrupt at byte", "CRC")
    _trace(tmp_path / "t.vtrace", 0)
    one_line_error(veil_cli("run", "c.toml"), "t.vtrace: the trace holds no records")
