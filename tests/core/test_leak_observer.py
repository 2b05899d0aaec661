"""The observer contract: unknown names and identical patterns are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from veil.core import ConfigError
from veil.core.leak.observer import Observer, Run, observer, observers, register_observer, unregister_observer


def _run(setting, pattern, seed, size):
    return Run({"volume": np.full((4, 1), 1.0 if pattern == "a" else 2.0)}, counts=("volume",))


OBS = Observer(system="toy", name="probe", sees="a count per window", settings={"plain": "no defence"},
               patterns={"a": "one", "b": "two"}, run=_run, leaky=("plain",))


@pytest.fixture
def toy():
    register_observer(OBS)
    yield OBS
    unregister_observer("toy", "probe")  # listings elsewhere must not show the throw-away observer
    assert ("toy", "probe") not in observers()


def test_registered_observer_is_found_and_checks_its_inputs(toy):
    assert observer("toy", "probe") is OBS
    OBS.check("plain", "a", "b")
    with pytest.raises(ConfigError, match="setting: unknown 'padded'.*known: plain"):
        OBS.check("padded", "a", "b")
    with pytest.raises(ConfigError, match="pattern: unknown 'c'"):
        OBS.check("plain", "a", "c")
    with pytest.raises(ConfigError, match="both 'a'"):
        OBS.check("plain", "a", "a")
    with pytest.raises(ConfigError, match="observer: unknown toy.nothing; known: .*toy.probe"):
        observer("toy", "nothing")


def test_run_refuses_unknown_family_and_flat_arrays():
    with pytest.raises(ValueError, match="known families"):
        Run({"where": np.zeros((2, 2))})
    with pytest.raises(ValueError, match="windows x features"):
        Run({"spatial": np.zeros(3)})


def _seeded_run(setting, pattern, seed, size):
    # Public work drawn from the seed swamps a 0.5% secret shift unless A and B share the seed.
    base = np.random.default_rng(seed).normal(100.0, 10.0, (size, 1))
    return Run({"temporal": base * (1.005 if pattern == "b" else 1.0)})


def test_paired_seed_runs_a_and_b_on_one_seed_and_finds_what_neighbouring_seeds_hide():
    from dataclasses import replace

    from veil.core.leak.analyse import analyse

    unpaired = Observer(system="toy", name="seeded", sees="a time per window", settings={"plain": "no defence"},
                        patterns={"a": "as is", "b": "0.5% slower"}, run=_seeded_run)
    paired = replace(unpaired, paired_seed=True)
    for obs, leaks in ((unpaired, False), (paired, True)):
        rep = analyse(obs, "plain", "a", "b", repeats=13, seed=1, size=16, power_trials=5)
        assert rep["families"]["temporal"]["leaks"] is leaks
