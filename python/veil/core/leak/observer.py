"""The contract between a system and the shared adversary: an observer records exactly what the
system's attacker sees, for one setting (the defence under test) and one secret pattern, and
returns it as windows of features aligned by position in the run, so that window i of pattern A
and window i of pattern B are the same point of the same work, only the secret differing.

A system declares one `Observer` per attacker in `python/veil/<system>/observer.py` (or a
package of that name) and registers it with `register_observer`; `veil leak CONFIG` finds it by
`system` and `name`. This module holds no statistics (aligned.py, power.py, stats.py do) and
imports no system.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from veil.core.errors import ConfigError

__all__ = ["FAMILIES", "Observer", "Run", "observer", "observers", "register_observer", "unregister_observer"]

#: Feature families a verdict is given for: where (which slots, addresses, channels, modules),
#: when (times, gaps, latencies) and how much (counts, sizes).
FAMILIES = ("spatial", "temporal", "volume")


@dataclass
class Run:
    """One run's view. `features[family]` is a (windows x K) float array, K fixed for the
    observer and setting; windows are cut by position (request index, record index, cycle) so
    two runs of the same length have the same number of windows. `counts` names the families
    whose columns are event counts (a planted redirect moves events between their columns)."""

    features: dict[str, np.ndarray]
    counts: tuple[str, ...] = ()
    #: What the defence cost in this run (e.g. {"cycles": ..., "bytes": ...}), for the table.
    cost: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for fam, x in self.features.items():
            if fam not in FAMILIES:
                raise ValueError(f"feature family {fam!r}: known families are {', '.join(FAMILIES)}")
            if np.asarray(x).ndim != 2:
                raise ValueError(f"feature family {fam!r}: expected a windows x features array")


@dataclass(frozen=True)
class Observer:
    """What one attacker of one system sees.

    `run(setting, pattern, seed, size)` performs the system's work under `setting` (a key of
    `settings`) with the secret `pattern` (a key of `patterns`) and returns a `Run`. `size`
    scales the work (requests, records, inferences); the same size and seed give the same
    public work, so only the secret differs between A and B. `leaky` names settings that must
    be flagged (negative controls), `defences` those that claim to hide the secret."""

    system: str
    name: str
    sees: str  # what the paper's attacker sees, in words, and what it does not
    settings: Mapping[str, str]  # setting -> one line on what it is
    patterns: Mapping[str, str]  # secret pattern -> one line on what it is
    run: Callable[[str, str, int, int], Run]
    leaky: tuple[str, ...] = ()
    defences: tuple[str, ...] = ()
    default_size: int = 1000
    #: (setting, a, b) cases of the report's leakage table (`veil reproduce leak`), run at
    #: `table_size` (0: default_size) in the quick report: keep them to seconds each
    table: tuple[tuple[str, str, str], ...] = ()
    table_size: int = 0
    #: the smallest `size` that gives the analysis windows to compare (checked before any run)
    min_size: int = 1
    #: pattern pairs the system cannot express (e.g. a pattern meaningless in one setting)
    excluded: Callable[[str, str, str], str | None] = lambda setting, a, b: None
    #: A and B of a seed pair run on the same seed: for an observer whose public work (addresses,
    #: gaps, request order) is drawn from the seed, the pair then differs in the secret alone (a
    #: paired design, far more powerful); a same-secret pair gives identical views (p = 1). Off,
    #: A and B of a pair run on neighbouring seeds (memnet: a seed changes the whole run).
    paired_seed: bool = False

    def check(self, setting: str, a: str, b: str) -> None:
        """One line naming the problem for an unknown setting or pattern, or identical patterns."""
        if setting not in self.settings:
            raise ConfigError(f"setting: unknown {setting!r} for {self.system}.{self.name}; "
                              f"known: {', '.join(self.settings)}")
        for p in (a, b):
            if p not in self.patterns:
                raise ConfigError(f"pattern: unknown {p!r} for {self.system}.{self.name}; "
                                  f"known: {', '.join(self.patterns)}")
        if a == b:
            raise ConfigError(f"patterns: a and b are both {a!r}; give two different secrets")
        why = self.excluded(setting, a, b)
        if why:
            raise ConfigError(f"patterns: {why}")


_OBSERVERS: dict[tuple[str, str], Observer] = {}


def register_observer(obs: Observer) -> Observer:
    _OBSERVERS[(obs.system, obs.name)] = obs
    return obs


def unregister_observer(system: str, name: str) -> None:
    """Removes a registration (tests that register a throw-away observer clean up after themselves)."""
    _OBSERVERS.pop((system, name), None)


def observers() -> dict[tuple[str, str], Observer]:
    return dict(_OBSERVERS)


def observer(system: str, name: str) -> Observer:
    if (system, name) not in _OBSERVERS:
        known = ", ".join(f"{s}.{n}" for s, n in sorted(_OBSERVERS)) or "none"
        raise ConfigError(f"observer: unknown {system}.{name}; known: {known}")
    return _OBSERVERS[(system, name)]


def describe(obs: Observer) -> dict[str, Any]:
    """What `veil list` and docs print for an observer."""
    return {"system": obs.system, "name": obs.name, "sees": obs.sees, "settings": dict(obs.settings),
            "patterns": dict(obs.patterns), "leaky": list(obs.leaky), "defences": list(obs.defences)}


def paired_p(pairs: list[tuple[Run, Run]]) -> dict[str, float]:
    """Exact sign-flip p per feature family over seed pairs of runs (A, B): each pair is one unit
    (the systems' `python -m veil.<system>.observer` measurements, without planting or Holm)."""
    from veil.core.leak import aligned

    return {fam: aligned.signflip(aligned.block_differences([a.features[fam] for a, _ in pairs],
                                                            [b.features[fam] for _, b in pairs])).p
            for fam in pairs[0][0].features}
