"""The enclave system through Veil's framework: the experiment, its config, sweeps, CLI errors and
the reproducer's results keys. The model's own mechanisms and the paper's slowdowns are tested in
Rust (crates/veil-enclave/tests/model.rs); here the Python path must carry them faithfully."""

import json
from pathlib import Path

import pytest

from conftest import assert_shapes_covered, assert_verdicts, one_line_error, write
from veil.core import ConfigError
from veil.core.config import validate
from veil.core.runner import compute
from veil.core.sweep import load_spec
from veil.enclave.server import CATEGORIES, ServerConfig, simulate

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs" / "enclave").glob("*.toml"))


def run(**kw) -> dict:
    result, _ = compute("enclave.server", validate("enclave.server", kw).model_dump(mode="json"))
    return result


def test_point_has_flat_metrics_and_consistent_breakdown():
    r = run(model="ex-l", policy="sev", workers=64, requests=128)
    assert r["each_request_once"] and r["requests_completed"] == 128
    total = sum(r[f"time_{c}"] for c in CATEGORIES)
    assert total == pytest.approx(r["mean_worker_cycles"], rel=1e-9)
    # Throughput is requests over the parallel completion time at the configured clock.
    assert r["throughput_krps"] == pytest.approx(128 / (r["completion_cycles"] / 1e9) / 1e3)
    assert r["calls_posted"] == 3 * 128 and r["calls_completed"] == 3 * 128


def test_clock_scales_throughput_not_cycles():
    # Every latency is in cycles; the memory controllers' bandwidth is in GB/s, so the same
    # bytes per cycle at twice the clock needs twice the GB/s.
    a = run(model="sse-hp", workers=16, requests=64)
    b = run(model="sse-hp", workers=16, requests=64, clock_ghz=2.0, controller_gbps=10.0)
    assert a["completion_cycles"] == b["completion_cycles"]
    assert b["throughput_krps"] == pytest.approx(2 * a["throughput_krps"])
    c = run(model="sse-hp", workers=16, requests=64, clock_ghz=2.0)
    assert c["completion_cycles"] > a["completion_cycles"], "5 GB/s is fewer bytes per cycle at 2 GHz"


def test_same_seed_same_result_and_python_matches_native_defaults():
    assert run(model="ex-b", workers=8, requests=32) == run(model="ex-b", workers=8, requests=32)
    from veil import _native

    native = json.loads(_native.enclave.defaults())
    py = ServerConfig().model_dump(mode="json")
    for k, v in native.items():
        assert py[k] == v, k
    assert set(py) == set(native), "Python config and Rust config have the same fields"


def test_bl_ignores_the_exit_policy_and_has_no_enclave_time():
    a = run(model="bl", policy="sgx", workers=8, requests=64)
    b = run(model="bl", policy="sev", workers=8, requests=64)
    assert a["completion_cycles"] == b["completion_cycles"]
    for c in ("pack", "unpack", "polling", "ecall", "ocall", "ctx_switch"):
        assert a[f"time_{c}"] == 0


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_files_validate(path):
    text = path.read_text()
    if "[grid]" in text or "[zip]" in text:
        spec = load_spec(path)
        assert spec.experiment == "enclave.server" and len(spec.configs) >= 3
    else:
        from veil.core.config import load_config

        exp, cfg = load_config(path)
        assert exp == "enclave.server" and isinstance(cfg, ServerConfig)


def test_runtime_rejection_is_a_config_error():
    with pytest.raises(ConfigError, match="workers"):
        simulate({"workers": 100, "tiles": 2})


@pytest.mark.parametrize("override, needle", [
    ("ecall_cycles=-5", "ecall_cycles"),
    ("ctx_switch_ns=-1", "ctx_switch_ns"),
    ("tiles=0", "tiles"),
    ("sses=65", "sses"),
    ("cores_per_sse=0", "cores_per_sse"),
    ("requests=0", "requests"),
    ("model=sse-xl", "enclave.model"),
    ("workers=1000", "workers"),
    ("responder_sleep_us=0.2", "responder_sleep_us"),
])
def test_bad_configuration_is_one_line_exit_2(veil_cli, tmp_path, override, needle):
    write(tmp_path / "c.toml", 'experiment = "enclave.server"\ntiles = 16\nrequests = 8\n')
    one_line_error(veil_cli("run", "c.toml", override), needle)


