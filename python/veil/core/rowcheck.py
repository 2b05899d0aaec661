"""Shapes that can fail, shown cheaply: a small evaluator per shape row.

Re-running a whole reproducer at every end of every assumption's range (`veil.core.explain.falsify`)
costs an hour per system; most of it runs points no shape row reads. A system instead declares, in
`python/veil/<system>/rowchecks.py`, evaluators that run only what their shape rows need
(`register_row_check`): the experiment points behind the rows, at sizes reduced where the
predicate's truth does not depend on the size (the evaluator says what it reduces and why), handed
to `ctx.table` under the report's own block name so the rows get the report's keys. For each row
it names the perturbation under which the predicate fails: an assumption at a value within its
declared range (or one of its levels), or a named ablation (config fields set to an alternative
the paper's design does not take, with what it removes). Every experiment point goes through the
results store, and so does each evaluation (experiment "explain.rowcheck").

`falsify(system, store)` evaluates each check at the nominal values and under each row's declared
perturbation; `search=True` also tries every assumption the row depends on at each end of its range
(each level) and every ablation the check declares, to find perturbations. A shape row with no
evaluator, or one that nothing plausible makes fail, is not a finding: the reproducer marks it
`Row(self_check="why")` and the report counts it as a self-check, never as holding."""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from veil.core.provenance import PROVENANCE, Assumption
from veil.core.store import ResultStore

ROWCHECK_EXPERIMENT = "explain.rowcheck"


@dataclass(frozen=True)
class Ablation:
    """A named alternative outside the declared ranges: config fields ("experiment.field") set to
    values that remove or replace a mechanism, and what that removes."""

    name: str
    fields: tuple[tuple[str, Any], ...]
    what: str

    def text(self) -> str:
        return f"ablation '{self.name}' ({', '.join(f'{k} = {v}' for k, v in self.fields)})"


def ablation(name: str, fields: dict[str, Any], *, what: str) -> Ablation:
    if not what:
        raise ValueError(f"ablation {name!r}: say what it removes or replaces")
    if not fields or any(k.count(".") < 2 for k in fields):
        raise ValueError(f"ablation {name!r}: fields are 'system.experiment.field' names")
    return Ablation(name, tuple(sorted(fields.items())), what)


# A perturbation: (assumption full name, a value within its declared range) or an Ablation.
Perturbation = Any


def perturbation_text(p: Perturbation) -> str:
    return p.text() if isinstance(p, Ablation) else f"{p[0]} = {p[1]}"


def overrides(p: Perturbation | None) -> dict[str, dict[str, Any]]:
    """{experiment: {field: value}} for a perturbation (none: the nominal values)."""
    out: dict[str, dict[str, Any]] = {}
    if p is None:
        return out
    pairs = p.fields if isinstance(p, Ablation) else [(k, p[1]) for k in PROVENANCE.assumptions[p[0]].knobs]
    for knob, v in pairs:
        exp, fld = _split_knob(knob)
        out.setdefault(exp, {})[fld] = v
    return out


def _split_knob(knob: str) -> tuple[str, str]:
    """("memnet.memsys", "secure.dwell_cycles") from "memnet.memsys.secure.dwell_cycles": an
    experiment is named "system.name", and a field may sit in a nested table (a dotted key)."""
    parts = knob.split(".")
    return ".".join(parts[:2]), ".".join(parts[2:])


def _in_range(a: Assumption, v: Any) -> bool:
    return v in a.levels if a.discrete else (isinstance(v, (int, float)) and a.lo <= float(v) <= a.hi)


@dataclass(frozen=True)
class RowCheck:
    system: str
    name: str
    keys: tuple[str, ...]                 # the shape rows it gives (fnmatch patterns)
    func: Callable[[Any], None]
    reduced: str                          # what is smaller than the report's run, and why it may be
    flips: tuple[tuple[str, Perturbation], ...] = ()   # (row key pattern, its falsifying perturbation)
    ablations: tuple[Ablation, ...] = ()  # further named ablations `search` tries

    def covers(self, key: str) -> bool:
        return any(fnmatch.fnmatchcase(key, p) for p in self.keys)

    def flip_for(self, key: str) -> Perturbation | None:
        return next((p for pat, p in self.flips if fnmatch.fnmatchcase(key, pat)), None)

    def candidates(self, key: str) -> list[Perturbation]:
        """What `search` tries for a row: its declared flip, each assumption it depends on at each
        end of its range (each level), then the check's ablations."""
        out: list[Perturbation] = []
        own = self.flip_for(key)
        if own is not None:
            out.append(own)
        for a in PROVENANCE.assumed(key):
            for v in (a.levels if a.discrete else (a.lo, a.hi)):
                if v != a.value and (a.full, v) not in out:
                    out.append((a.full, v))
        return out + [x for x in self.ablations if x not in out]


