"""Sampled simulation (`sampling = "sampled"`) against the full sequential run: the IPC estimate of
every suite trace under every scheme is within 1% of the full run's, and its interval covers it;
the same windows give the same result for any thread count and on a Dask cluster; bad sampling
options are one line, exit 2."""

import json
import os

import pytest

from conftest import one_line_error, write
from veil.core.config import validate
from veil.core.runner import compute
from veil.memcrypt.sampled import half_width
from veil.memcrypt.workloads import traced_workloads

NO_SPEC = {"ct_speculation": False, "mac_speculation": False, "reorder": False}
SCHEMES = {
    "unprotected": {"encryption": False},
    "aes_base": {"cipher": "aes256", **NO_SPEC},
    "aes_spec": {"cipher": "aes256"},
    "tdes_base": {"cipher": "tdes", **NO_SPEC},
    "tdes_spec": {"cipher": "tdes"},
    "ctr_base": {"mode": "counter", "cipher": "aes256", **NO_SPEC},
    "ctr_mac": {"mode": "counter", "cipher": "aes256", "ct_speculation": False},
}
# Every record of each trace after 100,000 of warm-up (a window's error shrinks with the records it
# is drawn from: at 500,000 records the spread over seeds was 0.4-0.5% on bzip2, mgrid and python,
# and a freshly traced bzip2 missed 1% by 0.23 points). At 99.99% confidence the 1% target leaves
# a standard error of 0.26% at most, so an error above 1% is a 3.9-sigma event; the interval must
# cover the full run at that confidence too. The decoded records of a workload stay cached in the
# process between its schemes.
REGION = {"max_records": 4_000_000, "warmup_records": 100_000}
# At the default spacing (a window per 1,500 records) a sampled run costs more CPU than the full run
# and is the full run (the cost rule): the windows here are one per 4,000 records (fewer on a
# short trace, 8 at least), and a second pass only as far as the full run's cost allows.
ACCURACY = {"sample_confidence": 0.9999, "sample_target": 0.01}


def run(**kw) -> dict:
    result, _ = compute("memcrypt.run", validate("memcrypt.run", kw).model_dump(mode="json"))
    return result


needs_traces = pytest.mark.skipif(not os.environ.get("VEIL_TRACE_CACHE") and not traced_workloads(),
                                  reason="no traced suite (the trace foundation is absent)")


