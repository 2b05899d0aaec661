"""The report's pages: index.html (per-system verdict counts, then every failing row across
systems, each linked to its row) and one page per system with its figures and rows. Figures are
files beside the pages, so the folder works offline and no page carries megabytes of images."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import TYPE_CHECKING

from veil.core.rows import Row, _fmt, host_name, slug
from veil.core.runner import veil_version
from veil.core.section import SUMMARY_COLUMNS

if TYPE_CHECKING:
    from veil.core.section import Section

_VERDICT_CLASS = {"within": "ok", "holds": "ok", "outside": "bad", "fails": "bad", "no value": "bad",
                  "calibrated": "cal"}

_CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#222}
nav{position:fixed;top:0;left:0;right:0;background:#f6f6f6;border-bottom:1px solid #ccc;padding:.4em 1em;
z-index:2;font-size:.9em}nav a{margin-right:1em}nav .here{font-weight:700}
main{max-width:1400px;margin:3em auto 2em;padding:0 1em}
h1{margin-bottom:0}.meta{color:#666;margin-top:.2em}
.fig{margin:1.5em 0}.fig img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{margin:.3em 0 .6em}.links{font-size:.85em}
table{border-collapse:collapse;font-size:.9em;margin:.4em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}caption{font-weight:600;text-align:left}
td small{color:#666}.ok{background:#e6f4e6}.bad{background:#fbe3e3}.cal{background:#fdf3d8}
.err{background:#fee;border:1px solid #c00;padding:.5em;white-space:pre-wrap;font-size:.8em}
.metrics td{font-family:ui-monospace,monospace}details{margin:.3em 0}summary{cursor:pointer;color:#345}
tr:target{outline:3px solid #f90}.failures td{text-align:left}.failures td:nth-child(3),.failures td:nth-child(4){text-align:right}
"""


def page_name(system: str) -> str:
    return f"{system}.html"


def row_anchor(row: Row) -> str:
    return "row-" + slug(row.key or row.label).replace("_", "-")


def write_pages(out_dir: Path, sections: list[Section], quick: bool, entries: list[dict], failing: list[dict]) -> None:
    """index.html from `entries` and `failing` (this run's systems and any kept from an earlier
    run, see veil.core.report.index_entries), and a page for each system of this run."""
    nav = [(e["system"], bool(e.get("error"))) for e in entries]
    (out_dir / "index.html").write_text(_index(entries, failing, sections, quick, nav))
    for s in sections:
        (out_dir / page_name(s.system)).write_text(_system_page(s, nav, quick))


def _head(title: str, nav: list[tuple[str, bool]], here: str) -> list[str]:
    links = [f"<a href='index.html'{' class=here' if here == 'index' else ''}>summary</a>"]
    links += [f"<a href='{page_name(system)}'{' class=here' if here == system else ''}>{html.escape(system)}"
              f"{' (failed)' if failed else ''}</a>" for system, failed in nav]
    return ["<!doctype html><html><head><meta charset='utf-8'>", f"<title>{html.escape(title)}</title>",
            f"<style>{_CSS}</style></head><body><nav>{''.join(links)}</nav><main>"]


def _meta(quick: bool) -> str:
    return (f"<p class='meta'>Veil {html.escape(veil_version())} · {'quick' if quick else 'full'} mode · generated "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} · every row with its reference, basis and "
            "provenance: <a href='references.json'>references.json</a> · headline metrics: "
            "<a href='results.json'>results.json</a></p>")


