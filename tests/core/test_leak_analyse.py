"""The generic analysis on observers with a known answer: a planted difference is flagged, the
same secret is not, power is measured, too few seeds are refused."""

from __future__ import annotations

import numpy as np
import pytest

from veil.core import ConfigError
from veil.core.leak.analyse import analyse, min_repeats, pair_seed
from veil.core.leak.observer import Observer, Run


def _run(shift):
    def run(setting, pattern, seed, size):
        rng = np.random.default_rng(seed)
        p = np.full(8, 1 / 8)
        if pattern == "hot" and setting == "plain":
            p = p + np.r_[np.full(2, shift), np.zeros(6)]
            p /= p.sum()
        spatial = rng.multinomial(40, p, size=size).astype(float)
        volume = (spatial.sum(axis=1, keepdims=True) + rng.normal(0, 1, (size, 1)))
        return Run({"spatial": spatial, "volume": volume}, counts=("spatial",), cost={"ops": float(size)})
    return run


def _obs(shift):
    return Observer(system="toy", name="slots", sees="slot counts", settings={"plain": "leaks", "hidden": "hides"},
                    patterns={"uniform": "u", "hot": "h"}, run=_run(shift), leaky=("plain",), defences=("hidden",),
                    default_size=20)


def test_known_leak_is_flagged_with_power_and_hidden_secret_is_not():
    obs = _obs(0.5)
    rep = analyse(obs, "plain", "uniform", "hot", repeats=min_repeats(1e-3), seed=3, size=20, power_trials=10)
    sp = rep["families"]["spatial"]
    assert sp["leaks"] and sp["p"] < 1e-3 and sp["power"] >= 0.95
    # planted: 2 of 8 columns get 0.5 more weight: shares 1/8 -> 5/16 there, 1/8 -> 1/16 elsewhere, TV 0.375
    assert sp["effect"] == pytest.approx(0.375, abs=0.03) and sp["statement"].startswith("leaks (p ")
    assert rep["negative_control"] and rep["cost_a"] == {"ops": 20.0}
    assert not rep["families"]["volume"]["leaks"]  # 40 events per window whatever the secret
    hid = analyse(obs, "hidden", "uniform", "hot", repeats=min_repeats(1e-3), seed=3, size=20, power_trials=10)
    s = hid["families"]["spatial"]
    assert not s["leaks"]
    # the smallest redirect caught is measured, and it is a real fraction, not a default
    assert s["detectable"]["effect"] is not None and 0 < s["detectable"]["effect"] <= 0.3
    assert s["statement"].startswith("no leak of effect >= ")
    assert 0.0 <= s["classifier"]["ci95"][0] <= s["classifier"]["accuracy"] <= s["classifier"]["ci95"][1]


def test_analysis_is_deterministic_for_a_seed():
    obs = _obs(0.0)
    r1 = analyse(obs, "hidden", "uniform", "hot", repeats=14, seed=5, size=10, power_trials=5)
    r2 = analyse(obs, "hidden", "uniform", "hot", repeats=14, seed=5, size=10, power_trials=5)
    assert r1 == r2


def test_too_few_seed_pairs_and_bad_patterns_are_one_line_errors():
    obs = _obs(0.1)
    with pytest.raises(ConfigError, match="repeats: 5 seed pair"):
        analyse(obs, "plain", "uniform", "hot", repeats=5, seed=0, size=10)
    with pytest.raises(ConfigError, match="both 'hot'"):
        analyse(obs, "plain", "hot", "hot", repeats=14, seed=0, size=10)


def test_seed_pairs_follow_memnet_pairing():
    assert [pair_seed(10, i, s) for i in range(2) for s in (0, 1)] == [10, 12, 14, 16]


def test_progress_counts_runs_of_all(monkeypatch):
    """`veil leak`'s progress line: (runs done, 2 x repeats), one step per run, in order."""
    import veil.core.runner as runner

    seen = []
    monkeypatch.setattr(runner, "report_progress", lambda done, total, unit: seen.append((done, total, unit)))
    analyse(_obs(0.0), "hidden", "uniform", "hot", repeats=14, seed=5, size=10, power_trials=5)
    assert seen == [(i, 28, "runs") for i in range(1, 29)]
