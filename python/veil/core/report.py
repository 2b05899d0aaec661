"""`veil reproduce`: each system's reproducer fills a section; out come HTML pages (a summary
that leads with every failing row, one page per system), PNG+SVG figures with their data as CSV,
a flat results.json of headline metrics and references.json (every row beside its reference,
source, tolerance, verdict, derived basis and the provenance of the constants it depends on)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from veil.core.config import validate
from veil.core.errors import ConfigError, VeilError
from veil.core.registry import REGISTRY, Reproducer, load_reproducers
from veil.core.report_html import page_name, row_anchor, write_pages
from veil.core.robustness import is_headline, robustness_of
from veil.core.rows import BASES, FAILING, Row, _fmt, host_name, machine_load, slug
from veil.core.runner import LAST_CPU_S, progress_wanted, run_experiment, veil_version
from veil.core.section import SUMMARY_COLUMNS, FigureEntry, Section, summary_column
from veil.core.store import ResultStore
from veil.core.sweep import configs_for, connect, run_points
from veil.core.timing import section_timing, write_timing


class ReproduceContext:
    """What a reproducer gets: cached experiment runs, figure and metric sinks, the mode."""

    def __init__(self, section: Section, out_dir: Path, store: ResultStore | None, quick: bool, jobs: int,
                 scheduler: Any = None):
        self.section = section
        # A Dask scheduler address (or Client): run_many sends uncached points there.
        self.scheduler = scheduler
        self.out_dir = out_dir
        self.store = store
        self.quick = quick
        self.full = not quick
        self.jobs = jobs
        self.started = time.perf_counter()
        # `veil reproduce` turns the progress lines on; `veil explain` re-runs reproducers many
        # times and keeps its own
        self.show_progress = False
        # (experiment, config hash) of the points this reproduction has computed or read back:
        # asked for again (after a prefetch, or by a second figure) they are neither counted nor
        # timed twice
        self._seen: set[tuple[str, str]] = set()
        (out_dir / "figures").mkdir(parents=True, exist_ok=True)

    def progress(self, what: str) -> None:
        """One line per figure, table or point on stderr, with the section's elapsed time, so a
        section that runs for minutes is never silent (a terminal only unless VEIL_PROGRESS=1)."""
        if self.show_progress and progress_wanted():
            print(f"[{self.system}] {what} ({time.perf_counter() - self.started:.0f} s)", file=sys.stderr, flush=True)

    @property
    def system(self) -> str:
        return self.section.system

    def run(self, experiment: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Runs (or reads back) one experiment point and returns its result dict."""
        self.progress(f"{experiment} ...")
        t0 = time.perf_counter()
        rec, cached = run_experiment(experiment, validate(experiment, config or {}), self.store)
        seen = cached and (experiment, rec.config_hash) in self._seen
        if not seen:
            self._count(cached)
        self._seen.add((experiment, rec.config_hash))
        self._batch(experiment, False, [] if seen else [rec.elapsed_s if cached else LAST_CPU_S[0]], t0)
        return rec.result

    def run_many(self, experiment: str, base: dict[str, Any], rows: list[dict[str, Any]],
                 jobs: int | None = None) -> list[dict[str, Any]]:
        """Runs many points on the local pool, or on the Dask cluster given by --scheduler
        (cached ones read back); results in row order."""
        cfgs = configs_for(experiment, base, rows)
        self.progress(f"{experiment}: {len(cfgs)} points ...")
        t0 = time.perf_counter()
        out = run_points(experiment, cfgs, self.store, jobs=jobs or self.jobs, scheduler=self.scheduler,
                         label=f"{self.system}: {experiment}")
        if out.failed:
            i, err = out.failed[0]
            raise VeilError(f"{experiment} point {rows[i]}: {err}")
        # a point computed here costs its CPU time; one read back, the wall time it took then,
        # unless this reproduction already had it (a prefetch, another figure): then nothing
        cost, seen = [], 0
        for i, r in enumerate(out.records):
            key = (experiment, r.config_hash)
            if i in out.cpu_s:
                cost.append(out.cpu_s[i])
            elif i not in out.repeats:
                if key in self._seen:
                    seen += 1
                else:
                    cost.append(r.elapsed_s)
            self._seen.add(key)
        self.section.computed += out.computed
        self.section.cached += out.cached - seen
        self._batch(experiment, True, cost, t0)
        return [r.result for r in out.records]

    def prefetch(self, experiment: str, rows: list[dict[str, Any]]) -> None:
        """Runs the points that several figures will ask for as one batch (better spread over the
        pool or cluster than figure by figure); the figures' run_many then read them back."""
        self.run_many(experiment, {}, rows)

    def _batch(self, experiment: str, many: bool, point_s: list[float], t0: float) -> None:
        """Kept for timing.json: what the points cost, and the wall time the batch took here."""
        self.section.batches.append({"experiment": experiment, "many": many, "point_s": point_s})
        self.section.batch_wall_s += time.perf_counter() - t0

    def _count(self, cached: bool) -> None:
        if cached:
            self.section.cached += 1
        else:
            self.section.computed += 1

    def subplots(self, *args, **kw):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        kw.setdefault("figsize", (6.4, 4.0))
        kw.setdefault("layout", "constrained")
        return plt.subplots(*args, **kw)

    def _take_rows(self, rows, block: str) -> list[Row]:
        """The rows with their keys and derived bases; a row with a metric also writes it."""
        rows = list(rows or [])
        for r in rows:
            if not isinstance(r, Row):
                raise TypeError(f"{self.system}/{block}: report rows are Row objects, not {type(r).__name__}")
            for text in (r.label, r.source, r.tol_source, r.note, r.basis_reason, r.self_check):
                check_words(text, f"row {r.label!r}")
            if r.unit in _PRIVATE_UNITS:
                raise ValueError(f"row {r.label!r}: unit {r.unit!r} is shorthand a reader cannot decode; "
                                 f"say it plainly (e.g. {_PRIVATE_UNITS[r.unit]!r})")
        keys = [self._key(r, block) for r in rows]
        out = [r.resolve(k, keys) for r, k in zip(rows, keys)]
        out = [replace(r, robustness=robustness_of(self.store, r.key, self.quick)) if is_headline(r.key) else r
               for r in out]
        for r in out:
            if r.metric is not None:
                self.metric(r.metric, r.value)
                self.section.metric_rows[r.metric] = r
        return out

    def _key(self, r: Row, block: str) -> str:
        key = r.key or r.metric or f"{self.system}/{block}/{slug(r.label)}"
        if not key.startswith(f"{self.system}/"):
            raise ValueError(f"row key {key!r} must start with '{self.system}/'")
        if key in self.section.keys:
            if r.key or r.metric:
                raise ValueError(f"row key {key!r} used twice in {self.system}")
            n = 2
            while f"{key}_{n}" in self.section.keys:
                n += 1
            key = f"{key}_{n}"
        self.section.keys.add(key)
        return key

    def figure(self, fig, name: str, caption: str = "", rows=None,
               data: dict[str, dict[str, list]] | None = None) -> None:
        """Saves `fig` as PNG and SVG, shows it full width above its rows, and writes `data`
        ({"series": {"x": [...], "y": [...], ...}}, Veil's and the references' series) as CSV beside it."""
        import matplotlib.pyplot as plt

        stem = f"{self.system}_{name}"
        png = self.out_dir / "figures" / f"{stem}.png"
        svg = self.out_dir / "figures" / f"{stem}.svg"
        fig.text(0.995, 0.005, f"veil {veil_version()}", ha="right", va="bottom", fontsize=6, color="0.5")
        fig.savefig(png, dpi=120)
        fig.savefig(svg)
        plt.close(fig)
        path = self._write_csv(stem, data) if data else None
        check_words(caption, f"figure {name!r}")
        self.section.blocks.append(("figure", FigureEntry(name, caption, png, svg, self._take_rows(rows, name), path)))
        self.progress(f"figure {name} done")

    def table(self, title: str, rows, data: dict[str, dict[str, list]] | None = None,
              name: str | None = None) -> None:
        """A comparison table without a figure; `data` (as for figure) goes to a CSV named `name`."""
        path = None
        block = name or slug(title)
        if data:
            path = self._write_csv(f"{self.system}_{block}", data)
        check_words(title, f"table {title!r}")
        self.section.blocks.append(("table", (title, self._take_rows(rows, block), path)))
        self.progress(f"table {title!r} done")

    def _write_csv(self, stem: str, data: dict[str, dict[str, list]]) -> Path:
        cols: list[str] = []
        for series, d in data.items():
            lengths = {k: len(v) for k, v in d.items()}
            if len(set(lengths.values())) > 1:
                raise ValueError(f"figure data {stem}/{series}: columns of unequal length {lengths}")
            cols += [k for k in d if k not in cols]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["series", *cols])
        for series, d in data.items():
            n = len(next(iter(d.values()), []))
            for i in range(n):
                w.writerow([series, *(_csv_cell(d[c][i]) if c in d else "" for c in cols)])
        path = self.out_dir / "figures" / f"{stem}.csv"
        path.write_text(buf.getvalue())
        return path

    def grid(self, title: str, header: list[str], rows: list[list[Any]]) -> None:
        """A plain table with its own columns (for numbers that have no reference counterpart)."""
        self.section.blocks.append(("grid", (title, list(header), [list(r) for r in rows])))

    def metric(self, key: str, value: Any) -> None:
        if not key.startswith(f"{self.system}/"):
            raise ValueError(f"metric '{key}' must start with '{self.system}/'")
        self.section.metrics[key] = value

    def text(self, paragraph: str) -> None:
        check_words(paragraph, "report text")
        self.section.blocks.append(("text", paragraph))


