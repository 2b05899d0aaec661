"""memnet settings found missing against BookSim2: a named booksim_compat preset, per-link
latencies for the flattened butterfly (BookSim2's use_noc_latency), link latencies in the result."""

from __future__ import annotations

import pytest

from veil.core import ConfigError
from veil.core.config import validate
from veil.core.runner import compute


def test_booksim_compat_preset_is_booksim2_draw_for_draw():
    # The BookSim2 mesh reference at 0.05 flits/node/cycle: 30.5619 cycles, 60,095 cycles simulated.
    r, _ = compute("memnet.latency_load", {"preset": "booksim_compat", "rate": 0.05})
    assert r["cycles_simulated"] == 60095
    assert r["avg_packet_latency"] == pytest.approx(30.5619, abs=1e-4)
    plain, _ = compute("memnet.latency_load", {"rate": 0.05})
    assert plain["avg_packet_latency"] != r["avg_packet_latency"]  # the defaults alone draw other numbers


def test_keys_given_beside_a_preset_win():
    assert validate("memnet.latency_load", {"preset": "booksim_compat"}).rng == "booksim"
    assert validate("memnet.latency_load", {"preset": "booksim_compat", "rng": "streams"}).rng == "streams"
    with pytest.raises(ConfigError, match="preset"):
        validate("memnet.latency_load", {"preset": "booksim"})


def test_flatfly_noc_latency_adds_the_span_of_each_hop():
    # 4x4 flattened butterfly, one terminal per router, uniform traffic (self included), minimal
    # routing: a packet's row hop spans |dx| pitches. Over the 16 x 16 source/destination pairs
    # of one dimension the mean span is 20/16 and the mean hop count 12/16, so per-pitch latency L
    # adds (20 - 12)/16 * L per dimension: L cycles per packet in all, at a load too low to queue.
    base = {"topology": "flatfly", "k": 4, "c": 1, "routing": "min", "latency": 4, "rate": 0.02,
            "mode": "fixed", "warmup_cycles": 1000, "measure_cycles": 30000}
    flat, _ = compute("memnet.latency_load", base)
    noc, _ = compute("memnet.latency_load", {**base, "noc_latency": True})
    assert noc["avg_network_latency"] - flat["avg_network_latency"] == pytest.approx(4.0, abs=0.25)
    assert (flat["link_latency_min"], flat["link_latency_max"]) == (4, 4)
    assert (noc["link_latency_min"], noc["link_latency_max"]) == (4, 12)


def test_torus_link_latency_is_reported_and_documented(veil_cli, tmp_path):
    r, _ = compute("memnet.latency_load", {"topology": "torus", "k": 4, "mode": "fixed", "warmup_cycles": 100,
                                           "measure_cycles": 1000})
    assert (r["link_latency_min"], r["link_latency_max"]) == (1, 1)
    listed = veil_cli("list", "memnet")
    assert "wrap-around links included (default 1; BookSim2's torus uses 2" in listed.out
    assert "link_latency_max (cycles)" in listed.out
