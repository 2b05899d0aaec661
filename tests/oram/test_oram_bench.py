"""`veil bench oram` (with `--contention`) runs end to end at a small size."""

from __future__ import annotations

import json
import sys

import pytest


def test_contention_bench_prints_both_runs_and_the_aes_gcm_limit(veil_cli, tmp_path):
    out = tmp_path / "bench.json"
    r = veil_cli("bench", "oram", "--contention", "--json", str(out), env={"VEIL_BENCH_ORAM_SIZE": "64,4096"})
    assert r.rc == 0, r.err[-2000:]
    for key in ("oram/contended_throughput_mbps", "oram/contended_sched_idle_throughput_mbps",
                "oram/aes_gcm_bound_mbps", "oram/gcm_single_core_gbytes_s", "oram/throughput_mbps_of_bound",
                "oram/aes_gcm_bound_cores_together_mbps", "oram/aes_gcm_streaming_mbps",
                "oram/gcm_single_core_streaming_gbytes_s", "oram/throughput_mbps_of_streaming",
                "oram/long_epoch_throughput_mbps", "oram/long_epoch_gcm_bytes_per_access",
                "oram/throughput_mbps_4k", "oram/shuffle_copies_ms", "oram/memory_floor_mbps",
                "oram/throughput_mbps_of_memory_floor", "oram/cache_throughput_mbps_of_bound",
                "oram/cache_throughput_mbps_of_pathoram", "oram/cache_p99_over_p50"):
        assert key in r.out, key
    assert "Traceback" not in r.err
    text = out.read_text()
    json.loads(text)
    assert "oram/aes_gcm_bound_mbps" in text and "oram/contended_sched_idle_throughput_mbps" in text
    # the share of the bound and the longer epoch are ratios against figures of the same run
    line = next(x for x in r.out.splitlines() if "oram/throughput_mbps_of_bound" in x)
    assert "AES-GCM bound in cache" in line and "ratio" in line and ">= 0.7x" in line
    line = next(x for x in r.out.splitlines() if "oram/throughput_mbps_of_streaming" in x)
    assert "AES-GCM from memory" in line and "ratio" in line
    # the shuffle's copies alone, timed in the same run: against the same shuffle with AES-GCM,
    # and as a ceiling beside the in-cache bound
    line = next(x for x in r.out.splitlines() if "oram/shuffle_copies_ms" in x)
    assert "the same shuffle with AES-GCM" in line and "ratio" in line, line
    line = next(x for x in r.out.splitlines() if "oram/memory_floor_mbps" in x)
    assert "AES-GCM bound in cache" in line and "ratio" in line, line
    assert any("a shuffle that cost no more than its copies" in x for x in r.out.splitlines())
    line = next(x for x in r.out.splitlines() if "oram/long_epoch_gcm_bytes_per_access" in x)
    # 4x the epoch: a quarter of the AES-GCM per request at large N; at N = 64 the extra
    # dummies (M = 100 slots against 72) leave (5 x 100 / 32 + 2) / (5 x 72 / 8 + 2) = 0.375
    assert float(line.split("ratio:")[1].split("x")[0]) == pytest.approx(0.375, abs=0.006), line
    # the cache shuffle against its own bound (2 passes, not 5), the Clos shuffle and Path ORAM
    line = next(x for x in r.out.splitlines() if "oram/cache_throughput_mbps_of_bound" in x)
    assert "its AES-GCM bound in cache" in line and "ratio" in line and ">= 0.7x" in line, line
    assert any("cache shuffles of" in x for x in r.out.splitlines())
    # PyORAM is a test dependency: measured beside PRO-ORAM, with the ratio
    line = next(x for x in r.out.splitlines() if "oram/throughput_mbps_4k" in x)
    assert "PyORAM Path ORAM" in line and "ratio" in line, line


@pytest.fixture
def bench_module():
    from veil.core.registry import load_benchmarks

    load_benchmarks()
    return sys.modules["veil_benches.oram"]


def test_gcm_work_follows_the_geometry(bench_module):
    m = bench_module
    # N = 4096: T = 64, M = 4160 slots (64 x 65); 5 AES-GCM passes per slot over T requests
    assert m.slots(4096, 64) == 4160 and m.slots(4096, 256) == 66 * 66
    assert m.gcm_bytes_per_access(4096, 262144) == pytest.approx((5 * 4160 / 64 + 2) * 262144)
    assert m.gcm_bytes_per_access(4096, 262144, 256) == pytest.approx((5 * 4356 / 256 + 2) * 262144)
    # the cache shuffle: one opening and one sealing per slot
    assert m.gcm_bytes_per_access(4096, 262144, 64, "cache") == pytest.approx((2 * 4160 / 64 + 2) * 262144)


class _Ctx:
    def __init__(self):
        self.rows, self.lines, self.results = [], [], {}

    def report(self, key, value, **kw):
        self.rows.append((key, value, kw))
        self.results[key] = value

    def log(self, text):
        self.lines.append(text)


@pytest.mark.parametrize("hidden, said", [
    ("pyoram", "PyORAM is not installed"),
    # installed, but a piece fails to import (as when its cffi helper was never built)
    ("pyoram.oblivious_storage.tree.path_oram", "PyORAM is installed but does not import"),
])
def test_without_a_working_pyoram_the_bench_says_so_in_one_line(bench_module, monkeypatch, hidden, said):
    monkeypatch.setitem(sys.modules, hidden, None)
    assert bench_module.pyoram_missing().startswith(said)
    assert bench_module.pyoram_path_mbps(64, 4096, 10, 1) is None
    ctx = _Ctx()
    bench_module.small_blocks(ctx, {"n_blocks": 64, "block_size": 4096, "seed": 1, "verify": True, "link_mbps": 7.0})
    assert len(ctx.lines) == 1 and ctx.lines[0].startswith(said), ctx.lines
    assert "`make bench` installs it" in ctx.lines[0] and "no ratio" in ctx.lines[0]
    # a recorded figure is labelled as recorded, with its date and machine
    mbps, source = bench_module.PYORAM_REFERENCE
    assert f"recorded, not measured, Path ORAM at 4 KB, N = 4096: {mbps:g} Mbps ({source})" in ctx.lines[0]
    assert "2026" in source and "VM" in source
    # no ratio against a figure that was not measured in this run
    assert [(k, kw.get("baseline")) for k, _, kw in ctx.rows] == [("oram/throughput_mbps_4k", None)]


def test_pyoram_is_installed_working(bench_module):
    # a test dependency (pyproject's test extra), built with its cffi helper by `make setup-test`:
    # a broken install fails here instead of turning the bench's baseline into a recorded number
    import pyoram.util._virtual_heap_helper  # noqa: F401

    assert bench_module.pyoram_missing() is None


def test_pyoram_path_oram_serves_blocks(bench_module):
    # measured, not skipped: a real Path ORAM write then read of the same block, then timed reads
    assert bench_module.pyoram_path_mbps(64, 4096, 50, 1) > 0