# A reader of the report has the papers and the repository, not the team's tracker or notes:
# a source or a tolerance says its reason itself.
_PRIVATE_WORDS = re.compile(r"\b(issues?|notes|reviews?|reviewers?)\b", re.IGNORECASE)
# The team's shorthand about its own copy of a paper: a reader wants to know what the paper gives.
INTERNAL_PHRASES = re.compile(r"\bstripped\b|\bour copy\b|\bthe text we have\b", re.IGNORECASE)
_PRIVATE_UNITS = {"x-1": "fraction", "rel.": "fraction"}


def check_words(text: str, where: str) -> None:
    m = _PRIVATE_WORDS.search(text or "")
    if m:
        raise ValueError(f"{where}: {m.group(0)!r} cites something a reader of the report does not have; "
                         f"say the reason itself: {text!r}")
    m = INTERNAL_PHRASES.search(text or "")
    if m:
        raise ValueError(f"{where}: {m.group(0)!r} is an internal phrase; say what it means for a reader "
                         f"(e.g. 'the paper gives no number for this point'): {text!r}")


def _csv_cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return v


def selected_reproducers(systems: list[str]) -> list[Reproducer]:
    load_reproducers()
    from veil.core import leak_table  # noqa: F401  (registers the leakage table's section, "leak")

    known = REGISTRY.reproducers
    for s in systems:
        if s not in known:
            raise ConfigError(f"unknown system '{s}'; systems with a reproducer: {', '.join(sorted(known))}")
    chosen = [known[s] for s in systems] if systems else list(known.values())
    return sorted(chosen, key=lambda r: (r.order, r.system))


