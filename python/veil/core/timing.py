"""Where a reproduction's time goes, and how long it would take on a cluster.

Every `ctx.run` / `ctx.run_many` of a reproducer is one batch: a Dask cluster (`--scheduler`)
runs a batch's uncached points in parallel, but the reproducer waits for the whole batch before
it asks for the next (it plots or compares the results first), and single `ctx.run` points run
in the reproducing process. So the wall time on W workers is the section's own work outside its
points plus, per batch, the time W workers need for its points (longest-first list scheduling,
within 4/3 of the best split). A point computed in this run costs its CPU time (compute_timed:
the worker's CPU seconds while it ran, which a loaded machine does not inflate); a point read
back from the store costs its record's `elapsed_s`, the wall time it took when it was computed
(so a projection can also be made from a re-run that reads every point back, less exactly where
that run was loaded). `timing.json` in the report folder keeps the batches; `veil bench reproduce` prints
the projection from it.

Limits of CPU time as a point's cost: a point that waits rather than computes (PRO-ORAM's paced
requests sleep until each is due: 1.08 CPU-s in a 4.34 s point, measured under load) is
understated, and a point that runs several threads (ORAM's shuffle, memnet with `threads`) is
overstated as a share of one worker. The oram and he reproducers ask for their points one at a
time, so a cluster does not shorten them either way.
"""

from __future__ import annotations

import heapq
import json
from pathlib import Path
from typing import Any

WORKERS = (1, 2, 8, 32, 128)


def makespan(times: list[float], workers: int) -> float:
    """Longest-processing-time-first list scheduling of `times` on `workers` equal workers."""
    if not times:
        return 0.0
    if workers >= len(times):
        return max(times)
    loads = [0.0] * workers
    for t in sorted(times, reverse=True):
        heapq.heapreplace(loads, loads[0] + t)
    return max(loads)


def projected_wall(batches: list[dict[str, Any]], own_s: float, workers: int) -> float:
    """The section's wall time with `workers` workers: its own work plus each batch's makespan
    (a single `ctx.run` point runs in the reproducing process whatever the cluster)."""
    return own_s + sum(makespan(b["point_s"], workers if b["many"] else 1) for b in batches)


def section_timing(system: str, seconds: float, cpu_seconds: float | None, batches: list[dict[str, Any]],
                   batch_wall_s: float, workers: tuple[int, ...] = WORKERS) -> dict[str, Any]:
    """One section's record in timing.json. own_s: wall time outside the point batches (plots,
    comparisons, work a reproducer does itself), run in the reproducing process however many
    workers there are."""
    own = max(0.0, seconds - batch_wall_s)
    points = [t for b in batches for t in b["point_s"]]
    return {"system": system, "seconds": round(seconds, 2),
            "cpu_seconds": None if cpu_seconds is None else round(cpu_seconds, 2),
            "points": len(points), "point_cpu_s": round(sum(points), 2),
            "longest_point_s": round(max(points, default=0.0), 2), "own_s": round(own, 2),
            "batches": [{"experiment": b["experiment"], "many": b["many"], "points": len(b["point_s"]),
                         "point_s": [round(t, 3) for t in b["point_s"]]} for b in batches],
            "projected_wall_s": {str(w): round(projected_wall(batches, own, w), 1) for w in workers}}


def write_timing(out_dir: Path, entries: list[dict[str, Any]], mode: str, merge: bool) -> Path:
    """timing.json: one entry per system (a partial run keeps the other systems' entries of the
    same mode)."""
    path = out_dir / "timing.json"
    old: dict[str, Any] = {}
    if merge and path.exists():
        try:
            old = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            old = {}
    systems = old.get("systems", {}) if isinstance(old, dict) and old.get("mode") == mode else {}
    systems.update({e["system"]: e for e in entries})
    path.write_text(json.dumps({"mode": mode, "systems": systems}, indent=1) + "\n")
    return path


def projection_lines(timing: dict[str, Any], workers: tuple[int, ...] = WORKERS) -> list[str]:
    """A table of measured and projected times per system, and the total."""
    systems = list(timing.get("systems", {}).values())
    head = f"{'system':10} {'points':>6} {'point CPU-s':>11} {'longest':>8} {'own s':>7}" + "".join(
        f" {f'{w} workers':>11}" for w in workers)
    out = [f"veil reproduce --{timing.get('mode', '?')}: wall time projected from each point's measured time", head]
    tot = {str(w): 0.0 for w in workers}
    for s in systems:
        proj = s["projected_wall_s"]
        out.append(f"{s['system']:10} {s['points']:6d} {s['point_cpu_s']:11.0f} {s['longest_point_s']:8.1f} "
                   f"{s['own_s']:7.0f}" + "".join(f" {_dur(proj.get(str(w))):>11}" for w in workers))
        for w in workers:
            tot[str(w)] += proj.get(str(w)) or 0.0
    out.append(f"{'total':10} {sum(s['points'] for s in systems):6d} {sum(s['point_cpu_s'] for s in systems):11.0f} "
               f"{'':8} {sum(s['own_s'] for s in systems):7.0f}" + "".join(f" {_dur(tot[str(w)]):>11}" for w in workers))
    return out


def _dur(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