def test_cli_runs_a_point(veil_cli, tmp_path):
    write(tmp_path / "c.toml", 'experiment = "enclave.server"\nmodel = "sse-nhp"\nworkers = 8\nrequests = 16\n')
    r = veil_cli("run", "c.toml", "--json", "out.json")
    assert r.rc == 0, r.err
    rec = json.loads((tmp_path / "out.json").read_text())
    assert rec["result"]["model"] == "sse-nhp" and rec["result"]["requests_completed"] == 16


@pytest.mark.slow
def test_reproducer_writes_the_results_keys(veil_cli, tmp_path, store_path):
    r = veil_cli("reproduce", "enclave", "--quick", "--out", "rep", "--jobs", "2", timeout=600)
    assert r.rc == 0, r.err[-2000:]
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    for p in ("sgx", "sev"):
        for k in ("exb_slowdown_64w", "exl_slowdown_64w", "exl_zero_ctx_slowdown_64w", "sse_hp_slowdown_64w",
                  "sse_nhp_slowdown_64w", "exl_64w_over_32w", "sse_hp_64w_over_32w", "bl_64w_over_32w"):
            assert f"enclave/{p}/{k}" in res, k
    # A fit that ends at a search bound says so (work_lines_scale sits at its upper bound).
    assert res["enclave/calibration/work_lines_scale_at_bound"] == "upper"
    assert res["enclave/calibration/syscall_scale_at_bound"] == "no"
    # The paper's targets, through the whole Python path.
    assert abs(res["enclave/sgx/exb_slowdown_64w"] - 2.2) <= 0.2
    assert abs(res["enclave/sev/exb_slowdown_64w"] - 1.5) <= 0.15
    assert abs(res["enclave/sgx/exl_slowdown_64w"] - 1.7) <= 0.15
    assert abs(res["enclave/sev/exl_slowdown_64w"] - 1.4) <= 0.1
    assert abs(res["enclave/sgx/exl_zero_ctx_slowdown_64w"] - 1.6) <= 0.15
    assert abs(res["enclave/sev/exl_zero_ctx_slowdown_64w"] - 1.3) <= 0.1
    for p in ("sgx", "sev"):
        assert res[f"enclave/{p}/exl_64w_over_32w"] < res[f"enclave/{p}/sse_hp_64w_over_32w"]
        assert res[f"enclave/{p}/sse_hp_64w_over_32w"] > 1.7
    # Each target says where it comes from and whether it was calibrated (SGX-like) or predicted.
    refs = json.loads((tmp_path / "rep" / "references.json").read_text())
    for p, basis in (("sgx", "calibrated"), ("sev", "predicted (held out)")):
        r = refs[f"enclave/{p}/exl_slowdown_64w"]
        assert r["basis"] == basis and r["source"] == "paper text, Sec. 5.1" and r["verdict"] == "within", r
        g = refs[f"enclave/{p}/exl_64w_over_32w"]
        assert g["verdict"] == ("holds" if g["value"] < 1 else "fails"), "a missed decrease is reported"
    assert {c["name"] for c in refs["enclave/sev/exl_slowdown_64w"]["provenance"]} >= {"enclave.work_scale"}
    # the shapes the model reproduces; every one that holds has a per-row evaluator that shows a
    # perturbation under which it fails (tests/enclave/test_enclave_shapes.py runs them)
    expected = {f"enclave/{p}/sse_hp_64w_over_32w": "holds" for p in ("sgx", "sev")}
    assert_verdicts(refs, expected)
    assert_shapes_covered("enclave", refs)
    figs = {f.name for f in (tmp_path / "rep" / "figures").iterdir()}
    assert {"enclave_fig2_throughput.png", "enclave_fig3_breakdown.png", "enclave_beyond_sweeps.png"} <= figs
