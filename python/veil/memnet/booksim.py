"""BookSim2 beside memnet in one run: the same 8x8 mesh workload in both, interleaved pairs.

A ratio against a BookSim2 time recorded on another day (or machine) mixes two machines' speeds;
run side by side, both see the same load, so each pair's ratio is the one to read and the
median of the pairs the figure. BookSim2 is not shipped: `find_binary` looks for a build made
from its public source (docs/memnet-network.md, "BookSim2 beside memnet").
"""

from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

# The mesh reference curve's settings at 0.25 flits/node/cycle (data/README.md), which memnet's
# booksim_compat preset reproduces draw for draw: both simulate the same 60,117 cycles.
MESH_CONFIG = """topology = mesh; k = 8; n = 2; routing_function = dor; num_vcs = 4; vc_buf_size = 8;
wait_for_tail_credit = 0; vc_allocator = separable_input_first; sw_allocator = separable_input_first;
alloc_iters = 1; credit_delay = 2; routing_delay = 0; vc_alloc_delay = 1; sw_alloc_delay = 1;
st_final_delay = 1; input_speedup = 1; output_speedup = 1; internal_speedup = 1.0; traffic = uniform;
packet_size = 4; injection_rate_uses_flits = 1; sim_type = latency; warmup_periods = 3;
sample_period = 10000; seed = 1; injection_rate = 0.25;
"""
MESH_CYCLES = 60_117

# What the bench prints when no binary is found: the BookSim2 time recorded for this workload.
RECORDED = {
    "cpu_seconds": MESH_CYCLES / 5764.0,
    "text": "BookSim2 28f4329 (gcc -O3), 60,117 cycles at 5,764 cycles/s of CPU = 10.43 CPU-s, "
            "recorded 21 Nov 2026 on the 2-core development machine (2 vCPU AMD EPYC VM), "
            "beside memnet; the reference curve's own column says 9.30 CPU-s on a like machine",
}

# Where a build is looked for when neither variable is set: beside the repository, as the
# docs' build steps leave it.
_BESIDE = ("booksim2/src/booksim", "booksim-build/src/booksim")


def find_binary() -> pathlib.Path | None:
    """$BOOKSIM (or $VEIL_BOOKSIM) when set, else a build beside the repository; None if absent."""
    for var in ("BOOKSIM", "VEIL_BOOKSIM"):
        env = os.environ.get(var)
        if env:
            p = pathlib.Path(env)
            return p if p.is_file() and os.access(p, os.X_OK) else None
    root = pathlib.Path(__file__).resolve().parents[3]
    for rel in _BESIDE:
        p = root.parent / rel
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def _child(cmd: list[str], cwd: str, ok: tuple[int, ...] = (0,)) -> tuple[float, float, str] | None:
    """Whole-process CPU seconds (user + system, threads included), wall seconds and output."""
    t0, w0 = os.times(), time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return None
    w1, t1 = time.perf_counter(), os.times()
    if p.returncode not in ok:
        return None
    cpu = (t1.children_user + t1.children_system) - (t0.children_user + t0.children_system)
    return cpu, w1 - w0, p.stdout


def run_booksim(binary: pathlib.Path, d: str, extra: str = "") -> dict[str, Any] | None:
    """BookSim2 on the mesh workload: CPU and wall seconds, cycles, mean packet latency."""
    cfg = pathlib.Path(d) / "mesh.cfg"
    cfg.write_text(MESH_CONFIG + extra)
    # BookSim2's main returns -1 after a successful run (exit status 255).
    r = _child([str(binary), str(cfg)], d, ok=(0, 255))
    if r is None:
        return None
    out: dict[str, Any] = {"cpu": r[0], "wall": r[1], "cycles": None, "latency": None}
    for line in r[2].splitlines():
        if line.startswith("Time taken is"):
            out["cycles"] = int(line.split()[3])
        elif line.startswith("Packet latency average ="):
            out["latency"] = float(line.split()[4])  # the last one is the overall average
    return out