@needs_traces
@pytest.mark.parametrize("workload", traced_workloads())
def test_sampled_ipc_is_within_one_percent_and_its_interval_covers_the_full_run(workload):
    for name, scheme in SCHEMES.items():
        full = run(workload=workload, **REGION, **scheme)
        spacing = max(400, min(4000, full["records"] // 8))
        s = run(workload=workload, sampling="sampled", sample_interval=spacing, **REGION, **ACCURACY, **scheme)
        what = f"{workload}/{name}: full {full['ipc']:.4f}, sampled {s['ipc']:.4f} [{s['ipc_low']:.4f}, {s['ipc_high']:.4f}]"
        assert s["records"] == full["records"] and s["insts"] == full["insts"], what
        # Within 1% where the interval met the target; where the cost rule stopped the second pass
        # short, the interval says how unsure the estimate is, and it must still cover the full run.
        assert abs(s["ipc"] / full["ipc"] - 1) <= 0.01 or not s["sample_target_met"], what
        assert s["ipc_low"] <= full["ipc"] <= s["ipc_high"], what
        assert s["ipc_low"] < s["ipc"] < s["ipc_high"], what
        assert s["sampling_used"] == "sampled" and s["sample_windows"] >= 8, what
        assert 400 <= s["sample_interval_used"] <= spacing, what
        assert (half_width(s) <= 0.01) == s["sample_target_met"], what
        assert s["sample_cost"] <= s["full_cost"], what


def test_results_do_not_depend_on_threads_and_a_dask_cluster_gives_the_same():
    cfg = {"workload": "synthetic-pointer", "max_records": 60_000, "warmup_records": 5_000, "sampling": "sampled",
           "sample_interval": 4000}
    one = run(**cfg, threads=1)
    assert one["sampling_used"] == "sampled"
    assert one == run(**cfg, threads=2) == run(**cfg, threads=7)
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster:
        assert run(**cfg, scheduler=cluster.scheduler_address) == one


def test_sampled_synthetic_stream_tracks_the_full_run():
    cfg = {"workload": "synthetic-stream", "max_records": 200_000, "warmup_records": 20_000, "cipher": "tdes"}
    # A window per 4,000 records (at the default 1,500 the run would be the full one: cost rule).
    full, s = run(**cfg), run(**cfg, sampling="sampled", sample_interval=4000)
    assert s["sampling_used"] == "sampled"
    assert abs(s["ipc"] / full["ipc"] - 1) <= 0.01 and s["ipc_low"] <= full["ipc"] <= s["ipc_high"]
    # Exact totals from the functional pass; counts expanded from the windows stay close.
    assert (s["load_fills"], s["writebacks"]) == (full["load_fills"], full["writebacks"])
    assert s["fv_predictability"] == pytest.approx(full["fv_predictability"], rel=0.05)


def test_a_wide_first_interval_asks_for_windows_closer_together(monkeypatch):
    from veil.memcrypt import sampled

    # Reading and warming a record nearly free: the cost rule leaves room for any second pass.
    monkeypatch.setattr(sampled, "COST_DECODE", 0.001)
    monkeypatch.setattr(sampled, "COST_FUNCTIONAL", 0.001)
    monkeypatch.setattr(sampled, "COST_FORK", 1.0)
    cfg = {"workload": "synthetic-pointer", "max_records": 60_000, "warmup_records": 5_000, "sampling": "sampled"}
    first = run(**cfg, sample_target=0)
    assert first["sample_interval_used"] == 1500
    hw = (first["ipc_high"] - first["ipc_low"]) / 2 / first["ipc"]
    # A target of 1/1.3 of the first half-width: 1.3^2 = 1.69 times as many windows at least
    # (SMARTS's n ~ 1/e^2), and a narrower interval.
    tuned = run(**cfg, sample_target=hw / 1.3)
    assert 400 < tuned["sample_interval_used"] <= 1500 / 1.69, tuned["sample_interval_used"]
    assert tuned["sample_windows"] > 1.69 * first["sample_windows"]
    assert tuned["ipc_high"] - tuned["ipc_low"] < first["ipc_high"] - first["ipc_low"]
    assert tuned["sampled_records"] == (first["sample_windows"] + tuned["sample_windows"]) * 400
    # A target the first windows meet takes no second pass.
    assert run(**cfg, sample_target=2 * hw) == first


def test_the_cost_rule_counts_decoding_warming_and_windows(monkeypatch):
    from veil.memcrypt import sampled

    monkeypatch.setattr(sampled, "COST_DECODE", 0.5)
    monkeypatch.setattr(sampled, "COST_FUNCTIONAL", 0.25)
    monkeypatch.setattr(sampled, "COST_FORK", 10.0)
    # Full: 1,100 records decoded, 100 warmed, 1,000 timed. A pass: 1,100 decoded and warmed,
    # 10 windows of 50 records timed, each forked.
    assert sampled.full_cost(1000, 100) == 1100 * 0.5 + 100 * 0.25 + 1000
    assert sampled.pass_cost(1000, 100, 10, 50) == 1100 * 0.75 + 10 * (50 + 10)


def test_a_sampled_run_that_would_cost_as_much_as_the_full_run_is_the_full_run():
    # The default spacing (a 400-record window per 1,500 records): by the measured costs a pass
    # costs 1.85 timed steps per record against the full run's 1.35.
    cfg = {"workload": "synthetic-pointer", "max_records": 20_000, "warmup_records": 2_000}
    s = run(**cfg, sampling="sampled")
    assert s["sampling_used"].startswith("full") and s["sample_cost"] >= s["full_cost"]
    assert s["ipc"] == run(**cfg)["ipc"] and s["ipc_low"] == s["ipc_high"] == s["ipc"]


def test_no_sampled_run_costs_more_than_the_full_run():
    # A window per 4,000 records: under ever tighter targets each second pass is sized by what
    # the full run's cost leaves after the first, or skipped (the target then reported as not met).
    from veil.memcrypt import sampled

    cfg = {"workload": "synthetic-pointer", "max_records": 60_000, "warmup_records": 5_000, "sampling": "sampled",
           "sample_interval": 4000}
    first = sampled.pass_cost(60_000, 5_000, sampled.window_count(60_000, validate("memcrypt.run", cfg), 4000), 400)
    assert first < sampled.full_cost(60_000, 5_000)
    for target in (0.05, 0.01, 0.002, 0.0005):
        s = run(**cfg, sample_target=target)
        assert s["sampling_used"] == "sampled" and s["sample_cost"] <= s["full_cost"], (target, s["sample_cost"])
        if s["sample_interval_used"] < 4000:
            assert s["sample_cost"] == first + sampled.pass_cost(60_000, 5_000, s["sample_windows"], 400)
        else:
            assert s["sample_cost"] == first
            assert s["sample_target_met"] == (sampled.half_width(s) <= target)


def test_the_second_pass_is_the_closest_the_budget_allows(monkeypatch):
    from veil.memcrypt import sampled

    monkeypatch.setattr(sampled, "COST_DECODE", 0.05)
    monkeypatch.setattr(sampled, "COST_FUNCTIONAL", 0.05)
    cfg = validate("memcrypt.run", {"workload": "synthetic-pointer", "max_records": 60_000, "sampling": "sampled"})
    n, w = 60_000, 400

    def cost(i):
        return sampled.pass_cost(n, 0, sampled.window_count(n, cfg, i), w)

    # A budget between the passes at 700 and at 1000 records per window: the shortest interval
    # that fits, from the exact window counts.
    budget = (cost(700) + cost(1000)) / 2
    got = sampled.second_pass_interval(450, 1500, budget, n, 0, cfg)
    assert got is not None and 700 < got < 1000 and cost(got) <= budget < cost(got - 1)
    assert sampled.second_pass_interval(450, 1500, cost(450), n, 0, cfg) == 450
    # Less than reading the records again: no second pass.
    assert sampled.second_pass_interval(450, 1500, n * 0.1 - 1, n, 0, cfg) is None


def test_tuned_interval_follows_the_square_of_the_half_width():
    from veil.memcrypt.sampled import tuned_interval

    est = {"ipc": 1.0, "ipc_low": 0.98, "ipc_high": 1.02}
    assert tuned_interval(est, 1500, 600, 0.03) is None
    assert tuned_interval(est, 1500, 600, 0.0) is None
    assert abs(tuned_interval(est, 12000, 600, 0.01) - 12000 / 4 * 0.9) <= 1
    assert tuned_interval(est, 1500, 600, 0.001) == 600  # never closer than a window


@pytest.mark.parametrize("override, needle", [
    ("sample_window=50", "sample_window"),        # shorter than its warm-up (100)
    ("sample_window=100", "sample_window"),       # no measured record left
    ("sample_interval=399", "sample_interval"),   # shorter than a window
    ("sample_interval=200000", "sample_interval"),  # leaves no window of 50,000 records
    ("threads=0", "threads"),
    ("threads=1025", "threads"),
    ("sampling=some", "sampling"),
    ("sample_confidence=1.5", "sample_confidence"),
    ("sample_target=-0.1", "sample_target"),
    ("sample_target=1", "sample_target"),
])
def test_bad_sampling_is_one_line_exit_2(veil_cli, tmp_path, override, needle):
    write(tmp_path / "c.toml", 'experiment = "memcrypt.run"\nsampling = "sampled"\nmax_records = 50000\n')
    one_line_error(veil_cli("run", "c.toml", override), needle)


def test_a_trace_shorter_than_its_windows_is_one_line_exit_2(veil_cli, tmp_path):
    from veil import _native

    synth = json.dumps({"records": 6000, "footprint_lines": 2048, "cache_lines": 128})
    _native.memcrypt.write_synth_trace(str(tmp_path / "t.vtrace"), 64, synth)
    # 3,000 timed records after the warm-up (half the trace): fewer than 8 windows of 1,500.
    write(tmp_path / "c.toml", 'experiment = "memcrypt.run"\ntrace = "t.vtrace"\nsampling = "sampled"\n'
                               'max_records = 100000\n')
    one_line_error(veil_cli("run", "c.toml"), "sample_interval", "window")


def test_check_refuses_sampling(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "memcrypt.check"\nsampling = "sampled"\n')
    one_line_error(veil_cli("run", "c.toml"), "sampling")


def test_the_t_quantile_is_the_tabulated_one_at_few_degrees_of_freedom():
    from veil.memcrypt.sampled import t_quantile

    # Student's t tables (two-sided 95%, 99%, 99.9%) and the 99.99% quantile at 5 degrees of
    # freedom, where the Cornish-Fisher expansion alone gave 10.50: the interval of a run of few
    # windows rests on these.
    for p, df, tab in ((0.975, 1, 12.706), (0.975, 5, 2.571), (0.995, 10, 3.169), (0.9995, 7, 5.408),
                       (0.99995, 5, 11.178), (0.975, 120, 1.980)):
        assert t_quantile(p, df) == pytest.approx(tab, abs=1e-3), (p, df)
