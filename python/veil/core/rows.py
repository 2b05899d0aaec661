"""Report rows: one number beside its reference, with a verdict that is derived, never typed.

A row compares a value with a reference within a tolerance (verdict within / outside), or tests
a shape, a predicate on the value (holds / fails), or has no reference. Its basis comes from
its origin (what the number is) and the provenance registry (veil.core.provenance), resolved
when the row reaches the report; a hand-typed basis needs a written reason, shown in the report."""

from __future__ import annotations

import math
import os
import re
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from veil.core.provenance import BASES, ORIGINS, Constant, derive_basis

FAILING = ("outside", "fails", "no value")
_SHAPE_OPS = {">": ">", ">=": "≥", "<": "<", "<=": "≤", "==": "=", "between": "in"}


@dataclass(frozen=True)
class Shape:
    """A predicate on a row's value: `Shape(">=", 6)`, `Shape("between", 1.2, 2.0)`."""

    op: str
    a: float
    b: float | None = None

    def __post_init__(self) -> None:
        if self.op not in _SHAPE_OPS:
            raise ValueError(f"shape op {self.op!r} is not one of {', '.join(_SHAPE_OPS)}")
        if (self.op == "between") != (self.b is not None):
            raise ValueError("a 'between' shape needs lo and hi; other shapes take one bound")
        if self.op == "between" and self.b < self.a:
            raise ValueError(f"shape between {self.a} and {self.b}: lo must not exceed hi")

    def test(self, v: float) -> bool:
        return {">": v > self.a, ">=": v >= self.a, "<": v < self.a, "<=": v <= self.a, "==": v == self.a,
                "between": self.b is not None and self.a <= v <= self.b}[self.op]

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        if self.op == "between":
            return f"in [{_fmt(self.a)}, {_fmt(self.b)}]{u}"
        return f"{_SHAPE_OPS[self.op]} {_fmt(self.a)}{u}"


