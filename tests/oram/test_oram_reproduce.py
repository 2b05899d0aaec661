"""The reproducer end to end at toy sizes: figures, tables and the issue's metric keys."""

from __future__ import annotations

import json

from veil.core import load_systems
from veil.core.report import reproduce

KEYS = ["oram/server_ms_per_access", "oram/throughput_mbps", "oram/p99_over_p50",
        "oram/pathoram_throughput_mbps", "oram/pathoram_bytes_per_access", "oram/bytes_per_access"]


def test_reproducer_at_toy_sizes(tmp_path, monkeypatch):
    load_systems()
    from veil.oram import reproduce as rep

    kb = 1024
    monkeypatch.setattr(rep, "_sweeps", lambda quick: ([64 * kb, 256 * kb], 256 * kb, [4 * kb, 16 * kb],
                                                       [1 * kb, 2 * kb], 64))
    monkeypatch.setattr(rep, "HEAD", (64, 4 * kb))
    sections, metrics = reproduce(["oram"], tmp_path, None, quick=True, jobs=1, log=lambda *a: None)
    assert not sections[0].error, sections[0].error
    for k in KEYS:
        assert k in metrics and metrics[k] > 0, k
    assert (tmp_path / "figures" / "oram_fig5_latency.png").stat().st_size > 1000
    assert (tmp_path / "figures" / "oram_fig6_throughput.png").stat().st_size > 1000
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["oram/bytes_per_access"] == metrics["oram/bytes_per_access"]
    # PRO-ORAM's bytes per request at N = 64, B = 4 KB: one slot + 5 M / T slots (M = 72, T = 8)
    assert abs(saved["oram/bytes_per_access"] / ((4096 + 16) * (1 + 5 * 72 / 8)) - 1) < 0.05
