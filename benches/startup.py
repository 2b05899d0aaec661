"""`veil bench startup`: CPU seconds a `veil` command spends before its work, lazy vs eager.

Each command runs in a fresh interpreter (the way a user starts it), five times, the lazy path
and the eager one interleaved so that the machine's load falls on both alike; the figure is the
median of user + system CPU seconds of the child process. The eager path is what every command
paid before systems loaded on demand: every system, every reproducer and scipy.stats imported
first, then the same command. Target: <= 0.3 CPU-s for `veil --version` and a tiny `veil run`.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile

from veil.core import machine_load, register_benchmark

RUNS = 5
TINY = ["run", "memnet.latency_load", "mode=fixed", "warmup_cycles=10", "measure_cycles=100", "k=2", "--force",
        "--no-progress"]
EAGER = ("import scipy.stats; from veil.core.registry import load_reproducers; load_reproducers(); "
         "import sys; from veil.cli import main; sys.exit(main(sys.argv[1:]))")
LAZY = "import sys; from veil.cli import main; sys.exit(main(sys.argv[1:]))"


def _cpu_seconds(code: str, args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code, *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@register_benchmark("startup", doc="CPU-s before work: `veil --version` and a tiny `veil run`, lazy vs eager")
def bench(ctx) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "results.sqlite")
        for name, args in (("version", ["--version"]), ("tiny_run", [*TINY, "--store", store])):
            lazy, eager = [], []
            for _ in range(RUNS):
                lazy.append(_cpu_seconds(LAZY, args))
                eager.append(_cpu_seconds(EAGER, args))
            ctx.report(f"startup/{name}_cpu_s", statistics.median(lazy), "CPU-s",
                       baseline=statistics.median(eager), baseline_name="eager imports", target="<= 0.3")
    ctx.log(f"load average (1, 5, 15 min): {machine_load()}")