@dataclass(frozen=True)
class Row:
    """One number set beside its reference.

    origin: what the number is — model (a simulation or analytic model), arithmetic (computed
    from inputs, no model), measurement (timed or counted on this machine), projection (built on
    the paper's own results, so agreeing with the paper shows nothing). The basis is derived from
    it and the provenance registry when the report takes the row (`resolve`). `basis` may be
    given only with `basis_reason`, which the report shows. The verdict: a shape row's predicate
    holds or fails; otherwise within / outside the tolerance band around ref (when both
    tolerances are given, the wider band applies: an absolute floor under a relative band)."""

    label: str
    value: float | None
    unit: str = ""
    ref: float | None = None
    source: str = ""
    tol: float | None = None
    tol_abs: float | None = None
    tol_source: str = ""
    origin: str = "model"
    shape: Shape | None = None
    spread: tuple[float, float] | None = None
    note: str = ""
    metric: str | None = None
    key: str | None = None
    basis: str | None = None
    basis_reason: str = ""
    # a shape the model cannot fail (fixed by construction, or the model checking itself): why.
    # Its verdict is "self-check", never "holds"
    self_check: str = ""
    # a ratio's numerator and denominator as rows with references of their own: shown beside it,
    # and a ratio within its band while a factor is outside is "within by cancellation"
    factors: tuple[Row, ...] = ()
    # a headline row's robustness from `veil explain` (robust / fragile: what flips it), set by the report
    robustness: str = ""
    # a measured row compared with a figure from another machine: that machine, named in the
    # report beside the host, so a miss reads as the machines differing, not the model
    ref_machine: str = ""
    constants: tuple[Constant, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        # Programming errors in a reproducer: fail loudly, the report must never mislabel a row.
        if self.origin not in ORIGINS:
            raise ValueError(f"Row {self.label!r}: origin {self.origin!r} is not one of {', '.join(ORIGINS)}")
        if self.basis is not None and self.basis not in BASES:
            raise ValueError(f"Row {self.label!r}: basis {self.basis!r} is not one of {', '.join(BASES)}")
        if self.ref is not None and not self.source:
            raise ValueError(f"Row {self.label!r}: a reference needs its source")
        if self.shape is not None:
            if not self.source:
                raise ValueError(f"Row {self.label!r}: a shape needs the source of the claim it tests")
            if self.tol is not None or self.tol_abs is not None:
                raise ValueError(f"Row {self.label!r}: a shape is a predicate; it takes no tolerance")
        elif self.self_check:
            raise ValueError(f"Row {self.label!r}: self_check marks a shape that cannot fail; this row has none")
        elif self.ref is not None and self.tol is None and self.tol_abs is None:
            raise ValueError(f"Row {self.label!r}: a reference needs a tolerance (or make the row a shape)")
        if self.ref_machine and (self.origin != "measurement" or not self.compared):
            raise ValueError(f"Row {self.label!r}: ref_machine names another machine's figure; it needs a "
                             "measured row with a reference or a shape")
        if (self.tol is not None and self.tol < 0) or (self.tol_abs is not None and self.tol_abs < 0):
            raise ValueError(f"Row {self.label!r}: tolerances must be >= 0")
        if self.spread is not None:
            lo, hi = self.spread
            object.__setattr__(self, "spread", (float(lo), float(hi)))
        for name in ("value", "ref"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, int) and not isinstance(v, bool)):
                v = float(v)  # numpy scalars and bools become plain floats; ints (counts) stay ints
                object.__setattr__(self, name, v if math.isfinite(v) else None)

    def resolve(self, key: str, siblings: list[str]) -> Row:
        """This row with its key, derived basis and the constants it depends on."""
        derived, under = derive_basis(key, self.origin, siblings)
        if self.basis is not None and self.basis != derived and not self.basis_reason:
            raise ValueError(f"Row {self.label!r}: basis {self.basis!r} typed by hand where the provenance gives "
                             f"{derived!r}; register the constant, or give basis_reason")
        return replace(self, key=key, basis=self.basis if self.basis_reason else derived, constants=tuple(under))

    @property
    def ratio(self) -> float | None:
        if self.value is None or self.ref in (None, 0):
            return None
        return self.value / self.ref

    @property
    def band(self) -> float | None:
        """The allowed absolute deviation from ref, None without a tolerance or a reference."""
        if self.ref is None or (self.tol is None and self.tol_abs is None):
            return None
        return max(self.tol * abs(self.ref) if self.tol is not None else 0.0,
                   self.tol_abs if self.tol_abs is not None else 0.0)

    @property
    def compared(self) -> bool:
        return self.shape is not None or self.ref is not None

    @property
    def outcome(self) -> str:
        if not self.compared:
            return "no reference"
        if self.value is None:
            return "no value"
        if self.shape is not None:
            if not self.shape.test(self.value):
                return "fails"
            return "self-check" if self.self_check else "holds"
        # a relative epsilon so a value exactly on the band's edge is not lost to rounding
        return "within" if abs(self.value - self.ref) <= self.band * (1 + 1e-12) + 1e-300 else "outside"

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING

    @property
    def by_cancellation(self) -> bool:
        """Within its band while a factor with a reference of its own is outside: errors cancel."""
        return self.outcome == "within" and any(f.outcome == "outside" for f in self.factors)

    def verdict_text(self) -> str:
        """The verdict as the report prints it: with "by cancellation" and a headline's robustness."""
        t = self.outcome + (" by cancellation" if self.by_cancellation else "")
        return t + (f"; {self.robustness}" if self.robustness else "")

    def tolerance_text(self) -> str:
        if self.shape is not None:
            return "shape: " + self.shape.text(self.unit)
        parts = []
        if self.tol is not None:
            parts.append(f"±{_fmt(self.tol * 100)}%")
        if self.tol_abs is not None:
            parts.append(f"±{_fmt(self.tol_abs)}{(' ' + self.unit) if self.unit else ''}")
        return " or ".join(parts) if parts else "—"

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "value": self.value, "unit": self.unit,
                "reference": self.ref, "source": self.source, "tolerance_rel": self.tol,
                "tolerance_abs": self.tol_abs, "tolerance_source": self.tol_source,
                "shape": self.shape.text(self.unit) if self.shape else None, "verdict": self.outcome,
                "basis": self.basis, "basis_reason": self.basis_reason or None, "origin": self.origin,
                "provenance": [c.as_dict() for c in self.constants],
                "spread": list(self.spread) if self.spread else None, "ratio": self.ratio, "note": self.note,
                **({"self_check": self.self_check} if self.self_check else {}),
                **({"factors": [{"label": f.label, "value": f.value, "unit": f.unit, "reference": f.ref,
                                 "source": f.source, "verdict": f.outcome} for f in self.factors],
                    "by_cancellation": self.by_cancellation} if self.factors else {}),
                **({"robustness": self.robustness} if self.robustness else {}),
                **({"reference_machine": self.ref_machine} if self.ref_machine else {})}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60] or "row"


def median_spread(samples, kind: str = "iqr") -> tuple[float, tuple[float, float]]:
    """Median and (lo, hi) of repeated measurements: the interquartile range, or min-max."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("median_spread needs at least one sample")
    med = statistics.median(xs)
    if kind == "minmax" or len(xs) < 4:
        return med, (xs[0], xs[-1])
    if kind != "iqr":
        raise ValueError(f"spread kind {kind!r}: iqr or minmax")
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return med, (q[0], q[2])


def host_name() -> str:
    """The machine a measured row was measured on: host name, CPU model and cores."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{platform.node() or 'unknown host'} ({cpu}, {os.cpu_count() or '?'} cores)"


def machine_load() -> list[float] | None:
    """The 1/5/15-minute load averages, recorded beside measured timings (None where unknown)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _fmt(v: Any, digits: int = 3) -> str:
    """A number rounded to `digits` significant digits (integers kept whole)."""
    if v is None:
        return "—"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x, digits) for x in v) + "]"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "—"
    if isinstance(v, int) or (v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6 or a < 1e-3:
        return f"{v:.{digits}g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(a)))
    return f"{v:,.{decimals}f}"
