"""`veil bench`: registered benchmarks print each figure, the same-run baseline and the ratio."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from veil.core.errors import ConfigError
from veil.core.registry import REGISTRY, load_benchmarks
from veil.core.runner import progress_line


def _say(text: str) -> None:
    print(text, flush=True)  # a line as soon as it is known, into a pipe or log too


class BenchContext:
    def __init__(self, system: str, log=_say):
        self.system = system
        self.results: dict[str, Any] = {}
        self.rows: list[dict[str, Any]] = []
        self._log = log

    def report(self, key: str, value: float, unit: str = "", baseline: float | None = None,
               ratio: float | None = None, target: str | None = None, baseline_name: str = "baseline") -> None:
        """Records one figure; `ratio` defaults to value / baseline when a same-run baseline exists."""
        if ratio is None and baseline not in (None, 0):
            ratio = value / baseline
        self.results[key] = value
        row = {"key": key, "value": value, "unit": unit, "baseline": baseline, "ratio": ratio, "target": target}
        self.rows.append(row)
        text = f"  {key:<44} {_num(value):>12} {unit}"
        if baseline is not None:
            text += f"   {baseline_name}: {_num(baseline)} {unit}"
        if ratio is not None:
            text += f"   ratio: {ratio:.2f}x"
        if target:
            text += f"   target: {target}"
        self._log(text)

    def log(self, text: str) -> None:
        self._log(f"  {text}")


def _num(v: float) -> str:
    if isinstance(v, float) and math.isfinite(v):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.4e}"
    return str(v)


def run_benchmarks(systems: list[str], json_path: Path | None, log=_say) -> dict[str, Any]:
    load_benchmarks()
    known = REGISTRY.benchmarks
    known_systems = sorted({b.system for b in known.values()})
    for s in systems:
        if s not in known_systems:
            raise ConfigError(f"no benchmark for '{s}'; systems with benchmarks: {', '.join(known_systems)}")
    chosen = [b for b in known.values() if not systems or b.system in systems]
    results: dict[str, Any] = {}
    for b in sorted(chosen, key=lambda b: b.name):
        log(f"[{b.name}] {b.doc}")
        ctx = BenchContext(b.system, log)
        t0 = time.perf_counter()
        # Between its lines a benchmark may run for minutes: on a terminal, its elapsed time (and
        # a native simulator's progress) is drawn on stderr meanwhile.
        with progress_line(True, f"[{b.name}]"):
            b.func(ctx)
        log(f"[{b.name}] done in {time.perf_counter() - t0:.1f} s")
        results.update(ctx.results)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return results
