"""The leakage table's negative controls can fail: each one that holds fails when its case runs on
a setting that hides its secret (veil.core.leak.rowchecks); the controls no setting hides are
self-checks of the attacker, never counted as holding."""

import pytest

from conftest import assert_shapes_covered, assert_shapes_falsifiable


def _controls() -> dict[str, dict]:
    from veil.core.leak_table import UNHIDDEN_CONTROLS, cases

    return {f"leak/{o.system}/{o.name}/{s}/{a}-vs-{b}/power":
            {"shape": ">= 0.95", "verdict": "self-check" if (o.system, o.name) in UNHIDDEN_CONTROLS else "holds"}
            for o, s, a, b, _ in cases(quick=True) if s in o.leaky}


def test_every_negative_control_has_an_evaluator_or_is_a_self_check():
    from veil.core.leak_table import rows_for

    refs = _controls()
    assert len(refs) == 7 and sum(r["verdict"] == "self-check" for r in refs.values()) == 3
    assert_shapes_covered("leak", refs)
    fam = {"detectable": {"effect": 0.05, "power": 1.0}, "statement": "leaks", "p": 1e-4, "leaks": True,
           "power": 1.0, "classifier": {"accuracy": 1.0}}
    rep = {"system": "enclave", "observer": "os", "setting": "ex-b", "a": "cache-miss", "b": "cache-hit",
           "negative_control": True, "families": {"temporal": fam}, "cost_a": {}}
    assert rows_for(rep)[-1].outcome == "self-check"
    assert rows_for({**rep, "system": "oram", "observer": "server", "setting": "plain"})[-1].outcome == "holds"


@pytest.mark.slow
def test_negative_controls_fail_on_a_setting_that_hides_their_secret(tmp_path):
    flipped = assert_shapes_falsifiable("leak", tmp_path / "store.sqlite")
    hidden_by = {"memcrypt/bus/ecb": "direct-nospec", "memnet/channels/minimal": "ghost_minimal",
                 "oram/server/plain": "pathoram"}
    assert set(flipped) == {k for k, r in _controls().items() if r["verdict"] == "holds"}
    for k, how in flipped.items():
        assert how.startswith(f"ablation '{hidden_by['/'.join(k.split('/')[1:4])]} in place of"), how
