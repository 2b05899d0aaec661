"""The enclave calibration: the script that fits the model's free constants on the SGX-like half
(`python -m veil.enclave.calibrate`), on a small budget, and its committed result. The targets
themselves (calibrated SGX-like, predicted SEV-like) are checked in Rust
(crates/veil-enclave/tests/model.rs), where the 64-worker points run once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from veil.core import ConfigError
from veil.enclave.calibrate import calibrate, objective
from veil.enclave.targets import CALIBRATED, HAND_TUNED, PRIOR, TARGETS, Target, defaults, evaluate

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"params": ["global_lines_scale", "work_scale"], "requests": 64, "max_evals": 5}


def test_small_budget_fit_is_deterministic_and_lowers_the_objective():
    a = calibrate(**SMALL)
    b = calibrate(**SMALL)
    assert a.constants == b.constants and a.objective == b.objective and a.evaluations == b.evaluations == 5
    start = a.history[0]
    assert start["constants"] == {k: float(v) if k not in ("kernel_state_kb", "ctx_switch_kb", "responder_ws_lines")
                                  else float(round(v)) for k, v in PRIOR.items()}
    # At the first estimates BL has few sharing misses (two kernel-global lines per call), so
    # SSE's ratio is far above the paper's 4.8x; the first move adds global lines.
    assert start["values"]["sgx/sse-hp/sharing"] > 10
    assert a.objective < start["objective"]
    assert a.constants["global_lines_scale"] > PRIOR["global_lines_scale"]
    # Only the named constants move; the fit looks at SGX-like targets only.
    assert {k for k in CALIBRATED if a.constants[k] != start["constants"][k]} <= set(SMALL["params"])
    assert all(k.startswith("sgx/") for k in a.values)


def test_objective_is_the_tolerance_weighted_error_plus_the_prior_term():
    t = [Target("sgx", "ex-b", "slowdown", 2.2, 0.2, "", ""), Target("sgx", "sse-hp", "sharing", 4.4, 0.5, "", "")]
    vals = {"sgx/ex-b/slowdown": 2.4, "sgx/sse-hp/sharing": 2.2}
    assert t[0].within(2.4) and not t[0].within(2.41)
    assert objective(vals, dict(PRIOR), t) == pytest.approx(1.0 + 1.0)
    doubled = {**PRIOR, "core_mlp": 2.0}
    assert objective(vals, doubled, t) == pytest.approx(2.0 + 0.1 * 0.6931471805599453 ** 2)


def test_committed_fit_is_the_default_and_names_both_halves():
    fit = json.loads((ROOT / "configs" / "enclave" / "calibration.json").read_text())
    assert fit["half"] == "sgx" and fit["constants"] == defaults()
    assert fit["prior"] == PRIOR and fit["hand_tuned"] == HAND_TUNED
    assert set(fit["calibrated_values"]) >= {t.key for t in TARGETS["sgx"]}
    assert set(fit["predicted_values"]) >= {t.key for t in TARGETS["sev"]}
    # The fit meets every calibration target; the history ends at the recorded optimum.
    for t in TARGETS["sgx"]:
        assert t.within(fit["calibrated_values"][t.key]), t.key
    assert min(h["objective"] for h in fit["history"]) == pytest.approx(fit["objective"])


def test_evaluate_is_deterministic_and_covers_the_sev_targets():
    # The full-size comparison with the recorded values runs in Rust (committed_calibration_is_the_default).
    a = evaluate(defaults(), ["sev"], requests=64)
    b = evaluate(defaults(), ["sev"], requests=64)
    assert a == b and set(a) >= {t.key for t in TARGETS["sev"]}
    assert a["sev/ex-b/slowdown"] > 1.0


def test_unknown_constant_is_a_config_error():
    with pytest.raises(ConfigError, match="nope"):
        calibrate(params=["nope"], max_evals=1, requests=64)


def test_cli_bad_input_is_one_line_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "veil.enclave.calibrate", "--params", "nope"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "nope" in p.stderr


def test_cli_small_run_writes_the_fit(tmp_path):
    out = tmp_path / "fit.json"
    p = subprocess.run([sys.executable, "-m", "veil.enclave.calibrate", "--params", "work_scale", "--requests", "64",
                        "--max-evals", "2", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    fit = json.loads(out.read_text())
    assert fit["evaluations"] == 2 and fit["half"] == "sgx" and "sev/ex-l/slowdown" in fit["predicted_values"]
    assert "predicted" in p.stdout and "calibrated" in p.stdout