def booksim_startup_cpu(binary: pathlib.Path, d: str) -> float | None:
    """BookSim2's CPU seconds for reading the config and building the network, no simulation
    (sim_count = 0): what its whole process costs beyond its simulator. Best of three."""
    runs = [run_booksim(binary, d, "sim_count = 0;\n") for _ in range(3)]
    cpus = [r["cpu"] for r in runs if r is not None]
    return min(cpus) if cpus else None


def run_veil_process(d: str) -> dict[str, Any] | None:
    """The whole `veil run` process on the same workload (start-up included)."""
    cmd = [sys.executable, "-m", "veil.cli", "run", "memnet.latency_load", "preset=booksim_compat", "rate=0.25",
           "--force", "--no-progress", "--store", str(pathlib.Path(d) / "bench.sqlite")]
    r = _child(cmd, d)
    return None if r is None else {"cpu": r[0], "wall": r[1]}


def run_veil_simulator() -> dict[str, Any]:
    """memnet's simulator alone, in this process: CPU seconds, cycles, mean packet latency."""
    from veil.memnet import engine

    cfg = engine.booksim_preset("mesh8x8", 0.25)
    t0 = time.process_time()
    r = engine.simulate(cfg)
    cpu = time.process_time() - t0
    return {"cpu": cpu, "cycles": r["cycles_simulated"], "latency": r["avg_packet_latency"]}


def pairs(binary: pathlib.Path, n: int, d: str, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """`n` interleaved pairs (the order alternates, so neither always runs first): per pair
    BookSim2's whole process, memnet's whole process and memnet's simulator alone, with the
    load average before it. Raises if the two simulate different runs."""
    out = []
    for i in range(n):
        load = os.getloadavg()[0]
        steps: list[tuple[str, Callable[[], Any]]] = [("booksim", lambda: run_booksim(binary, d)),
                                                      ("veil", lambda: run_veil_process(d)),
                                                      ("veil_sim", run_veil_simulator)]
        row: dict[str, Any] = {"load": load}
        for name, fn in (steps if i % 2 == 0 else steps[::-1]):
            row[name] = fn()
        if row["booksim"] is None or row["veil"] is None:
            raise RuntimeError(f"BookSim2 pair {i + 1}: a run failed ({binary})")
        b, v = row["booksim"], row["veil_sim"]
        if b["cycles"] != v["cycles"] or b["latency"] is None or abs(b["latency"] - v["latency"]) > 1e-3:
            raise RuntimeError(f"BookSim2 and memnet simulated different runs: {b['cycles']} vs {v['cycles']} "
                               f"cycles, latency {b['latency']} vs {v['latency']:.4f}")
        log(f"pair {i + 1}/{n} (load {load:.1f}): BookSim2 {b['cpu']:.2f} CPU-s ({b['wall']:.1f} s wall), "
            f"memnet process {row['veil']['cpu']:.2f} CPU-s ({row['veil']['wall']:.1f} s), simulator "
            f"{v['cpu']:.3f} CPU-s; {b['cycles']} cycles, latency {b['latency']} both")
        out.append(row)
    return out


def ratios(rows: list[dict[str, Any]], startup: float) -> dict[str, float]:
    """Median pairwise ratios: BookSim2's whole process over memnet's, and BookSim2's simulator
    (whole process less its start-up) over memnet's simulator alone."""
    return {
        "process": statistics.median(r["booksim"]["cpu"] / r["veil"]["cpu"] for r in rows),
        "simulator": statistics.median((r["booksim"]["cpu"] - startup) / r["veil_sim"]["cpu"] for r in rows),
        "booksim_cpu": statistics.median(r["booksim"]["cpu"] for r in rows),
        "veil_cpu": statistics.median(r["veil"]["cpu"] for r in rows),
        "veil_sim_cpu": statistics.median(r["veil_sim"]["cpu"] for r in rows),
        "load_min": min(r["load"] for r in rows),
        "load_max": max(r["load"] for r in rows),
    }