def reproduce(systems: list[str], out_dir: Path, store: ResultStore | None, quick: bool, jobs: int,
              log=print, scheduler: str | None = None) -> tuple[list[Section], dict[str, Any]]:
    reps = selected_reproducers(systems)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".veil-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"--out {out_dir}: cannot write there ({e.strerror})") from None
    # One connection for the whole reproduction: every run_many sends its uncached points there.
    client, own_client = connect(scheduler) if scheduler else (None, False)
    sections = []
    try:
        for rep in reps:
            sec = Section(rep.system, rep.title)
            ctx = ReproduceContext(sec, out_dir, store, quick, jobs, client)
            ctx.show_progress = True
            log(f"[{rep.system}] {rep.title} ...")
            t0 = time.perf_counter()
            cpu0 = _cpu_seconds()
            load0 = machine_load()
            try:
                rep.func(ctx)
            except ConfigError:
                raise
            except Exception as e:  # one system's failure is reported; the others still run
                sec.error = f"{type(e).__name__}: {e}"
                sec.blocks.append(("error", traceback.format_exc()))
            sec.seconds = time.perf_counter() - t0
            sec.cpu_seconds = _cpu_seconds() - cpu0
            sec.load = (load0, machine_load())
            status = "FAILED: " + sec.error if sec.error else "ok"
            log(f"[{rep.system}] {status} in {sec.seconds:.1f} s, {sec.cpu_seconds:.1f} CPU-s here "
                f"({sec.computed} computed, {sec.cached} cached)")
            sections.append(sec)
    finally:
        if own_client:
            client.close()
    metrics: dict[str, Any] = {}
    for sec in sections:
        metrics.update(sec.metrics)
    # Merge into an existing results.json so reproducing one system keeps the others' keys.
    merged = _read_json(out_dir / "results.json") if systems else {}
    merged.update(_jsonable(metrics))
    merged["veil/version"] = veil_version()
    merged["veil/mode"] = "quick" if quick else "full"
    (out_dir / "results.json").write_text(json.dumps(dict(sorted(merged.items())), indent=2) + "\n")
    refs = _read_json(out_dir / "references.json") if systems else {}
    refs = {k: v for k, v in refs.items() if k.split("/", 1)[0] not in {s.system for s in sections}}
    refs.update(references(sections))
    (out_dir / "references.json").write_text(json.dumps(dict(sorted(refs.items())), indent=2) + "\n")
    entries, failing = index_entries(sections)
    if systems:  # a partial run keeps every other system's summary row, failing rows and page
        entries, failing = _merge_index(out_dir, {s.system for s in sections}, entries, failing)
    (out_dir / "summary.json").write_text(json.dumps({"systems": entries, "failing": failing}, indent=2) + "\n")
    write_pages(out_dir, sections, quick, entries, failing)
    write_timing(out_dir, [section_timing(s.system, s.seconds, s.cpu_seconds, s.batches, s.batch_wall_s)
                           for s in sections], "quick" if quick else "full", merge=bool(systems))
    return sections, merged


