"""Headline rows and their robustness: each system declares once the rows its paper's abstract
and conclusion rest on (`register_headlines`); `veil explain KEY` stores its one-line answer in
the results store (experiment "explain.summary"), and the report prints it beside the verdict of a
headline row. No import of the report or of `veil.core.explain`, so both can use it."""

from __future__ import annotations

import fnmatch
import hashlib
import json

from veil.core.store import Record, ResultStore, now_iso

SUMMARY_EXPERIMENT = "explain.summary"
HEADLINES: dict[str, tuple[tuple[str, ...], str]] = {}
NOT_EXPLAINED = "robustness not explained yet (veil explain KEY)"


def register_headlines(system: str, keys: list[str] | tuple[str, ...], *, source: str) -> None:
    """The row keys (fnmatch patterns) of `system`'s headline claims and where the paper makes them."""
    if not keys or not source:
        raise ValueError(f"headlines of {system}: give the row keys and the paper's place that makes the claims")
    for k in keys:
        if not k.startswith(f"{system}/"):
            raise ValueError(f"headlines of {system}: row pattern {k!r} must start with '{system}/'")
    old = HEADLINES.get(system)
    if old is not None and old != (tuple(keys), source):
        raise ValueError(f"headlines of {system} declared twice differently")
    HEADLINES[system] = (tuple(keys), source)


def is_headline(key: str) -> bool:
    keys, _ = HEADLINES.get(key.split("/", 1)[0], ((), ""))
    return any(fnmatch.fnmatchcase(key, p) for p in keys)


def _hash(key: str, quick: bool) -> str:
    return hashlib.sha256(json.dumps({"key": key, "quick": quick}, sort_keys=True).encode()).hexdigest()[:16]


def store_summary(store: ResultStore, key: str, quick: bool, text: str, robust: bool, seconds: float) -> None:
    from veil.core.runner import veil_version

    store.put(Record(SUMMARY_EXPERIMENT, _hash(key, quick), veil_version(), 0, {"key": key, "quick": quick},
                     {"text": text, "robust": robust}, seconds, now_iso()))


def robustness_of(store: ResultStore | None, key: str, quick: bool) -> str:
    """The stored one-line answer of `veil explain` for this row under this code, or NOT_EXPLAINED."""
    if store is None:
        return NOT_EXPLAINED.replace("KEY", key)
    from veil.core.runner import veil_version

    hit = store.get(SUMMARY_EXPERIMENT, _hash(key, quick), veil_version())
    return hit.result["text"] if hit is not None else NOT_EXPLAINED.replace("KEY", key)
