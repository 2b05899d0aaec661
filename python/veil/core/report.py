"""`veil reproduce`: each system's reproducer fills a section; one self-contained HTML page,
PNG+SVG figures with their data as CSV, a flat results.json of headline metrics and
references.json (each headline metric beside its reference, source, tolerance and verdict) come out."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import os
import re
import statistics
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veil.core.config import validate
from veil.core.errors import ConfigError, VeilError
from veil.core.registry import REGISTRY, Reproducer, load_systems
from veil.core.runner import run_experiment, veil_version
from veil.core.store import ResultStore
from veil.core.sweep import configs_for, connect, run_points

BASES = ("predicted", "calibrated", "computed", "projected", "measured")
VERDICTS = ("within", "outside", "shape only", "no reference", "no tolerance", "no value")


@dataclass(frozen=True)
class Row:
    """One number set beside its reference: where the reference comes from, how far off the
    number may be and why, how the number was obtained (basis) and the verdict.

    basis: predicted (no constant was chosen while looking at this reference), calibrated (one
    was), computed (arithmetic on inputs, not a simulation or a measurement), projected (built on
    the paper's own results, so agreeing with the paper shows nothing), measured (timed on this
    machine). The verdict is derived from ref and tol / tol_abs unless given; when both
    tolerances are given the wider band applies (an absolute floor under a relative band)."""

    label: str
    value: float | None
    unit: str = ""
    ref: float | None = None
    source: str = ""
    tol: float | None = None
    tol_abs: float | None = None
    tol_source: str = ""
    basis: str = "predicted"
    spread: tuple[float, float] | None = None
    verdict: str | None = None
    note: str = ""
    metric: str | None = None

    def __post_init__(self) -> None:
        # Programming errors in a reproducer: fail loudly, the report must never mislabel a row.
        if self.basis not in BASES:
            raise ValueError(f"Row {self.label!r}: basis {self.basis!r} is not one of {', '.join(BASES)}")
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise ValueError(f"Row {self.label!r}: verdict {self.verdict!r} is not one of {', '.join(VERDICTS)}")
        if self.verdict == "shape only" and not self.note:
            raise ValueError(f"Row {self.label!r}: a 'shape only' verdict needs a note saying which shape")
        if self.ref is not None and not self.source:
            raise ValueError(f"Row {self.label!r}: a reference needs its source")
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
    def outcome(self) -> str:
        """The verdict given, else derived from the reference and the tolerance."""
        if self.verdict is not None:
            return self.verdict
        if self.ref is None:
            return "no reference"
        if self.value is None:
            return "no value"
        band = self.band
        if band is None:
            return "no tolerance"
        # a relative epsilon so a value exactly on the band's edge is not lost to rounding
        return "within" if abs(self.value - self.ref) <= band * (1 + 1e-12) + 1e-300 else "outside"

    def tolerance_text(self) -> str:
        parts = []
        if self.tol is not None:
            parts.append(f"±{_fmt(self.tol * 100)}%")
        if self.tol_abs is not None:
            parts.append(f"±{_fmt(self.tol_abs)}{(' ' + self.unit) if self.unit else ''}")
        return " or ".join(parts) if parts else "—"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "value": self.value, "unit": self.unit, "reference": self.ref,
                "source": self.source, "tolerance_rel": self.tol, "tolerance_abs": self.tol_abs,
                "tolerance_source": self.tol_source, "verdict": self.outcome, "basis": self.basis,
                "spread": list(self.spread) if self.spread else None, "ratio": self.ratio, "note": self.note}

    @classmethod
    def legacy(cls, row: tuple) -> Row:
        """The old (label, paper, veil, unit) tuple, until every reproducer passes Rows."""
        label, paper, ours, unit = row
        return cls(label, ours, unit=unit, ref=paper, source="paper" if paper is not None else "",
                   note="legacy row: no tolerance or source given")


def as_rows(rows) -> list[Row]:
    return [r if isinstance(r, Row) else Row.legacy(tuple(r)) for r in (rows or [])]


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


def machine_load() -> list[float] | None:
    """The 1/5/15-minute load averages, recorded beside measured timings (None where unknown)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


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
    error: str | None = None
    seconds: float = 0.0
    computed: int = 0
    cached: int = 0
    load: tuple[list[float] | None, list[float] | None] = (None, None)

    @property
    def rows(self) -> list[Row]:
        out: list[Row] = []
        for kind, payload in self.blocks:
            if kind == "figure":
                out += payload.rows
            elif kind == "table":
                out += payload[1]
        return out


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
        (out_dir / "figures").mkdir(parents=True, exist_ok=True)

    @property
    def system(self) -> str:
        return self.section.system

    def run(self, experiment: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Runs (or reads back) one experiment point and returns its result dict."""
        rec, cached = run_experiment(experiment, validate(experiment, config or {}), self.store)
        self._count(cached)
        return rec.result

    def run_many(self, experiment: str, base: dict[str, Any], rows: list[dict[str, Any]],
                 jobs: int | None = None) -> list[dict[str, Any]]:
        """Runs many points on the local pool, or on the Dask cluster given by --scheduler
        (cached ones read back); results in row order."""
        cfgs = configs_for(experiment, base, rows)
        out = run_points(experiment, cfgs, self.store, jobs=jobs or self.jobs, scheduler=self.scheduler,
                         label=f"{self.system}: {experiment}")
        if out.failed:
            i, err = out.failed[0]
            raise VeilError(f"{experiment} point {rows[i]}: {err}")
        self.section.computed += out.computed
        self.section.cached += out.cached
        return [r.result for r in out.records]

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

    def _take_rows(self, rows) -> list[Row]:
        out = as_rows(rows)
        for r in out:
            if r.metric is not None:
                self.metric(r.metric, r.value)
                self.section.metric_rows[r.metric] = r
        return out

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
        self.section.blocks.append(("figure", FigureEntry(name, caption, png, svg, self._take_rows(rows), path)))

    def table(self, title: str, rows, data: dict[str, dict[str, list]] | None = None,
              name: str | None = None) -> None:
        """A comparison table without a figure; `data` (as for figure) goes to a CSV named `name`."""
        path = None
        if data:
            path = self._write_csv(f"{self.system}_{name or _slug(title)}", data)
        self.section.blocks.append(("table", (title, self._take_rows(rows), path)))

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
        self.section.blocks.append(("text", paragraph))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:48] or "table"


def _csv_cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return v


def selected_reproducers(systems: list[str]) -> list[Reproducer]:
    load_systems()
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
            log(f"[{rep.system}] {rep.title} ...")
            t0 = time.perf_counter()
            load0 = machine_load()
            try:
                rep.func(ctx)
            except ConfigError:
                raise
            except Exception as e:  # one system's failure is reported; the others still run
                sec.error = f"{type(e).__name__}: {e}"
                sec.blocks.append(("error", traceback.format_exc()))
            sec.seconds = time.perf_counter() - t0
            sec.load = (load0, machine_load())
            status = "FAILED: " + sec.error if sec.error else "ok"
            log(f"[{rep.system}] {status} in {sec.seconds:.1f} s ({sec.computed} computed, {sec.cached} cached)")
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
    (out_dir / "index.html").write_text(render_html(sections, quick))
    return sections, merged


def references(sections: list[Section]) -> dict[str, dict[str, Any]]:
    """Every headline metric beside its reference; a metric no Row describes has none."""
    out: dict[str, dict[str, Any]] = {}
    for sec in sections:
        for key, value in sec.metrics.items():
            row = sec.metric_rows.get(key)
            if row is None:
                out[key] = {"value": _jsonable({"v": value})["v"], "reference": None, "source": "",
                            "tolerance_rel": None, "tolerance_abs": None, "tolerance_source": "",
                            "verdict": "no reference", "basis": None, "unit": "", "spread": None, "note": ""}
            else:
                d = row.as_dict()
                d.pop("label")
                d.pop("ratio")
                out[key] = {"value": d.pop("value"), **d, "label": row.label}
    return out


def summary(sections: list[Section]) -> list[dict[str, Any]]:
    """Per system: how many comparison rows fall within tolerance, outside it, and so on."""
    out = []
    for sec in sections:
        rows = sec.rows
        counts = {v: sum(r.outcome == v for r in rows) for v in VERDICTS}
        bases = {b: sum(r.basis == b for r in rows if r.ref is not None) for b in BASES}
        out.append({"system": sec.system, "rows": len(rows), **counts,
                    **{f"basis_{b}": n for b, n in bases.items()}})
    return out


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


_VERDICT_CLASS = {"within": "ok", "outside": "bad", "shape only": "shape"}


def _rows_html(rows: list[Row]) -> str:
    if not rows:
        return ""
    out = ["<table class='rows'><tr><th>quantity</th><th>Veil</th><th>reference</th><th>source</th>"
           "<th>Veil / ref</th><th>tolerance</th><th>verdict</th><th>basis</th><th>unit</th></tr>"]
    for r in rows:
        value = _fmt(r.value)
        if r.spread is not None:
            value += f"<br><small>[{_fmt(r.spread[0])} – {_fmt(r.spread[1])}]</small>"
        label = html.escape(r.label) + (f"<br><small>{html.escape(r.note)}</small>" if r.note else "")
        tol = html.escape(r.tolerance_text())
        if r.tol_source:
            tol += f"<br><small>{html.escape(r.tol_source)}</small>"
        verdict = r.outcome
        out.append(f"<tr><td>{label}</td><td>{value}</td><td>{_fmt(r.ref)}</td><td>{html.escape(r.source)}</td>"
                   f"<td>{_fmt(r.ratio)}</td><td>{tol}</td>"
                   f"<td class='{_VERDICT_CLASS.get(verdict, 'none')}'>{html.escape(verdict)}</td>"
                   f"<td>{html.escape(r.basis)}</td><td>{html.escape(r.unit)}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _summary_html(sections: list[Section]) -> str:
    cols = ["within", "outside", "shape only", "no reference", "no tolerance"]
    out = ["<table class='summary'><caption>Comparison rows per system: verdicts, and how the numbers with a "
           "reference were obtained</caption><tr><th>system</th><th>rows</th>"
           + "".join(f"<th>{c}</th>" for c in cols)
           + "".join(f"<th>{b}</th>" for b in BASES) + "</tr>"]
    for s in summary(sections):
        cells = "".join(f"<td class='{_VERDICT_CLASS.get(c, 'none') if s[c] else ''}'>{s[c]}</td>" for c in cols)
        cells += "".join(f"<td>{s['basis_' + b]}</td>" for b in BASES)
        out.append(f"<tr><td><a href='#{s['system']}'>{html.escape(s['system'])}</a></td><td>{s['rows']}</td>"
                   f"{cells}</tr>")
    out.append("</table><p class='meta'>within / outside: Veil's number against the reference's tolerance band; "
               "shape only: a qualitative claim checked by eye; basis: predicted (no constant chosen while "
               "looking at the reference), calibrated (one was), computed (arithmetic, not a simulation or "
               "measurement), projected (built on the paper's own results), measured (timed on this machine)."
               "</p>")
    return "".join(out)


def _load_text(load: list[float] | None) -> str:
    return "/".join(f"{x:.2f}" for x in load) if load else "unknown"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}
h1{margin-bottom:0}.meta{color:#666;margin-top:.2em}
section{border-top:2px solid #ddd;margin-top:2em;padding-top:.5em}
.fig{margin:1.5em 0}.fig img{width:100%;height:auto;border:1px solid #eee}
figcaption{margin:.3em 0 .6em}.links{font-size:.85em}
table{border-collapse:collapse;font-size:.9em;margin:.4em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}caption{font-weight:600;text-align:left}
td small{color:#666}.ok{background:#e6f4e6}.bad{background:#fbe3e3}.shape{background:#e8eefb}
.err{background:#fee;border:1px solid #c00;padding:.5em;white-space:pre-wrap;font-size:.8em}
.metrics td{font-family:ui-monospace,monospace}
"""


def render_html(sections: list[Section], quick: bool) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Veil report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Veil: reproduced results</h1>",
        f"<p class='meta'>Veil {html.escape(veil_version())} · {'quick' if quick else 'full'} mode · "
        f"generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · headline metrics with their "
        "references: <a href='results.json'>results.json</a>, <a href='references.json'>references.json</a></p>",
        _summary_html(sections),
        "<ul>" + "".join(f"<li><a href='#{s.system}'>{html.escape(s.title)}</a>"
                         f"{' — <b>failed</b>' if s.error else ''}</li>" for s in sections) + "</ul>",
    ]
    for s in sections:
        parts.append(f"<section id='{s.system}'><h2>{html.escape(s.title)}</h2>")
        parts.append(f"<p class='meta'>{s.seconds:.1f} s · {s.computed} points computed, {s.cached} read from "
                     f"the results store · load average (1/5/15 min) {_load_text(s.load[0])} at the start, "
                     f"{_load_text(s.load[1])} at the end</p>")
        for kind, payload in s.blocks:
            if kind == "text":
                parts.append(f"<p>{html.escape(payload)}</p>")
            elif kind == "figure":
                data = base64.b64encode(payload.png.read_bytes()).decode()
                svg = f"figures/{payload.svg.name}"
                links = f"<a href='{svg}'>SVG</a>"
                if payload.csv is not None:
                    links += f" · <a href='figures/{payload.csv.name}'>data (CSV)</a>"
                parts.append(f"<div class='fig'><figure><a href='{svg}'><img alt='{html.escape(payload.name)}' "
                             f"src='data:image/png;base64,{data}'></a><figcaption>{html.escape(payload.caption)} "
                             f"<span class='links'>[{links}]</span></figcaption></figure>"
                             f"{_rows_html(payload.rows)}</div>")
            elif kind == "table":
                title, rows, path = payload
                link = f" <span class='links'>[<a href='figures/{path.name}'>data (CSV)</a>]</span>" if path else ""
                parts.append(f"<h3>{html.escape(title)}{link}</h3>{_rows_html(rows)}")
            elif kind == "grid":
                title, header, rows = payload
                head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
                body = "".join("<tr>" + "".join(
                    f"<td>{_fmt(c, 4) if isinstance(c, float) else html.escape(str(c))}</td>"
                    for c in r) + "</tr>" for r in rows)
                parts.append(f"<h3>{html.escape(title)}</h3><table><tr>{head}</tr>{body}</table>")
            elif kind == "error":
                parts.append(f"<div class='err'>{html.escape(payload)}</div>")
        if s.metrics:
            parts.append("<h3>Headline metrics (results.json)</h3><table class='metrics'>"
                         "<tr><th>key</th><th>value</th><th>reference</th><th>verdict</th></tr>")
            for k, v in sorted(s.metrics.items()):
                row = s.metric_rows.get(k)
                ref = f"{_fmt(row.ref, 4)} ({html.escape(row.source)})" if row and row.ref is not None else "—"
                parts.append(f"<tr><td>{html.escape(k)}</td><td>{html.escape(_fmt(v, 4))}</td><td>{ref}</td>"
                             f"<td>{html.escape(row.outcome) if row else 'no reference'}</td></tr>")
            parts.append("</table>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
