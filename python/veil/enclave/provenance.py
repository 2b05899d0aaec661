"""The enclave model's constants chosen while looking at the paper's numbers, declared once: the
report derives every enclave row's basis from them (veil.core.provenance)."""

from veil.core import register_constant
from veil.enclave.server import CALIBRATED
from veil.enclave.targets import CALIBRATION_HALF, TARGETS

_KEY = {"ex-b": "exb", "ex-l": "exl", "ex-l0": "exl_zero_ctx", "sse-nhp": "sse_nhp", "sse-hp": "sse_hp"}


def target_key(policy: str, model: str, kind: str) -> str:
    """The report row of one stated number (enclave/<policy>/<model>_slowdown_64w, ..._sharing_vs_bl)."""
    return f"enclave/{policy}/{_KEY[model]}_{'slowdown_64w' if kind == 'slowdown' else 'sharing_vs_bl'}"


FITTED_ON = [target_key(t.policy, t.model, t.kind) for t in TARGETS[CALIBRATION_HALF]]

for _name in CALIBRATED:
    register_constant("enclave", _name, targets=FITTED_ON,
                      how=f"fit: python -m veil.enclave.calibrate (coordinate descent on the {CALIBRATION_HALF.upper()}-like "
                          "slowdowns and sharing ratios, pulled towards the first estimates), recorded in "
                          "configs/enclave/calibration.json",
                      when="2026-11-22")
