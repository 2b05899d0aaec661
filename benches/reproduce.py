"""`veil bench reproduce`: how long `veil reproduce` takes per system, measured, and on a cluster
of 8, 32 and 128 Dask workers, projected from each point's measured time and the sweeps' shape
(veil/core/timing.py: the reproducer waits for each batch of points before the next).

It reads the timing.json that `veil reproduce` leaves in its report folder (VEIL_TIMING=path,
default report/timing.json); it runs nothing itself, since a full reproduction takes hours. No
same-run baseline exists for a projection: the 1-worker column is the serial time it scales.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from veil.core import register_benchmark
from veil.core.timing import WORKERS, projection_lines


@register_benchmark("reproduce", doc="veil reproduce: measured CPU time per system, wall projected for 8/32/128 workers")
def bench_reproduce(ctx) -> None:
    path = Path(os.environ.get("VEIL_TIMING", "report/timing.json"))
    if not path.exists():
        ctx.log(f"no {path}: run `veil reproduce --full` (or --quick) first, on any number of workers; "
                "its timing.json is what this projects from")
        return
    timing = json.loads(path.read_text())
    for line in projection_lines(timing):
        ctx.log(line)
    mode = timing.get("mode", "quick")
    for s in timing.get("systems", {}).values():
        ctx.report(f"{mode}/{s['system']}/point_cpu_s", s["point_cpu_s"], "CPU-s")
        for w in WORKERS[1:]:
            ctx.report(f"{mode}/{s['system']}/wall_{w}_workers", s["projected_wall_s"][str(w)], "s")
