"""`veil explain KEY`: how sure a report row's verdict is. The row is re-evaluated with the
assumptions it depends on (veil.core.provenance.register_assumption: a nominal value, a
plausible range and the range's source) moved — one at a time to the ends of their ranges,
then jointly over a Latin hypercube drawn by SALib — and the answer says which assumptions move
it most, whether any plausible combination flips its verdict, and the smallest change that does.

A row is evaluated by running its system's reproducer in a context that writes each
assumption's value into the config fields it names (its `knobs`), draws nothing and stops at
the row. Every experiment run inside goes through the results store, and so does each evaluated
point (experiment "explain.row", keyed by row, values and mode): asking again reads back."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from veil.core.errors import ConfigError, VeilError
from veil.core.provenance import PROVENANCE, Assumption
from veil.core.report import ReproduceContext, Section, selected_reproducers
from veil.core.robustness import store_summary
from veil.core.rows import Row, slug
from veil.core.store import ResultStore

POINT_EXPERIMENT = "explain.row"
PASSING = ("within", "holds")


class _Found(Exception):
    def __init__(self, row: Row):
        super().__init__(row.key)
        self.row = row


class _Null:
    """Stands in for a matplotlib figure or axes while explaining: any call or attribute gives
    it back, so the reproducer's drawing costs nothing."""

    def __getattr__(self, _name):
        return self

    def __call__(self, *_a, **_k):
        return self

    def __getitem__(self, _k):
        return self

    def __setitem__(self, _k, _v):
        pass

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return True

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __call__


def _subplots_null(nrows: int = 1, ncols: int = 1, **_kw):
    import numpy as np

    axes = np.empty((nrows, ncols), dtype=object)
    for i in range(nrows):
        for j in range(ncols):
            axes[i, j] = _Null()
    axes = axes.squeeze()
    return _Null(), (axes.item() if axes.ndim == 0 else axes)


