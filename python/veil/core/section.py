"""What a reproducer fills: a system's section of the report (its blocks of figures, tables and
text, and the rows in them) and the one summary column each row counts in. Both the report's
driver (`veil.core.report`) and its HTML pages (`veil.core.report_html`) read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veil.core.rows import Row


@dataclass
class FigureEntry:
    name: str
    caption: str
    png: Path
    svg: Path
    rows: list[Row]
    csv: Path | None = None


@dataclass
class Section:
    system: str
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)  # ("text"|"figure"|"table"|..., payload)
    metrics: dict[str, Any] = field(default_factory=dict)
    metric_rows: dict[str, Row] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)
    error: str | None = None
    seconds: float = 0.0
    computed: int = 0
    cached: int = 0
    load: tuple[list[float] | None, list[float] | None] = (None, None)
    cpu_seconds: float | None = None  # this process and its reaped children (pool workers, tracers)
    # each ctx.run / run_many: experiment, many, point_s (its points' elapsed_s); timing.py
    batches: list[dict[str, Any]] = field(default_factory=list)
    batch_wall_s: float = 0.0

    @property
    def rows(self) -> list[Row]:
        out: list[Row] = []
        for kind, payload in self.blocks:
            if kind == "figure":
                out += payload.rows
            elif kind == "table":
                out += payload[1]
        return out


SUMMARY_COLUMNS = ("calibrated", "within", "outside", "holds", "fails", "self-check", "no value", "no reference")


def summary_column(row: Row) -> str:
    """The one summary column a row counts in: a calibrated row that agrees apart (its agreement
    shows nothing); a calibrated row that fails counts as failing (the summary marks it), the
    others by verdict."""
    if row.basis == "calibrated" and row.compared and not row.failing:
        return "calibrated"
    return row.outcome
