"""Provenance of model constants, declared once: which constants were chosen while looking at
which reference rows, so that every row's basis is derived instead of typed at its call site.

A system registers each constant it chose while looking at a reference (a fitted value, a hand
choice among alternatives, a default picked after seeing results) in its own
`python/veil/<system>/provenance.py`:

    register_constant("enclave", "exit_cycles", targets=["enclave/fig2/sgx/*"],
                      how="fit: python -m veil.enclave.calibrate (SGX-like half)", when="2026-11-20")

`targets` are the row keys (fnmatch patterns) the constant was chosen against; `applies` the row
keys whose values depend on it (default: every row of its system). The report then derives:
a row under a constant chosen against that row's own key is *calibrated*; under a constant
chosen against other rows of the same figure or table, *predicted (held out)*; otherwise
*predicted* (model rows), *computed* (arithmetic), *measured* (timed or counted here) or
*projected* (built on the paper's own results)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

BASES = ("calibrated", "predicted (held out)", "predicted", "computed", "measured", "projected")
# What a row's number is: a fact about how it was obtained, stated at the call site.
ORIGINS = {"model": "predicted", "arithmetic": "computed", "measurement": "measured", "projection": "projected"}


@dataclass(frozen=True)
class Constant:
    system: str
    name: str
    targets: tuple[str, ...]
    how: str
    when: str
    applies: tuple[str, ...] = ()
    value: Any = None
    why: str = ""

    def applies_to(self, key: str) -> bool:
        return _matches(key, self.applies or (f"{self.system}/*",))

    def targets_key(self, key: str) -> bool:
        return _matches(key, self.targets)

    def as_dict(self) -> dict[str, Any]:
        return {"name": f"{self.system}.{self.name}", "targets": list(self.targets), "how": self.how,
                "when": self.when, "value": self.value if _jsonable(self.value) else repr(self.value),
                "why": self.why}


@dataclass(frozen=True)
class Assumption:
    """A modelling input whose value the literature does not pin down: its nominal value, the
    plausible range (lo..hi, or discrete `levels`, a named ablation among alternatives) and the
    source of that range, the rows it moves, and the experiment config field(s) that carry it
    (`knobs`: "experiment.field"), so `veil explain` can re-run a row with it moved."""

    system: str
    name: str
    value: Any
    lo: float | None
    hi: float | None
    source: str
    knobs: tuple[str, ...]
    applies: tuple[str, ...] = ()
    unit: str = ""
    what: str = ""
    levels: tuple[Any, ...] = ()

    @property
    def full(self) -> str:
        return f"{self.system}.{self.name}"

    @property
    def discrete(self) -> bool:
        return bool(self.levels)

    def applies_to(self, key: str) -> bool:
        return _matches(key, self.applies or (f"{self.system}/*",))

    def range_text(self) -> str:
        if self.discrete:
            return "{" + ", ".join(str(v) for v in self.levels) + "}"
        return f"[{self.lo:g}, {self.hi:g}]{(' ' + self.unit) if self.unit else ''}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.full, "value": self.value, "range": list(self.levels) if self.discrete
                else [self.lo, self.hi], "unit": self.unit, "source": self.source, "what": self.what,
                "knobs": list(self.knobs)}


@dataclass
class ProvenanceRegistry:
    constants: dict[str, Constant] = field(default_factory=dict)
    assumptions: dict[str, Assumption] = field(default_factory=dict)

    def register(self, c: Constant) -> Constant:
        full = f"{c.system}.{c.name}"
        old = self.constants.get(full)
        if old is not None and old != c:
            raise ValueError(f"constant {full} registered twice with different provenance")
        self.constants[full] = c
        return c

    def assume(self, a: Assumption) -> Assumption:
        old = self.assumptions.get(a.full)
        if old is not None and old != a:
            raise ValueError(f"assumption {a.full} registered twice with different ranges")
        self.assumptions[a.full] = a
        return a

    def assumed(self, key: str) -> list[Assumption]:
        """The assumptions with declared ranges that the value of row `key` depends on."""
        return [a for a in self.assumptions.values() if a.applies_to(key)]

    def under(self, key: str) -> list[Constant]:
        """The constants whose choice the value of row `key` depends on."""
        return [c for c in self.constants.values() if c.applies_to(key)]


PROVENANCE = ProvenanceRegistry()


def register_constant(system: str, name: str, *, targets: list[str] | tuple[str, ...], how: str, when: str,
                      applies: list[str] | tuple[str, ...] = (), value: Any = None, why: str = "") -> Constant:
    """Declares a constant chosen while looking at the reference rows `targets` (row-key patterns)."""
    if not targets:
        raise ValueError(f"constant {system}.{name}: a constant chosen against nothing needs no registration")
    if not how or not when:
        raise ValueError(f"constant {system}.{name}: say how it was chosen (fit script or hand choice) and when")
    for p in (*targets, *applies):
        if not p.startswith(f"{system}/"):
            raise ValueError(f"constant {system}.{name}: row pattern {p!r} must start with '{system}/'")
    return PROVENANCE.register(Constant(system, name, tuple(targets), how, when, tuple(applies), value, why))


def register_assumption(system: str, name: str, *, value: Any, source: str, knobs: list[str] | tuple[str, ...],
                        lo: float | None = None, hi: float | None = None, levels: list | tuple = (),
                        applies: list[str] | tuple[str, ...] = (), unit: str = "", what: str = "") -> Assumption:
    """Declares once a modelling input's plausible range and where the range comes from (a
    datasheet, the paper's text, another paper): `lo`..`hi` for a number, `levels` for a choice
    among named alternatives. `knobs` are the "experiment.field" config fields that carry it."""
    where = f"assumption {system}.{name}"
    if not source:
        raise ValueError(f"{where}: name the source of the range (a datasheet, the paper's text, another paper)")
    if not knobs or any("." not in k for k in knobs):
        raise ValueError(f"{where}: knobs are 'experiment.field' names of the config fields that carry it")
    if levels:
        if lo is not None or hi is not None:
            raise ValueError(f"{where}: give a range lo..hi or discrete levels, not both")
        if value not in levels:
            raise ValueError(f"{where}: the nominal value {value!r} is not one of its levels")
    else:
        if lo is None or hi is None or not lo <= value <= hi or not lo < hi:
            raise ValueError(f"{where}: a numeric assumption needs lo < hi with lo <= value ({value}) <= hi")
    for p in applies:
        if not p.startswith(f"{system}/"):
            raise ValueError(f"{where}: row pattern {p!r} must start with '{system}/'")
    return PROVENANCE.assume(Assumption(system, name, value, None if levels else float(lo),
                                        None if levels else float(hi), source, tuple(knobs), tuple(applies),
                                        unit, what, tuple(levels)))


def derive_basis(key: str, origin: str, siblings: list[str],
                 registry: ProvenanceRegistry | None = None) -> tuple[str, list[Constant]]:
    """The basis of row `key` (whose figure or table also holds rows `siblings`) and the
    constants it depends on. A constant chosen against the row itself makes it calibrated,
    whatever its origin; chosen against a sibling, a model row is predicted (held out)."""
    if origin not in ORIGINS:
        raise ValueError(f"row {key!r}: origin {origin!r} is not one of {', '.join(ORIGINS)}")
    under = (registry or PROVENANCE).under(key)
    if any(c.targets_key(key) for c in under):
        return "calibrated", under
    if origin == "model" and any(c.targets_key(s) for c in under for s in siblings if s != key):
        return "predicted (held out)", under
    return ORIGINS[origin], under


def _matches(key: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def _jsonable(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str)) or (
        isinstance(v, (list, tuple)) and all(_jsonable(x) for x in v)) or (
        isinstance(v, dict) and all(isinstance(k, str) and _jsonable(x) for k, x in v.items()))