def _index(entries: list[dict], failing: list[dict], sections: list[Section], quick: bool, nav) -> str:
    """The first screen: the summary, then every failing row; the long tables live on their pages."""
    parts = _head("Veil report", nav, "index")
    parts += ["<h1>Veil: reproduced results</h1>", _meta(quick)]
    head = "".join(f"<th>{c}</th>" for c in SUMMARY_COLUMNS)
    parts.append("<table class='summary'><caption>Rows per system: each counts in one column, so the columns add up "
                 "to the rows; failing = outside + fails + no value, the rows listed below</caption><tr><th>system"
                 f"</th><th>rows</th>{head}<th>failing</th><th>seconds</th></tr>")
    for c in entries:
        cal = c.get("calibrated_failing") or {}
        cells = "".join(f"<td class='{_VERDICT_CLASS.get(k, '') if c[k] else ''}'>{c[k]}"
                        f"{f' ({cal[k]} calibrated)' if cal.get(k) else ''}</td>" for k in SUMMARY_COLUMNS)
        err = " <b>(reproducer failed)</b>" if c.get("error") else ""
        secs = "—" if c.get("seconds") is None else f"{c['seconds']:.0f}"
        parts.append(f"<tr><td><a href='{page_name(c['system'])}'>{html.escape(c['system'])}</a>{err}</td>"
                     f"<td>{c['rows']}</td>{cells}<td class='{'bad' if c['failing'] else ''}'>{c['failing']}</td>"
                     f"<td>{secs}</td></tr>")
    parts.append("</table>")
    parts.append(f"<h2>Rows that fail ({len(failing)})</h2>")
    if failing:
        parts.append("<table class='failures'><tr><th>system</th><th>quantity</th><th>Veil</th><th>reference</th>"
                     "<th>tolerance / shape</th><th>verdict</th><th>basis</th><th>source</th></tr>")
        for f in failing:
            link = f"{page_name(f['system'])}#{f['anchor']}"
            parts.append(f"<tr><td>{html.escape(f['system'])}</td><td><a href='{link}'>{html.escape(f['label'])}</a></td>"
                         f"<td>{_fmt(f['value'])} {html.escape(f['unit'])}</td><td>{_fmt(f['reference'])}</td>"
                         f"<td>{html.escape(f['tolerance'])}</td><td class='bad'>{html.escape(f['verdict'])}"
                         f"{_machines_text(f.get('host'), f.get('reference_machine'))}</td>"
                         f"<td>{html.escape(f['basis'])}</td><td>{html.escape(f['source'])}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>None: every compared row is within its tolerance and every shape holds.</p>")
    parts.append("<p class='meta'>within / outside: the value against the reference's tolerance band. "
                 "holds / fails: a shape, a predicate on the value stated beside it. self-check: a shape the model "
                 "cannot fail (fixed by construction, or the model checking itself), not counted as holding. calibrated: a row that agrees with "
                 "its reference but whose value depends on a constant chosen while looking at it (its agreement shows "
                 "nothing); a calibrated row that misses counts as failing, marked calibrated, and is listed above. no reference: measured here, nothing to compare with. "
                 "Basis of the others: predicted (no constant chosen against this figure), predicted (held out) "
                 "(a constant was chosen against other rows of the same figure), computed (arithmetic), measured "
                 "(timed or counted here), projected (built on the paper's own numbers).</p>")
    for s in sections:
        for kind, payload in s.blocks:
            if kind == "grid" and payload[0] in PAGE_GRIDS:
                parts.append(f"<p>{html.escape(payload[0])} ({len(payload[2])} rows): on <a href='{page_name(s.system)}'>"
                             f"its own page</a>.</p>")
    errs = [s for s in sections if s.error]
    for s in errs:
        parts.append(f"<p class='err'>{html.escape(s.system)}: the reproducer failed: {html.escape(s.error)}</p>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _system_page(s: Section, nav, quick: bool) -> str:
    parts = _head(f"Veil report: {s.system}", nav, s.system)
    parts += [f"<h1>{html.escape(s.title)}</h1>", _meta(quick),
              f"<p class='meta'>{s.seconds:.1f} s · {s.computed} points computed, {s.cached} read from the results "
              f"store · load average (1/5/15 min) {_load_text(s.load[0])} at the start, {_load_text(s.load[1])} at "
              "the end</p>"]
    for kind, payload in s.blocks:
        if kind == "text":
            parts.append(f"<p>{html.escape(payload)}</p>")
        elif kind == "figure":
            png, svg = f"figures/{payload.png.name}", f"figures/{payload.svg.name}"
            links = f"<a href='{svg}'>SVG</a>"
            if payload.csv is not None:
                links += f" · <a href='figures/{payload.csv.name}'>data (CSV)</a>"
            parts.append(f"<div class='fig'><figure><a href='{svg}'><img loading='lazy' "
                         f"alt='{html.escape(payload.name)}' src='{png}'></a><figcaption>{html.escape(payload.caption)} "
                         f"<span class='links'>[{links}]</span></figcaption></figure>{_rows_html(payload.rows)}</div>")
        elif kind == "table":
            title, rows, path = payload
            link = f" <span class='links'>[<a href='figures/{path.name}'>data (CSV)</a>]</span>" if path else ""
            parts.append(f"<h3>{html.escape(title)}{link}</h3>{_rows_html(rows)}")
        elif kind == "grid":
            parts.append(_grid_html(*payload))
        elif kind == "error":
            parts.append(f"<div class='err'>{html.escape(payload)}</div>")
    if s.metrics:
        parts.append("<details><summary>Headline metrics of this system (results.json)</summary>"
                     "<table class='metrics'><tr><th>key</th><th>value</th><th>reference</th><th>verdict</th></tr>")
        for k, v in sorted(s.metrics.items()):
            row = s.metric_rows.get(k)
            ref = f"{_fmt(row.ref, 4)} ({html.escape(row.source)})" if row and row.ref is not None else "—"
            parts.append(f"<tr><td>{html.escape(k)}</td><td>{html.escape(_fmt(v, 4))}</td><td>{ref}</td>"
                         f"<td>{html.escape(row.outcome) if row else 'no reference'}</td></tr>")
        parts.append("</table></details>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _grid_html(title: str, header: list, rows: list[list]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c, 4) if isinstance(c, float) else html.escape(str(c))}</td>"
                                    for c in r) + "</tr>" for r in rows)
    return f"<h3>{html.escape(title)}</h3><table><tr>{head}</tr>{body}</table>"