CHECKS: dict[str, list[RowCheck]] = {}


def register_row_check(system: str, name: str, keys: list[str] | tuple[str, ...], *, reduced: str,
                       flips: dict[str, Perturbation] | None = None, ablations: list[Ablation] | tuple = ()):
    """Declares `func(ctx)` as the evaluator of `system`'s shape rows `keys`: it runs (through
    `ctx.run` / `ctx.run_many`, which apply the perturbation's overrides and the store) only what
    those rows need and hands them to `ctx.table(title, rows, name=BLOCK)` under the report's
    block name. `reduced` says what is smaller than in the report and why the predicate's truth
    does not depend on it ("" is refused: say "the report's sizes" when nothing is)."""
    where = f"row check {system}/{name}"
    if not keys or any(not k.startswith(f"{system}/") for k in keys):
        raise ValueError(f"{where}: keys are row key patterns starting with '{system}/'")
    if not reduced:
        raise ValueError(f"{where}: say what the evaluator reduces and why the predicate does not depend on it")
    flips = dict(flips or {})
    for pat, p in flips.items():
        if not any(fnmatch.fnmatchcase(pat, k) or pat == k for k in keys):
            raise ValueError(f"{where}: flip for {pat!r}, which is not one of its keys")
        if not isinstance(p, Ablation):
            a = PROVENANCE.assumptions.get(p[0])
            if a is None:
                raise ValueError(f"{where}: {p[0]!r} is not a registered assumption")
            if not _in_range(a, p[1]):
                raise ValueError(f"{where}: {p[0]} = {p[1]} is outside its declared range {a.range_text()}")

    def deco(func: Callable[[Any], None]) -> Callable[[Any], None]:
        check = RowCheck(system, name, tuple(keys), func, reduced, tuple(flips.items()), tuple(ablations))
        lst = CHECKS.setdefault(system, [])
        lst[:] = [c for c in lst if c.name != name] + [check]
        return func

    return deco


# Rows of a report section whose code lives in veil.core (the leakage table, "leak/...").
_CHECK_MODULES = {"leak": "veil.core.leak.rowchecks"}


def load_checks(system: str) -> list[RowCheck]:
    """The row checks `system` declares (importing `veil.<system>.rowchecks` where it exists)."""
    try:
        importlib.import_module(_CHECK_MODULES.get(system, f"veil.{system}.rowchecks"))
    except ModuleNotFoundError as e:
        if e.name not in (f"veil.{system}", f"veil.{system}.rowchecks"):
            raise
    return list(CHECKS.get(system, []))


