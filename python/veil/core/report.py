"""`veil reproduce`: each system's reproducer fills a section; one self-contained HTML page,
PNG+SVG figures and a flat results.json of headline metrics come out."""

from __future__ import annotations

import base64
import html
import json
import math
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
from veil.core.sweep import configs_for, run_points


@dataclass
class FigureEntry:
    name: str
    caption: str
    png: Path
    svg: Path
    rows: list[tuple[str, float | None, float | None, str]]


@dataclass
class Section:
    system: str
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)  # ("text"|"figure"|"table", payload)
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    computed: int = 0
    cached: int = 0


class ReproduceContext:
    """What a reproducer gets: cached experiment runs, figure and metric sinks, the mode."""

    def __init__(self, section: Section, out_dir: Path, store: ResultStore | None, quick: bool, jobs: int):
        self.section = section
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
        """Runs many points on the local pool (cached ones read back); results in row order."""
        cfgs = configs_for(experiment, base, rows)
        out = run_points(experiment, cfgs, self.store, jobs=jobs or self.jobs, label=f"{self.system}: {experiment}")
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

    def figure(self, fig, name: str, caption: str = "",
               rows: list[tuple[str, float | None, float | None, str]] | None = None) -> None:
        """Saves `fig` as PNG and SVG and shows it beside rows of (label, paper, veil, unit)."""
        import matplotlib.pyplot as plt

        stem = f"{self.system}_{name}"
        png = self.out_dir / "figures" / f"{stem}.png"
        svg = self.out_dir / "figures" / f"{stem}.svg"
        fig.text(0.995, 0.005, f"veil {veil_version()}", ha="right", va="bottom", fontsize=6, color="0.5")
        fig.savefig(png, dpi=110)
        fig.savefig(svg)
        plt.close(fig)
        self.section.blocks.append(("figure", FigureEntry(name, caption, png, svg, list(rows or []))))

    def table(self, title: str, rows: list[tuple[str, float | None, float | None, str]]) -> None:
        """A paper-versus-Veil table without a figure."""
        self.section.blocks.append(("table", (title, list(rows))))

    def grid(self, title: str, header: list[str], rows: list[list[Any]]) -> None:
        """A plain table with its own columns (for numbers that have no paper counterpart)."""
        self.section.blocks.append(("grid", (title, list(header), [list(r) for r in rows])))

    def metric(self, key: str, value: Any) -> None:
        if not key.startswith(f"{self.system}/"):
            raise ValueError(f"metric '{key}' must start with '{self.system}/'")
        self.section.metrics[key] = value

    def text(self, paragraph: str) -> None:
        self.section.blocks.append(("text", paragraph))


def selected_reproducers(systems: list[str]) -> list[Reproducer]:
    load_systems()
    known = REGISTRY.reproducers
    for s in systems:
        if s not in known:
            raise ConfigError(f"unknown system '{s}'; systems with a reproducer: {', '.join(sorted(known))}")
    chosen = [known[s] for s in systems] if systems else list(known.values())
    return sorted(chosen, key=lambda r: (r.order, r.system))


def reproduce(systems: list[str], out_dir: Path, store: ResultStore | None, quick: bool, jobs: int,
              log=print) -> tuple[list[Section], dict[str, Any]]:
    reps = selected_reproducers(systems)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".veil-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"--out {out_dir}: cannot write there ({e.strerror})") from None
    sections = []
    for rep in reps:
        sec = Section(rep.system, rep.title)
        ctx = ReproduceContext(sec, out_dir, store, quick, jobs)
        log(f"[{rep.system}] {rep.title} ...")
        t0 = time.perf_counter()
        try:
            rep.func(ctx)
        except ConfigError:
            raise
        except Exception as e:  # one system's failure is reported; the others still run
            sec.error = f"{type(e).__name__}: {e}"
            sec.blocks.append(("error", traceback.format_exc()))
        sec.seconds = time.perf_counter() - t0
        status = "FAILED: " + sec.error if sec.error else "ok"
        log(f"[{rep.system}] {status} in {sec.seconds:.1f} s ({sec.computed} computed, {sec.cached} cached)")
        sections.append(sec)
    metrics: dict[str, Any] = {}
    for sec in sections:
        metrics.update(sec.metrics)
    # Merge into an existing results.json so reproducing one system keeps the others' keys.
    path = out_dir / "results.json"
    merged: dict[str, Any] = {}
    if path.exists() and systems:
        try:
            merged = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            merged = {}
    merged.update(_jsonable(metrics))
    merged["veil/version"] = veil_version()
    merged["veil/mode"] = "quick" if quick else "full"
    path.write_text(json.dumps(dict(sorted(merged.items())), indent=2) + "\n")
    (out_dir / "index.html").write_text(render_html(sections, quick))
    return sections, merged


