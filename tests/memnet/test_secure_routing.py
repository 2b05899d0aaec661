"""The secure routing algorithms from Python: the [secure] table, the result fields, the alias,
the analytic dummy count, bad input (one line, exit 2)."""

from __future__ import annotations

import json

import pytest

from conftest import one_line_error, write
from veil.core.runner import compute
from veil.memnet.memsys import ghost_dummies_analytic

# 16 modules (dragonfly a=4, g=4), 4 CPUs: a second per run.
SMALL = {"a": 4, "g": 4, "cpus": 4, "requests_per_cpu": 60, "encryption": "source_otp"}


def run(**kw):
    r, _ = compute("memnet.memsys", {**SMALL, **kw})
    return r


def test_ghost_routing_through_the_experiment_conserves_and_counts():
    r = run(injection="ghost_minimal")
    assert r["injection"] == "ghost_minimal"
    assert r["responses"] == r["reads"] + r["writes"]
    assert r["dummies"] == r["dummy_packets"] > 0
    assert r["dummies_per_real_packet"] == pytest.approx(r["dummy_packets"] / r["real_packets"])
    # Mirrored replies: as many packets back as out, so extra = 2 x dummies per request.
    assert r["extra_packets_per_request"] == pytest.approx(r["dummy_packets"] / (r["reads"] + r["writes"]))
    for key in ("avg_packet_latency_ns", "injection_utilisation", "network_utilisation"):
        assert 0 < r[key], key
    assert r["injection_utilisation"] <= 1 and r["network_utilisation"] <= 1


def test_direct_is_minimal_and_sends_no_dummies():
    a, b = run(injection="direct"), run(injection="minimal")
    for r in (a, b):
        r.pop("wall_seconds")
        r.pop("cycles_per_second")
    assert a == b
    assert a["dummy_packets"] == 0 and a["extra_packets_per_request"] == 0


def test_secure_table_from_a_config_file_and_batching(veil_cli, tmp_path):
    write(tmp_path / "g.toml", 'experiment = "memnet.memsys"\nseed = 2\na = 4\ng = 4\ncpus = 4\nrequests_per_cpu = 40\n'
                               'workload = "batch"\ninjection = "ghost_minimal"\n[secure]\nbatch = 4\npacket_flits = 20\n')
    r = veil_cli("run", "g.toml", "--json", "out.json")
    assert r.rc == 0, r.err
    from_file = json.loads((tmp_path / "out.json").read_text())
    # Larger packets holding up to 4 messages each: fewer packets than messages.
    one = run(injection="ghost_minimal", workload="batch", requests_per_cpu=40, seed=2,
              secure={"batch": 4, "packet_flits": 20})
    assert one["real_packets"] < 2 * (one["reads"] + one["writes"])
    assert from_file["config"]["secure"]["batch"] == 4
    assert from_file["result"]["real_packets"] == one["real_packets"]


def test_analytic_dummy_count_grows_with_the_modules():
    assert ghost_dummies_analytic(1) == 0
    assert ghost_dummies_analytic(2) == pytest.approx(0.6)
    assert 32 < ghost_dummies_analytic(64) < 64


@pytest.mark.parametrize("extra, needle", [
    ('injection = "ghost"', "injection"),
    ('injection = "adaptive_ghost"\n[secure]\nhot_modules = [70]', "secure.hot_modules: module(s) [70] do not exist"),
    ('injection = "constant_rate"\n[secure]\nslot_cycles = 2', "secure.slot_cycles: 2 is shorter than a packet"),
    ('[secure]\nbatch = 0', "batch"),
    ('[secure]\nwindow = 3', "window"),
])
def test_bad_secure_input_one_line_exit_2(veil_cli, tmp_path, extra, needle):
    write(tmp_path / "bad.toml", f'experiment = "memnet.memsys"\n{extra}\n')
    one_line_error(veil_cli("run", "bad.toml"), needle)