def _cpu_seconds() -> float:
    """User + system CPU time of this process and of its children that have ended (a pool's
    workers count once the pool closes; a Dask cluster's workers never count here)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def index_entries(sections: list[Section]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The index page's data as plain dicts (kept in summary.json, so a later partial run can
    rebuild the index): a summary row per system and every failing row."""
    order = {r.system: r.order for r in REGISTRY.reproducers.values()}
    entries = [{**c, "title": sec.title, "seconds": round(sec.seconds, 1), "order": order.get(sec.system, 1000)}
               for c, sec in zip(summary(sections), sections)]
    host = host_name()
    failing = [{"system": sec.system, "anchor": row_anchor(r), "label": r.label, "value": _jsonable({"v": r.value})["v"],
                "unit": r.unit, "reference": r.ref, "tolerance": r.tolerance_text(), "verdict": r.outcome,
                "basis": r.basis or "", "source": r.source, "host": host if r.basis == "measured" else "",
                "reference_machine": r.ref_machine} for sec, r in failures(sections)]
    return entries, failing


def _merge_index(out_dir: Path, ran: set[str], entries: list[dict], failing: list[dict]):
    old = _read_json(out_dir / "summary.json")
    if "systems" in old:
        old_entries, old_failing = old.get("systems") or [], old.get("failing") or []
    else:  # a report written before summary.json: rebuilt from references.json
        old_entries, old_failing = _index_from_references(_read_json(out_dir / "references.json"))
    keep = {e["system"] for e in old_entries if isinstance(e, dict) and e.get("system") not in ran
            and (out_dir / page_name(str(e["system"]))).exists()}
    entries = sorted(entries + [e for e in old_entries if isinstance(e, dict) and e.get("system") in keep],
                     key=lambda e: (e.get("order", 1000), e["system"]))
    order = [e["system"] for e in entries]
    failing = sorted(failing + [f for f in old_failing if isinstance(f, dict) and f.get("system") in keep],
                     key=lambda f: order.index(f["system"]))  # stable: each system's rows keep their order
    return entries, failing