class ExplainContext(ReproduceContext):
    """A reproducer's context that applies config overrides per experiment, draws and writes
    nothing, and stops as soon as the row `want` is taken."""

    def __init__(self, section: Section, out_dir: Path, store: ResultStore | None, quick: bool, jobs: int,
                 scheduler: Any, overrides: dict[str, dict[str, Any]], want: str | None, null_drawing: bool):
        super().__init__(section, out_dir, store, quick, jobs, scheduler)
        self.overrides = overrides
        self.want = want            # None: run to the end, keeping every row in `taken`
        self.null_drawing = null_drawing
        self.taken: dict[str, Row] = {}

    def _with(self, experiment: str, config: dict[str, Any] | None) -> dict[str, Any]:
        return {**(config or {}), **self.overrides.get(experiment, {})}

    def run(self, experiment: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        return super().run(experiment, self._with(experiment, config))

    def run_many(self, experiment: str, base: dict[str, Any], rows: list[dict[str, Any]],
                 jobs: int | None = None) -> list[dict[str, Any]]:
        over = self.overrides.get(experiment, {})
        return super().run_many(experiment, {**base, **over}, [{**r, **over} for r in rows], jobs)

    def subplots(self, *args, **kw):
        return _subplots_null(*args, **kw) if self.null_drawing else super().subplots(*args, **kw)

    def figure(self, fig, name: str, caption: str = "", rows=None, data=None) -> None:
        if not isinstance(fig, _Null):
            import matplotlib.pyplot as plt

            plt.close(fig)
        self._take_rows(rows, name)

    def table(self, title: str, rows, data=None, name: str | None = None) -> None:
        self._take_rows(rows, name or slug(title))

    def grid(self, *_a, **_k) -> None:
        pass

    def text(self, _paragraph: str) -> None:
        pass

    def _take_rows(self, rows, block: str) -> list[Row]:
        out = super()._take_rows(rows, block)
        for r in out:
            if r.key == self.want:
                raise _Found(r)
            self.taken[r.key] = r
        return out


def overrides_for(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{assumption: value} -> {experiment: {field: value}} through each assumption's knobs."""
    out: dict[str, dict[str, Any]] = {}
    for name, v in values.items():
        for knob in PROVENANCE.assumptions[name].knobs:
            exp, fld = knob.rsplit(".", 1)
            out.setdefault(exp, {})[fld] = v
    return out


def _run(system: str, values: dict[str, Any], want: str | None, store: ResultStore | None, quick: bool, jobs: int,
         scheduler: Any) -> tuple[Row | None, ExplainContext]:
    """The system's reproducer with the assumptions at `values`, up to the row `want` (or to
    its end); drawing with stand-ins first, for real if the stand-ins trip the reproducer."""
    rep = selected_reproducers([system])[0]
    over = overrides_for(values)
    for null in (True, False):
        sec = Section(system, rep.title)
        with tempfile.TemporaryDirectory(prefix="veil-explain-") as d:
            ctx = ExplainContext(sec, Path(d), store, quick, jobs, scheduler, over, want, null)
            try:
                rep.func(ctx)
            except _Found as f:
                return f.row, ctx
            except (ConfigError, KeyboardInterrupt):
                raise
            except Exception as e:
                if not null:
                    raise VeilError(f"the {system} reproducer failed: {type(e).__name__}: {e}") from e
                continue
            return None, ctx
    raise AssertionError("unreachable")


def evaluate(key: str, values: dict[str, Any], store: ResultStore | None, quick: bool = True, jobs: int = 1,
             scheduler: Any = None) -> tuple[Row | None, list[str]]:
    """The row `key` with the assumptions at `values`, and every row key the reproducer gave
    (the caller's near matches when the row never came)."""
    row, ctx = _run(key.split("/", 1)[0], values, key, store, quick, jobs, scheduler)
    return row, sorted(ctx.section.keys)


def all_rows(system: str, values: dict[str, Any], store: ResultStore | None, quick: bool = True, jobs: int = 1,
             scheduler: Any = None) -> dict[str, Row]:
    """Every row of `system`'s reproducer with the assumptions at `values`."""
    return _run(system, values, None, store, quick, jobs, scheduler)[1].taken


def falsify(system: str, store: ResultStore | None, quick: bool = True, jobs: int = 1,
            scheduler: Any = None) -> dict[str, str | None]:
    """For every shape row of `system` that holds: the first perturbation within the declared
    ranges (each assumption at each end of its range, each level of a named ablation) under which
    its predicate fails, or None where none does: a shape that nothing plausible can make fail is
    a self-check, not a finding."""
    assumptions = [a for a in PROVENANCE.assumptions.values() if a.system == system]
    nominal = {a.full: a.value for a in assumptions}
    base = all_rows(system, nominal, store, quick, jobs, scheduler)
    found: dict[str, str | None] = {k: None for k, r in base.items() if r.shape is not None and r.outcome == "holds"}
    for a in assumptions:
        if all(v is not None for v in found.values()):
            break
        for v in (a.levels if a.discrete else (a.lo, a.hi)):
            if v == a.value or not any(found[k] is None and a.applies_to(k) for k in found):
                continue
            rows = all_rows(system, {**nominal, a.full: v}, store, quick, jobs, scheduler)
            for k in found:
                if found[k] is None and k in rows and rows[k].outcome == "fails":
                    found[k] = f"{a.full} = {v}"
    return found


@dataclass
class Point:
    values: dict[str, Any]
    value: float | None
    verdict: str
    margin: float
    row: dict[str, Any] = field(default_factory=dict)   # the row as references.json has it

    def passing(self) -> bool:
        return self.verdict in PASSING


def margin(r: Row) -> float:
    """How far the row's value is inside its verdict's boundary (positive: within / holds;
    negative: outside / fails), in the row's unit: the quantity whose zero is the flip."""
    v = r.value
    if v is None:
        return -math.inf
    if r.shape is not None:
        s = r.shape
        m = {">": v - s.a, ">=": v - s.a, "<": s.a - v, "<=": s.a - v, "==": -abs(v - s.a)}.get(s.op)
        if m is None:
            m = min(v - s.a, s.b - v)
        if m == 0:
            return 0.0 if r.outcome == "holds" else -0.0
        return m
    if r.ref is None:
        return math.nan
    return r.band - abs(v - r.ref)


def _point_hash(key: str, values: dict[str, Any], quick: bool) -> str:
    text = json.dumps({"key": key, "values": values, "quick": quick}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_point(key: str, values: dict[str, Any], store: ResultStore | None, quick: bool = True, jobs: int = 1,
                 scheduler: Any = None) -> Point:
    """One evaluated point, read back from the store when it was evaluated before by this code."""
    from veil.core.runner import veil_version
    from veil.core.store import Record, now_iso

    h = _point_hash(key, values, quick)
    if store is not None:
        hit = store.get(POINT_EXPERIMENT, h, veil_version())
        if hit is not None:
            return _point(values, hit.result)
    import time

    t0 = time.perf_counter()
    row, seen = evaluate(key, values, store, quick, jobs, scheduler)
    if row is None:
        raise ConfigError(no_row_text(key, seen))
    m = margin(row)
    d = {**row.as_dict(), "tolerance": row.tolerance_text(), "margin": m if math.isfinite(m) else None}
    d["provenance"] = [c["name"] for c in d["provenance"]]
    if store is not None:
        store.put(Record(POINT_EXPERIMENT, h, veil_version(), 0, {"key": key, "values": values, "quick": quick},
                         d, time.perf_counter() - t0, now_iso()))
    return _point(values, d)


def _point(values: dict[str, Any], d: dict[str, Any]) -> Point:
    m = d["margin"]
    return Point(dict(values), d["value"], d["verdict"], float("nan") if m is None else float(m), d)


def check_key(key: str) -> None:
    """A key names a system with a reproducer: `system/...` (else one line with the systems)."""
    from veil.core.registry import REGISTRY

    from veil.core.registry import load_reproducers

    system = key.split("/", 1)[0] if "/" in key else ""
    load_reproducers()
    known = sorted(REGISTRY.reproducers)
    if system not in known:
        near = difflib.get_close_matches(system or key, known, n=3)
        raise ConfigError(f"explain: {key!r} is not a report row key 'SYSTEM/...'; systems: {', '.join(known)}"
                          + (f" (near: {', '.join(near)})" if near else ""))


def no_row_text(key: str, known: list[str]) -> str:
    near = difflib.get_close_matches(key, known, n=5, cutoff=0.5)
    hint = f"; near: {', '.join(near)}" if near else (f"; {len(known)} rows in that system" if known else "")
    return f"explain: no report row {key!r}{hint}"


def _worker(store_path: str | None, module: str, key: str, values: dict[str, Any], quick: bool) -> Point:
    """One point in a pool or Dask worker: it imports the reproducer's module and opens the
    store itself (SQLite in WAL mode takes writers from several processes)."""
    import importlib

    from veil.core.registry import load_reproducers

    load_reproducers()
    importlib.import_module(module)
    if store_path is None:
        return cached_point(key, values, None, quick)
    with ResultStore(store_path) as st:
        return cached_point(key, values, st, quick)


def evaluate_many(key: str, batch: list[dict[str, Any]], store: ResultStore | None, quick: bool, jobs: int,
                  scheduler: Any, label: str) -> list[Point]:
    """Points in input order: cached ones read back, the rest on the local pool (jobs > 1), a
    Dask cluster (scheduler), or here; a progress bar on a terminal."""
    from veil.core.runner import veil_version
    from veil.core.sweep import _progress, connect

    out: list[Point | None] = [None] * len(batch)
    todo = []
    for i, vals in enumerate(batch):
        hit = store.get(POINT_EXPERIMENT, _point_hash(key, vals, quick), veil_version()) if store else None
        if hit is not None:
            out[i] = _point(vals, hit.result)
        else:
            todo.append(i)
    bar = _progress(len(todo), f"explain {key}: {label}", True)
    try:
        module = selected_reproducers([key.split("/", 1)[0]])[0].func.__module__
        path = str(store.path) if store is not None else None
        if scheduler and len(todo) > 1:
            client, own = connect(scheduler) if isinstance(scheduler, str) else (scheduler, False)
            try:
                futs = {client.submit(_worker, path, module, key, batch[i], quick, pure=False): i for i in todo}
                from dask.distributed import as_completed

                for f in as_completed(futs):
                    out[futs[f]] = f.result()
                    bar.update(1)
            finally:
                if own:
                    client.close()
        elif jobs > 1 and len(todo) > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor, as_completed as done

            with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=mp.get_context("spawn")) as pool:
                futs = {pool.submit(_worker, path, module, key, batch[i], quick): i for i in todo}
                for f in done(futs):
                    out[futs[f]] = f.result()
                    bar.update(1)
        else:
            for i in todo:
                out[i] = cached_point(key, batch[i], store, quick)
                bar.update(1)
    finally:
        bar.close()
    return [p for p in out if p is not None]


@dataclass
class Explanation:
    key: str
    row: dict[str, Any]
    assumptions: list[Assumption]
    nominal: Point
    one_at_a_time: dict[str, list[Point]] = field(default_factory=dict)
    flips: list[dict[str, Any]] = field(default_factory=list)      # one assumption alone
    joint: list[Point] = field(default_factory=list)
    first_order: dict[str, float] = field(default_factory=dict)
    joint_flip: dict[str, Any] | None = None

    @property
    def fragile(self) -> bool:
        return bool(self.flips) or self.joint_flip is not None

    def smallest(self) -> dict[str, Any] | None:
        """The smallest change that flips the verdict (distance: the largest move of any
        assumption, as a share of its range; a discrete level counts as a whole range)."""
        cands = list(self.flips) + ([self.joint_flip] if self.joint_flip else [])
        return min(cands, key=lambda c: c["distance"]) if cands else None

    def swing(self, name: str) -> float:
        vs = [p.value for p in self.one_at_a_time.get(name, []) if p.value is not None]
        return (max(vs) - min(vs)) if vs else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.nominal.value, "verdict": self.nominal.verdict,
                "assumptions": [a.as_dict() for a in self.assumptions],
                "one_at_a_time": {n: [{"values": p.values[n], "value": p.value, "verdict": p.verdict} for p in ps]
                                  for n, ps in self.one_at_a_time.items()},
                "swing": {a.full: self.swing(a.full) for a in self.assumptions},
                "first_order": self.first_order, "joint_points": len(self.joint),
                "joint_flipping": sum(p.verdict != self.nominal.verdict for p in self.joint),
                "flips": self.flips, "joint_flip": self.joint_flip, "smallest": self.smallest(),
                "robust": not self.fragile}


def _unit(a: Assumption, v: Any) -> float:
    """A value's position in its range, 0..1 (a level: its index over the count - 1)."""
    if a.discrete:
        return a.levels.index(v) / max(1, len(a.levels) - 1)
    return (float(v) - a.lo) / (a.hi - a.lo)


def _flip_point(key: str, a: Assumption, nominal: dict[str, Any], xa: float, xb: float, store, quick: bool,
                xtol: float) -> float:
    """Where between xa and xb (verdicts differ there) the row's margin crosses zero: Brent's
    method on the margin, each evaluation through the store; xb where the margin gives no sign."""
    from scipy.optimize import brentq

    def f(x: float) -> float:
        return cached_point(key, {**nominal, a.full: float(x)}, store, quick).margin

    fa, fb = f(xa), f(xb)
    if not (math.isfinite(fa) and math.isfinite(fb)) or fa * fb > 0:
        return xb
    return float(brentq(f, xa, xb, xtol=xtol * (a.hi - a.lo)))


def _grid(a: Assumption, levels: int) -> list[Any]:
    """The values one assumption is evaluated at alone: every level of a discrete one; for a
    number, `levels` evenly spaced points over its range (ends included), so a window inside
    the range where the verdict differs is found, not only its ends."""
    if a.discrete:
        return [v for v in a.levels if v != a.value]
    import numpy as np

    return [float(x) for x in np.linspace(a.lo, a.hi, max(2, levels)) if not math.isclose(x, a.value)]


def _flips_of(ex: "Explanation", key: str, a: Assumption, nominal_vals: dict[str, Any], store, quick: bool,
              xtol: float) -> None:
    """The intervals of one assumption's range where the verdict differs from the nominal one,
    their edges found by Brent's method between grid points of differing verdict."""
    base = ex.nominal.verdict
    pts = ex.one_at_a_time.get(a.full, [])
    if a.discrete:
        for p in pts:
            if p.verdict != base:
                ex.flips.append({"assumption": a.full, "value": p.values[a.full], "nominal": a.value,
                                 "interval": None, "distance": 1.0, "verdict": p.verdict})
        return
    grid = sorted([(float(a.value), base)] + [(float(p.values[a.full]), p.verdict) for p in pts])
    i = 0
    while i < len(grid):
        if grid[i][1] == base:
            i += 1
            continue
        j = i
        while j + 1 < len(grid) and grid[j + 1][1] != base:
            j += 1
        lo = a.lo if i == 0 else _flip_point(key, a, nominal_vals, grid[i - 1][0], grid[i][0], store, quick, xtol)
        hi = a.hi if j == len(grid) - 1 else _flip_point(key, a, nominal_vals, grid[j + 1][0], grid[j][0], store,
                                                         quick, xtol)
        x0 = float(a.value)
        edge = lo if x0 <= lo else (hi if x0 >= hi else x0)
        ex.flips.append({"assumption": a.full, "value": edge, "nominal": a.value, "interval": [lo, hi],
                         "distance": abs(_unit(a, edge) - _unit(a, x0)), "verdict": grid[i][1]})
        i = j + 1


def explain(key: str, store: ResultStore | None, *, quick: bool = True, jobs: int = 1, scheduler: Any = None,
            samples: int = 32, seed: int = 0, levels: int = 5, xtol: float = 1e-4,
            log: Callable[[str], None] = lambda _m: None
            ) -> Explanation:
    check_key(key)
    assumptions = PROVENANCE.assumed(key)
    nominal_vals = {a.full: a.value for a in assumptions}
    nominal = cached_point(key, nominal_vals, store, quick, jobs, scheduler)  # a missing row: near matches
    if nominal.verdict == "no reference":
        raise ConfigError(f"explain: row {key!r} has no reference and no shape: there is no verdict to be sure of")
    if not assumptions:
        raise ConfigError(f"explain: row {key!r} depends on no assumption with a declared range "
                          f"(veil.core.provenance.register_assumption); nothing to move")
    ex = Explanation(key, nominal.row, assumptions, nominal)
    # one at a time: each assumption over a grid of its range (every level of a discrete one)
    batch, owner = [], []
    for a in assumptions:
        for v in _grid(a, levels):
            batch.append({**nominal_vals, a.full: v})
            owner.append(a.full)
    log(f"one at a time: {len(batch)} points")
    pts = evaluate_many(key, batch, store, quick, jobs, scheduler, "one at a time")
    for name, p in zip(owner, pts):
        ex.one_at_a_time.setdefault(name, []).append(p)
    for a in assumptions:
        _flips_of(ex, key, a, nominal_vals, store, quick, xtol)
    # jointly: a Latin hypercube over every range (SALib), first-order indices by RBD-FAST
    if samples > 0:
        _joint(ex, key, store, quick, jobs, scheduler, samples, seed, log)
    if store is not None:
        store_summary(store, key, quick, summary_text(ex), not ex.fragile, 0.0)
    return ex


def summary_text(ex: Explanation) -> str:
    """One line for the report beside a headline row's verdict: robust, fragile with what flips
    it, or for a failing row what would make it hold (or that nothing plausible does)."""
    passing = ex.nominal.verdict in PASSING
    best = ex.smallest()
    scope = f"{len(ex.assumptions)} assumptions at their range ends" + (
        f" and {len(ex.joint)} joint points" if ex.joint else "")
    if best is None:
        return (f"robust over the declared ranges ({scope})" if passing
                else f"fails under every plausible assumption ({scope})")
    if best["assumption"] == "jointly":
        moved = ", ".join(f"{n} = {_v(v)}" for n, v in best["values"].items())
        return f"{'fragile: ' + best['verdict'] if passing else 'holds'} at {moved} (moved jointly)"
    a = PROVENANCE.assumptions[best["assumption"]]
    if a.discrete:
        return f"{'fragile: ' + best['verdict'] if passing else 'holds'} if {a.full} = {best['value']}"
    lo, hi = best["interval"]       # where the verdict differs, nearest the nominal value
    return (f"{'fragile: ' + best['verdict'] if passing else 'holds'} if {a.full} in [{_v(lo)}, {_v(hi)}]"
            f" (nominal {_v(a.value)}, plausible {a.range_text()})")


def _joint(ex: Explanation, key: str, store, quick: bool, jobs: int, scheduler, samples: int, seed: int,
           log) -> None:
    import numpy as np
    from SALib.analyze import rbd_fast
    from SALib.sample import latin

    names = [a.full for a in ex.assumptions]
    problem = {"num_vars": len(names), "names": names,
               "bounds": [[0.0, float(len(a.levels))] if a.discrete else [a.lo, a.hi] for a in ex.assumptions]}
    X = latin.sample(problem, samples, seed=seed)
    batch = []
    for x in X:
        vals = {}
        for a, xi in zip(ex.assumptions, x):
            vals[a.full] = a.levels[min(int(xi), len(a.levels) - 1)] if a.discrete else float(xi)
        batch.append(vals)
    log(f"jointly: {len(batch)} points (Latin hypercube, seed {seed})")
    ex.joint = evaluate_many(key, batch, store, quick, jobs, scheduler, "jointly")
    Y = np.array([p.value if p.value is not None else np.nan for p in ex.joint], dtype=float)
    if np.isfinite(Y).all() and Y.std() > 0 and samples >= 2 * 10 + 1:
        si = rbd_fast.analyze(problem, X, Y, M=min(10, (samples - 1) // 2), seed=seed)
        ex.first_order = {n: float(max(0.0, s)) for n, s in zip(names, si["S1"])}
    flipping = [p for p in ex.joint if p.verdict != ex.nominal.verdict]
    if flipping:
        def dist(p: Point) -> float:
            return max(abs(_unit(a, p.values[a.full]) - _unit(a, a.value)) for a in ex.assumptions)
        best = min(flipping, key=dist)
        ex.joint_flip = {"assumption": "jointly", "values": best.values, "distance": dist(best),
                         "value": best.value, "verdict": best.verdict}


def _v(x: Any) -> str:
    from veil.core.rows import _fmt

    return _fmt(x) if isinstance(x, (int, float)) else str(x)


def render(ex: Explanation) -> str:
    """The answer as a reader gets it on the terminal."""
    r = ex.row
    unit = f" {r['unit']}" if r.get("unit") else ""
    ref = f" against {_v(r['reference'])}{unit} ({r['tolerance']}, {r['source']})" if r.get("reference") is not None \
        else (f" ({r['tolerance']}, {r['source']})" if r.get("shape") else "")
    lines = [f"{ex.key}: {r['label']}", f"  {_v(ex.nominal.value)}{unit}{ref}: {ex.nominal.verdict} "
             f"({r.get('basis')})", "", f"assumptions it depends on ({len(ex.assumptions)}):"]
    for a in ex.assumptions:
        lines.append(f"  {a.full} = {_v(a.value)}{(' ' + a.unit) if a.unit else ''}, plausible {a.range_text()}: "
                     f"{a.source}")
    lines += ["", "one at a time (the value over a grid of each range; verdict):"]
    order = sorted(ex.assumptions, key=lambda a: -ex.swing(a.full))
    for a in order:
        pts = ex.one_at_a_time.get(a.full, [])
        ends = ", ".join(f"{_v(p.values[a.full])} -> {_v(p.value)} {p.verdict}" for p in pts)
        lines.append(f"  {a.full}: swing {_v(ex.swing(a.full))}{unit}; {ends}")
    if ex.joint:
        n_flip = sum(p.verdict != ex.nominal.verdict for p in ex.joint)
        vals = [p.value for p in ex.joint if p.value is not None]
        lines += ["", f"jointly ({len(ex.joint)} points, Latin hypercube): value {_v(min(vals))} .. {_v(max(vals))}"
                      f"{unit}; verdict differs at {n_flip} of {len(ex.joint)}" if vals else
                  f"jointly ({len(ex.joint)} points): no value"]
        if ex.first_order:
            lines.append("  first-order share of the variance (SALib RBD-FAST): " + ", ".join(
                f"{n} {s:.2f}" for n, s in sorted(ex.first_order.items(), key=lambda kv: -kv[1])))
    lines.append("")
    best = ex.smallest()
    if best is None:
        lines.append(f"{'robust' if ex.nominal.verdict in PASSING else 'fails under every plausible assumption'}: "
                     f"the verdict ({ex.nominal.verdict}) is the same over each range's grid and at every sampled "
                     f"combination")
    elif best["assumption"] == "jointly":
        moved = ", ".join(f"{n} = {_v(v)}" for n, v in best["values"].items())
        lines.append(f"{'fragile' if ex.nominal.verdict in PASSING else 'would hold'}: {best['verdict']} when moved "
                     f"jointly to {moved} (the largest move {best['distance']:.0%} of a range); no single "
                     f"assumption's grid found a change")
    else:
        lines.append(f"{'fragile: ' if ex.nominal.verdict in PASSING else 'would hold: '}{best['verdict']} when "
                     f"{best['assumption']} = {_v(best['value'])} (nominal {_v(best['nominal'])}, "
                     f"{best['distance']:.0%} of its range): the smallest change found")
        for f in ex.flips:
            where = (f"in [{_v(f['interval'][0])}, {_v(f['interval'][1])}]" if f.get("interval")
                     else f"= {_v(f['value'])}")
            lines.append(f"  {f['verdict']} when {f['assumption']} {where}")
    return "\n".join(lines)