def _jsonable(metrics: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[k] = v
    return out


def _fmt(v: float | None) -> str:
    if v is None:
        return "—"
    if isinstance(v, float) and not math.isfinite(v):
        return "—"
    a = abs(v)
    if a != 0 and (a >= 1e5 or a < 1e-3):
        return f"{v:.3g}"
    return f"{v:,.3f}".rstrip("0").rstrip(".") if isinstance(v, float) else f"{v:,}"


def _rows_html(rows: list[tuple[str, float | None, float | None, str]]) -> str:
    if not rows:
        return ""
    out = ["<table><tr><th>quantity</th><th>paper</th><th>Veil</th><th>Veil / paper</th><th>unit</th></tr>"]
    for label, paper, ours, unit in rows:
        ratio = (ours / paper) if (paper not in (None, 0) and ours is not None) else None
        out.append(f"<tr><td>{html.escape(label)}</td><td>{_fmt(paper)}</td><td>{_fmt(ours)}</td>"
                   f"<td>{_fmt(ratio)}</td><td>{html.escape(unit)}</td></tr>")
    out.append("</table>")
    return "".join(out)


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{margin-bottom:0}.meta{color:#666;margin-top:.2em}
section{border-top:2px solid #ddd;margin-top:2em;padding-top:.5em}
.fig{display:flex;gap:1.5em;align-items:flex-start;flex-wrap:wrap;margin:1em 0}
.fig img{max-width:620px;width:100%;border:1px solid #eee}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}caption{font-weight:600;text-align:left}
.err{background:#fee;border:1px solid #c00;padding:.5em;white-space:pre-wrap;font-size:.8em}
.metrics td{font-family:ui-monospace,monospace}
"""


def render_html(sections: list[Section], quick: bool) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Veil report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Veil: reproduced results</h1>",
        f"<p class='meta'>Veil {html.escape(veil_version())} · {'quick' if quick else 'full'} mode · "
        f"generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}</p>",
        "<ul>" + "".join(f"<li><a href='#{s.system}'>{html.escape(s.title)}</a>"
                         f"{' — <b>failed</b>' if s.error else ''}</li>" for s in sections) + "</ul>",
    ]
    for s in sections:
        parts.append(f"<section id='{s.system}'><h2>{html.escape(s.title)}</h2>")
        parts.append(f"<p class='meta'>{s.seconds:.1f} s · {s.computed} points computed, {s.cached} read from "
                     f"the results store</p>")
        for kind, payload in s.blocks:
            if kind == "text":
                parts.append(f"<p>{html.escape(payload)}</p>")
            elif kind == "figure":
                data = base64.b64encode(payload.png.read_bytes()).decode()
                parts.append(f"<div class='fig'><figure><img alt='{html.escape(payload.name)}' "
                             f"src='data:image/png;base64,{data}'><figcaption>{html.escape(payload.caption)}"
                             f"</figcaption></figure>{_rows_html(payload.rows)}</div>")
            elif kind == "table":
                title, rows = payload
                parts.append(f"<h3>{html.escape(title)}</h3>{_rows_html(rows)}")
            elif kind == "grid":
                title, header, rows = payload
                head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
                body = "".join("<tr>" + "".join(
                    f"<td>{f'{c:.5g}' if isinstance(c, float) else html.escape(str(c))}</td>"
                    for c in r) + "</tr>" for r in rows)
                parts.append(f"<h3>{html.escape(title)}</h3><table><tr>{head}</tr>{body}</table>")
            elif kind == "error":
                parts.append(f"<div class='err'>{html.escape(payload)}</div>")
        if s.metrics:
            parts.append("<h3>Headline metrics (results.json)</h3><table class='metrics'>")
            parts.append("".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
                                 for k, v in sorted(s.metrics.items())))
            parts.append("</table>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