def _index_from_references(refs: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    by: dict[str, list[tuple[str, dict]]] = {}
    for key, d in refs.items():
        if isinstance(d, dict) and d.get("basis") is not None and "/" in key:  # a row, not a bare metric
            by.setdefault(key.split("/", 1)[0], []).append((key, d))
    entries, failing = [], []
    for system, rows in by.items():
        counts = {c: 0 for c in SUMMARY_COLUMNS}
        for key, d in rows:
            bad = d.get("verdict") in FAILING
            col = "calibrated" if d["basis"] == "calibrated" and d.get("verdict") != "no reference" and not bad \
                else d.get("verdict")
            counts[col if col in counts else "no reference"] += 1
            if bad:
                tol = d.get("shape") and f"shape: {d['shape']}" or " or ".join(
                    ([f"±{_fmt(d['tolerance_rel'] * 100)}%"] if d.get("tolerance_rel") is not None else [])
                    + ([f"±{_fmt(d['tolerance_abs'])}"] if d.get("tolerance_abs") is not None else [])) or "—"
                failing.append({"system": system, "anchor": "row-" + slug(key).replace("_", "-"),
                                "label": d.get("label", key), "value": d.get("value"), "unit": d.get("unit", ""),
                                "reference": d.get("reference"), "tolerance": tol, "verdict": d["verdict"],
                                "basis": d["basis"], "source": d.get("source", ""), "host": d.get("host", ""),
                                "reference_machine": d.get("reference_machine", "")})
        entries.append({"system": system, "rows": len(rows), **counts,
                        "failing": sum(f["system"] == system for f in failing), "error": None,
                        "calibrated_failing": {}, "title": system, "seconds": None,
                        "order": next((r.order for r in REGISTRY.reproducers.values() if r.system == system), 1000)})
    return entries, failing


def references(sections: list[Section]) -> dict[str, dict[str, Any]]:
    """Every row by its key, with its reference, verdict, basis and provenance; a headline metric
    no row describes appears with no reference."""
    out: dict[str, dict[str, Any]] = {}
    for sec in sections:
        for row in sec.rows:
            d = row.as_dict()
            d.pop("key")
            d.pop("ratio")
            if row.basis == "measured":
                d["host"] = host_name()
            out[row.key] = d
        for key, value in sec.metrics.items():
            if key not in out:
                out[key] = {"label": key, "value": _jsonable({"v": value})["v"], "unit": "", "reference": None,
                            "source": "", "tolerance_rel": None, "tolerance_abs": None, "tolerance_source": "",
                            "shape": None, "verdict": "no reference", "basis": None, "basis_reason": None,
                            "origin": None, "provenance": [], "spread": None, "note": ""}
    return out


def summary(sections: list[Section]) -> list[dict[str, Any]]:
    """Per system: rows = calibrated + within + outside + holds + fails + self-check + no value + no reference."""
    out = []
    for sec in sections:
        rows = sec.rows
        counts = {c: 0 for c in SUMMARY_COLUMNS}
        cal_failing: dict[str, int] = {}
        for r in rows:
            col = summary_column(r)
            counts[col] += 1
            if r.basis == "calibrated" and col != "calibrated" and r.compared:
                cal_failing[col] = cal_failing.get(col, 0) + 1
        bases = {b: sum(r.basis == b for r in rows if r.compared) for b in BASES}
        out.append({"system": sec.system, "rows": len(rows), **counts,
                    "failing": sum(r.failing for r in rows), "error": sec.error, "calibrated_failing": cal_failing,
                    **{f"basis_{b}": n for b, n in bases.items()}})
    return out


def failures(sections: list[Section]) -> list[tuple[Section, Row]]:
    """Every row outside its tolerance, whose shape fails or that has no value, in report order."""
    return [(sec, r) for sec in sections for r in sec.rows if r.failing]


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return d if isinstance(d, dict) else {}


def _jsonable(metrics: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    return out