def _hash(check: RowCheck, p: Perturbation | None) -> str:
    text = json.dumps({"system": check.system, "check": check.name, "keys": check.keys, "reduced": check.reduced,
                       "perturbation": None if p is None else perturbation_text(p)}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def evaluate(check: RowCheck, p: Perturbation | None, store: ResultStore | None, jobs: int = 1) -> dict[str, dict]:
    """The check's shape rows under perturbation `p` (None: nominal): key -> value, verdict, label;
    read back from the store when this code evaluated it before."""
    from veil.core.explain import ExplainContext
    from veil.core.runner import veil_version
    from veil.core.section import Section
    from veil.core.store import Record, now_iso

    h = _hash(check, p)
    if store is not None:
        hit = store.get(ROWCHECK_EXPERIMENT, h, veil_version())
        if hit is not None:
            return hit.result["rows"]
    t0 = time.perf_counter()
    sec = Section(check.system, f"row check {check.name}")
    with tempfile.TemporaryDirectory(prefix="veil-rowcheck-") as d:
        ctx = ExplainContext(sec, Path(d), store, True, jobs, None, overrides(p), None, True)
        check.func(ctx)
    rows = {k: {"value": r.value, "verdict": r.outcome, "label": r.label, "shape": r.shape.text(r.unit)}
            for k, r in ctx.taken.items() if check.covers(k) and r.shape is not None}
    if not rows:
        raise AssertionError(f"row check {check.system}/{check.name} gave none of its rows {list(check.keys)}")
    if store is not None:
        store.put(Record(ROWCHECK_EXPERIMENT, h, veil_version(), 0,
                         {"check": check.name, "perturbation": None if p is None else perturbation_text(p)},
                         {"rows": rows}, time.perf_counter() - t0, now_iso()))
    return rows


@dataclass
class Finding:
    key: str
    check: str
    nominal: str                      # the verdict the evaluator gives at the nominal values
    value: float | None
    flipped_by: str | None = None     # the perturbation under which it fails
    flipped_value: float | None = None
    tried: list[str] = field(default_factory=list)


def falsify(system: str, store: ResultStore | None, *, search: bool = False, jobs: int = 1,
            log: Callable[[str], None] = lambda _m: None, checks: set[str] | None = None) -> dict[str, Finding]:
    """Per shape row a check gives: its nominal verdict and the first perturbation (the declared
    one; with `search`, then every range end, level and ablation) under which it fails. `checks`:
    only the checks of these names (a test's cheap subset; the rest behind the command line)."""
    out: dict[str, Finding] = {}
    for check in load_checks(system):
        if checks is not None and check.name not in checks:
            continue
        t0 = time.perf_counter()
        base = evaluate(check, None, store, jobs)
        found = {k: Finding(k, check.name, r["verdict"], r["value"]) for k, r in base.items()}
        # a search also tries the rows marked self-check, to show what was tried on them
        open_verdicts = ("holds", "self-check") if search else ("holds",)
        cands: list[Perturbation] = []
        for k, f in found.items():
            if f.nominal in open_verdicts:
                for p in (check.candidates(k) if search else [check.flip_for(k)]):
                    if p is not None and p not in cands:
                        cands.append(p)
        for p in cands:
            open_ = [f for f in found.values() if f.nominal in open_verdicts and f.flipped_by is None
                     and p in (check.candidates(f.key) if search else [check.flip_for(f.key)])]
            if not open_:
                continue
            rows = evaluate(check, p, store, jobs)
            for f in open_:
                f.tried.append(perturbation_text(p))
                r = rows.get(f.key)
                if r is not None and r["verdict"] == "fails":
                    f.flipped_by, f.flipped_value = perturbation_text(p), r["value"]
        log(f"{system}/{check.name}: {len(found)} rows, {len(cands)} perturbations, "
            f"{time.perf_counter() - t0:.1f} s")
        out.update(found)
    return out


def render(findings: dict[str, Finding]) -> str:
    from veil.core.rows import _fmt

    lines = []
    for k in sorted(findings):
        f = findings[k]
        if f.nominal == "fails":
            what = "fails at the nominal values (a finding as it stands)"
        elif f.nominal == "self-check" and f.tried:
            what = (f"self-check ({_fmt(f.value)}); " + (f"fails ({_fmt(f.flipped_value)}) under {f.flipped_by}"
                    if f.flipped_by else f"fails under none of: {'; '.join(f.tried)}"))
        elif f.nominal != "holds":
            what = f"{f.nominal} at the nominal values"
        elif f.flipped_by:
            what = f"holds ({_fmt(f.value)}); fails ({_fmt(f.flipped_value)}) under {f.flipped_by}"
        else:
            what = f"holds ({_fmt(f.value)}); fails under none of: {'; '.join(f.tried) or 'nothing tried'}"
        lines.append(f"{k}: {what}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """python -m veil.core.rowcheck SYSTEM [--search] [--store PATH]: each shape row's evaluator at
    the nominal values and under its perturbations."""
    import argparse

    from veil.core.store import default_path
    from veil.core.registry import load_systems

    ap = argparse.ArgumentParser(prog="python -m veil.core.rowcheck")
    ap.add_argument("system")
    ap.add_argument("--search", action="store_true", help="try every range end, level and ablation")
    ap.add_argument("--store", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--check", action="append", default=None, help="only this check (repeatable)")
    args = ap.parse_args(argv)
    load_systems()
    # `python -m` runs this file as __main__: the registry the systems fill is the imported module's
    from veil.core import rowcheck

    if not rowcheck.load_checks(args.system):
        from veil.core.registry import system_names

        known = [n for n in system_names() if rowcheck.load_checks(n)]
        print(f"rowcheck: no shape-row evaluators declared for {args.system!r} (systems with some: "
              f"{', '.join(known)})", file=__import__("sys").stderr)
        return 2
    with ResultStore(args.store or default_path()) as st:
        found = rowcheck.falsify(args.system, st, search=args.search, jobs=args.jobs, log=print,
                                 checks=set(args.check) if args.check else None)
    print(rowcheck.render(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
