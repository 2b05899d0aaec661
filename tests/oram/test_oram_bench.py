"""`veil bench oram --contention` runs end to end at a small size."""

from __future__ import annotations

import json


def test_contention_bench_prints_both_runs_and_the_aes_gcm_limit(veil_cli, tmp_path):
    out = tmp_path / "bench.json"
    r = veil_cli("bench", "oram", "--contention", "--json", str(out), env={"VEIL_BENCH_ORAM_SIZE": "64,4096"})
    assert r.rc == 0, r.err[-2000:]
    for key in ("oram/contended_throughput_mbps", "oram/contended_sched_idle_throughput_mbps",
                "oram/aes_gcm_bound_mbps", "oram/gcm_single_core_gbytes_s"):
        assert key in r.out, key
    assert "Traceback" not in r.err
    rows = json.loads(out.read_text())
    text = json.dumps(rows)
    assert "oram/aes_gcm_bound_mbps" in text and "oram/contended_sched_idle_throughput_mbps" in text


def test_bad_bench_size_is_one_line(veil_cli):
    r = veil_cli("bench", "oram", env={"VEIL_BENCH_ORAM_SIZE": "lots"})
    assert r.rc == 2 and "VEIL_BENCH_ORAM_SIZE" in r.err and len(r.err.strip().splitlines()) == 1
