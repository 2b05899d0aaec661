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


@dataclass
class ProvenanceRegistry:
    constants: dict[str, Constant] = field(default_factory=dict)

    def register(self, c: Constant) -> Constant:
        full = f"{c.system}.{c.name}"
        old = self.constants.get(full)
        if old is not None and old != c:
            raise ValueError(f"constant {full} registered twice with different provenance")
        self.constants[full] = c
        return c

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
