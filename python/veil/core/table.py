"""Compact tables of stored results: one line per result, the keys that tell them apart and the
experiment's headline value (`veil results list`, the end of `veil sweep`, `veil results show`
of many results)."""

from __future__ import annotations

import json
from typing import Any

from veil.core.store import Record, flatten

MAX_ROWS = 30  # a table longer than a screen is cut, saying how many more there are


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, dict)):
        text = json.dumps(v)
        return text if len(text) <= 40 else text[:37] + "..."
    return str(v)


def headline(rec: Record) -> tuple[str, str] | None:
    """(field, value with unit) of the experiment's headline result, or None."""
    from veil.core.registry import REGISTRY

    exp = REGISTRY.experiments.get(rec.experiment)
    flat = flatten("", {k: v for k, v in rec.result.items() if k != "warnings"}, {})
    key = exp.headline if exp and exp.headline in flat else None
    if key is None and exp:
        key = next((k for k, (unit, _) in exp.results.items() if unit and k in flat
                    and isinstance(flat[k], (int, float)) and not isinstance(flat[k], bool)), None)
    if key is None:
        key = next((k for k, v in flat.items() if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    if key is None:
        return None
    doc = exp.result_doc(key) if exp else None
    unit = doc[0] if doc and doc[0] else ""
    return key, f"{_fmt(flat[key])} {unit}".rstrip()


def differing(records: list[Record]) -> list[str]:
    """Config keys (dotted) whose values differ between the records, in first-seen order."""
    flats = [flatten("", r.config, {}) for r in records]
    keys: list[str] = []
    for f in flats:
        keys += [k for k in f if k not in keys]
    return [k for k in keys if len({json.dumps(f.get(k), sort_keys=True) for f in flats}) > 1]


def compact_table(records: list[Record], keys: list[str] | None = None, *, limit: int = MAX_ROWS,
                  more_hint: str = "") -> list[str]:
    """Lines of a table: ID, the differing config keys, the headline value; at most `limit` rows."""
    if not records:
        return []
    keys = differing(records) if keys is None else keys
    heads = [headline(r) for r in records]
    field = next((h[0] for h in heads if h), None)
    # A record fresh from a sweep has no row ID yet: its config hash names it as well
    # (`veil results show HASH`).
    ids = all(r.id is not None for r in records)
    header = ["ID" if ids else "config", *keys] + ([field] if field else [])
    rows = []
    for r, h in zip(records, heads):
        flat = {"seed": r.seed, **flatten("", r.config, {})}
        rows.append([str(r.id) if ids else r.config_hash[:10], *(_fmt(flat.get(k)) for k in keys)]
                    + ([h[1] if h and h[0] == field else "-"] if field else []))
    shown = rows[:limit]
    widths = [max(len(x) for x in col) for col in zip(header, *shown)]
    lines = ["  " + "  ".join(x.ljust(w) for x, w in zip(header, widths)).rstrip()]
    lines += ["  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in shown]
    if len(rows) > limit:
        lines.append(f"  ... and {len(rows) - limit} more{more_hint}")
    return lines
