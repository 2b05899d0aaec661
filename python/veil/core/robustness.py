"""Headline rows and their robustness: each system declares once the rows its paper's abstract
and conclusion rest on (`register_headlines`); `veil explain KEY` stores its one-line answer in
the results store (experiment "explain.summary"), and the report prints it beside the verdict of a
headline row. An answer measured earlier and written down by the system (`record_explained`: its
text, the code it ran on, when and how) stands in where this code has not been explained yet, and
says so: explaining a headline takes minutes to hours, a report should not wait for it, and a
fresh checkout's report should not be silent on what is known. No import of the report or of
`veil.core.explain`, so both can use it."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass

from veil.core.store import Record, ResultStore, now_iso

SUMMARY_EXPERIMENT = "explain.summary"
HEADLINES: dict[str, tuple[tuple[str, ...], str]] = {}
NOT_EXPLAINED = "robustness not explained yet (veil explain KEY)"


@dataclass(frozen=True)
class Recorded:
    """`veil explain`'s answer for a headline row, measured on other code: what it said, the code
    (veil version or commit) and date it ran at, and the command."""

    text: str
    robust: bool
    at: str
    date: str
    command: str
    quick: bool = True

    def cited(self) -> str:
        return f"{self.text} (veil explain on {self.date}, code {self.at}; not re-run on this code)"


RECORDED: dict[str, Recorded] = {}


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


def record_explained(key: str, text: str, *, robust: bool, at: str, date: str, command: str,
                     quick: bool = True) -> None:
    """Writes down an earlier `veil explain` answer for the headline row `key` (see the module)."""
    if not is_headline(key):
        raise ValueError(f"record_explained: {key!r} is not a declared headline row (register_headlines first)")
    if not (text and at and date and command):
        raise ValueError(f"record_explained {key!r}: give the answer, the code it ran on, the date and the command")
    rec = Recorded(text, robust, at, date, command, quick)
    if RECORDED.get(key, rec) != rec:
        raise ValueError(f"record_explained {key!r}: recorded twice differently")
    RECORDED[key] = rec


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
    """The stored one-line answer of `veil explain` for this row under this code; else the
    recorded one for this mode, cited as measured on other code; else NOT_EXPLAINED."""
    if store is not None:
        from veil.core.runner import veil_version

        hit = store.get(SUMMARY_EXPERIMENT, _hash(key, quick), veil_version())
        if hit is not None:
            return hit.result["text"]
    rec = RECORDED.get(key)
    if rec is not None and rec.quick == quick:
        return rec.cited()
    return NOT_EXPLAINED.replace("KEY", key)
