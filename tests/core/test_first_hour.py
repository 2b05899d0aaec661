"""docs/first-hour.md works as written: its commands, its sweep file and its pandas snippet."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "first-hour.md").read_text()


def block(lang: str, starting: str = "") -> str:
    for text in re.findall(rf"```{lang}\n(.*?)```", PAGE, re.S):
        if text.startswith(starting):
            return text
    raise AssertionError(f"no ```{lang} block starting {starting!r} in docs/first-hour.md")


def commands(starting: str) -> list[list[str]]:
    """The `veil ...` lines of the sh block that starts with `starting`, comments dropped."""
    out = []
    for line in block("sh", starting).splitlines():
        line = line.split(" #")[0].strip()
        if line.startswith("veil "):
            out.append(line.split()[1:])
    return out


@pytest.mark.slow
def test_the_first_hour_page_runs_as_written(veil_cli, tmp_path, store_path):
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    for args in commands("git clone"):
        r = veil_cli(*args)
        assert r.rc == 0, (args, r.err)
    assert "avg_packet_latency (cycles)" in veil_cli("list", "memnet.latency_load").out
    for args in commands("veil run configs"):
        r = veil_cli(*args)
        assert r.rc == 0, (args, r.err)
    write(tmp_path / "first_sweep.toml", block("toml", "# first_sweep.toml"))
    sweep, sweep_k6 = commands("veil sweep")
    r = veil_cli(*sweep)
    assert r.rc == 0 and "8 points: 8 computed" in r.out, r.err
    r = veil_cli(*sweep_k6)
    assert r.rc == 0 and "8 computed" in r.out, r.err  # base.k changed every point
    (plot,) = commands("veil plot")
    r = veil_cli(*plot)
    assert r.rc == 0 and (tmp_path / "latency.png").stat().st_size > 1000, r.err
    no_hue = [a for a in plot if a not in ("--hue", "topology")]
    r = veil_cli(*no_hue)
    assert r.rc == 2 and "differ in topology" in r.err  # the page says it stops and names topology
    for args in commands("veil results list"):
        r = veil_cli(*args)
        assert r.rc == 0, (args, r.err)
    assert (tmp_path / "results.csv").exists()
    p = subprocess.run([sys.executable, "-c", block("python", "import veil")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "torus" in p.stdout and p.stdout.strip().endswith("cycles")


@pytest.mark.slow
def test_the_first_hour_figure(veil_cli, tmp_path):
    (cmd,) = commands("veil reproduce")
    r = veil_cli(*cmd, timeout=900)
    assert r.rc == 0, r.err
    assert (tmp_path / "report" / "index.html").exists() and (tmp_path / "report" / "results.json").exists()
