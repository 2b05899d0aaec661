"""The BookSim2 same-run comparison of `veil bench memnet`, with a stand-in BookSim2 binary (a
script printing BookSim2's result lines and exiting 255, as BookSim2's main does after a run)."""

from __future__ import annotations

import pathlib
import stat

import pytest

from memnet.test_memnet import _bench_module as _bench
from veil.core.bench import BenchContext
from veil.memnet import booksim

FAKE = """#!/bin/sh
case "$(cat "$1")" in *"sim_count = 0"*) exit 255;; esac
echo "Packet latency average = 36.1 (1 samples)"
echo "Time taken is 60117 cycles"
echo "Packet latency average = {lat} (1 samples)"
exit 255
"""


def _fake(tmp_path: pathlib.Path, lat: str = "36.5789") -> pathlib.Path:
    p = tmp_path / "booksim"
    p.write_text(FAKE.format(lat=lat))
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


def test_booksim_output_is_parsed_despite_its_exit_status(tmp_path):
    r = booksim.run_booksim(_fake(tmp_path), str(tmp_path))
    assert r["cycles"] == 60117 and r["latency"] == 36.5789  # the last average is the overall one
    assert "sim_count = 0" not in (tmp_path / "mesh.cfg").read_text()


def test_binary_from_the_environment_or_none(tmp_path, monkeypatch):
    fake = _fake(tmp_path)
    monkeypatch.setenv("BOOKSIM", str(fake))
    assert booksim.find_binary() == fake
    monkeypatch.setenv("BOOKSIM", str(tmp_path / "absent"))
    assert booksim.find_binary() is None


def _veil(monkeypatch, cpus):
    it = iter(cpus)
    monkeypatch.setattr(booksim, "run_veil_process", lambda d: {"cpu": next(it), "wall": 1.0})
    monkeypatch.setattr(booksim, "run_veil_simulator",
                        lambda: {"cpu": 0.5, "cycles": 60117, "latency": 36.578934})


def test_ratio_is_the_median_of_pairs_not_of_sums(tmp_path, monkeypatch):
    _veil(monkeypatch, [1.0, 1e9, 1e-9])
    rows = booksim.pairs(_fake(tmp_path), 3, str(tmp_path), lambda s: None)
    for r, b in zip(rows, (4.0, 1.0, 9.0)):
        r["booksim"]["cpu"] = b
    out = booksim.ratios(rows, startup=0.5)
    assert out["process"] == pytest.approx(4.0)  # pairs 4/1, 1/1e9, 9/1e-9: the middle one
    assert out["simulator"] == pytest.approx((4.0 - 0.5) / 0.5)


def test_different_runs_are_refused(tmp_path, monkeypatch):
    _veil(monkeypatch, [1.0])
    with pytest.raises(RuntimeError, match="different runs"):
        booksim.pairs(_fake(tmp_path, lat="40.0"), 1, str(tmp_path), lambda s: None)


def test_bench_reports_both_ratios_alone_and_beside_a_hog(tmp_path, monkeypatch):
    mod = _bench()
    monkeypatch.setenv("BOOKSIM", str(_fake(tmp_path)))
    monkeypatch.setattr(mod, "PAIRS", 2)
    _veil(monkeypatch, [1.0] * 4)
    lines = []
    ctx = BenchContext("memnet", log=lines.append)
    mod.bench_mesh_process(ctx)
    for label in ("alone", "beside_hog"):
        assert f"memnet/mesh8x8_booksim_ratio_process_{label}" in ctx.results
        assert f"memnet/mesh8x8_booksim_ratio_simulator_{label}" in ctx.results
    assert sum("interleaved pairs" in s for s in lines) == 3


def test_without_a_binary_the_bench_says_so_and_names_the_record(tmp_path, monkeypatch):
    mod = _bench()
    monkeypatch.setenv("BOOKSIM", str(tmp_path / "absent"))
    _veil(monkeypatch, [2.0, 1.5])
    lines = []
    ctx = BenchContext("memnet", log=lines.append)
    mod.bench_mesh_process(ctx)
    text = "\n".join(lines)
    assert "no BookSim2 binary" in text and "21 Nov 2026" in text and "AMD EPYC" in text
    assert ctx.results["memnet/mesh8x8_process_cpu_seconds"] == 1.5