#: Long grids the summary page links to instead of showing: the leakage table.
PAGE_GRIDS = ("Leakage table",)


def _machines_text(host: str | None, ref_machine: str | None) -> str:
    """A measured row judged against another machine's figure says so beside its verdict."""
    if not ref_machine:
        return ""
    return (f"<br><small>the machines differ: measured on {html.escape(host or 'this machine')}, the reference on "
            f"{html.escape(ref_machine)}</small>")


def _rows_html(rows: list[Row]) -> str:
    compared = [r for r in rows if r.compared]
    measured = [r for r in rows if not r.compared]
    out = []
    if compared:
        out.append("<table class='rows'><tr><th>quantity</th><th>Veil</th><th>reference</th><th>source</th>"
                   "<th>Veil / ref</th><th>tolerance / shape</th><th>verdict</th><th>basis</th><th>unit</th></tr>")
        for r in compared:
            verdict = r.outcome
            out.append(f"<tr id='{row_anchor(r)}'><td>{_label(r)}</td><td>{_value(r)}</td><td>{_fmt(r.ref)}</td>"
                       f"<td>{html.escape(r.source)}</td><td>{_fmt(r.ratio)}</td><td>{_tolerance(r)}</td>"
                       f"<td class='{_VERDICT_CLASS.get(verdict, '')}'>{html.escape(r.verdict_text())}"
                       f"{_factors(r)}{_machines_text(host_name(), r.ref_machine)}</td>"
                       f"<td class='{'cal' if r.basis == 'calibrated' else ''}'>{_basis(r)}</td>"
                       f"<td>{html.escape(r.unit)}</td></tr>")
        out.append("</table>")
    if measured:
        out.append("<table class='rows measured'><caption>Measured here (no reference to compare with)</caption>"
                   "<tr><th>quantity</th><th>Veil</th><th>basis</th><th>unit</th></tr>")
        for r in measured:
            out.append(f"<tr id='{row_anchor(r)}'><td>{_label(r)}</td><td>{_value(r)}</td><td>{_basis(r)}</td>"
                       f"<td>{html.escape(r.unit)}</td></tr>")
        out.append("</table>")
    return "".join(out)


def _factors(r: Row) -> str:
    """A ratio's factors, each against its own reference."""
    if not r.factors:
        return ""
    items = "".join(f"<li>{html.escape(f.label)}: {_fmt(f.value)} {html.escape(f.unit)} against {_fmt(f.ref)} "
                    f"({html.escape(f.source)}): {html.escape(f.outcome)}</li>" for f in r.factors)
    return f"<br><small>factors:</small><ul class='factors'>{items}</ul>"


def _label(r: Row) -> str:
    return html.escape(r.label) + (f"<br><small>{html.escape(r.note)}</small>" if r.note else "")


def _value(r: Row) -> str:
    v = _fmt(r.value)
    if r.spread is not None:
        v += f"<br><small>[{_fmt(r.spread[0])} – {_fmt(r.spread[1])}]</small>"
    return v


def _tolerance(r: Row) -> str:
    t = html.escape(r.tolerance_text())
    return t + (f"<br><small>{html.escape(r.tol_source)}</small>" if r.tol_source else "")


def _basis(r: Row) -> str:
    b = html.escape(r.basis or "")
    if r.basis == "measured":
        b += f" on {html.escape(host_name())}"
    if r.basis_reason:
        b += f"<br><small>set by hand: {html.escape(r.basis_reason)}</small>"
    if r.constants:
        items = "".join(f"<li>{html.escape(c.system + '.' + c.name)}: chosen against "
                        f"{html.escape(', '.join(c.targets))} ({html.escape(c.how)}, {html.escape(c.when)})</li>"
                        for c in r.constants)
        b += f"<details><summary><small>depends on {len(r.constants)}</small></summary><ul>{items}</ul></details>"
    return b


def _load_text(load: list[float] | None) -> str:
    return "/".join(f"{x:.2f}" for x in load) if load else "unknown"
