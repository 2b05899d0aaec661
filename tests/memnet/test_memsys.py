"""The memory-centric network from Python: the memnet.memsys experiment, its checks, bad input."""

from __future__ import annotations

import pytest

from conftest import one_line_error, write
from veil.core.runner import compute
from veil.memnet.reproduce_memsys import UARCHS

SMALL = {"requests_per_cpu": 150}


def run(**kw):
    r, _ = compute("memnet.memsys", {**SMALL, **kw})
    return r


def test_idle_read_equals_the_analytic_sum():
    # CPU at module 0, one read to module 1 (one router hop each way), every default: 3 cycles
    # per router pass, each link's wire latency (6 x 1) plus 1 for each packet's injection,
    # SerDes 4 per off-chip link (4 of them), DRAM 44, 4 tail flits of the response.
    one = {"cpus": 1, "placement": [0], "workload": "hotspot", "hot_modules": [1], "hotspot_fraction": 1.0,
           "requests_per_cpu": 1}
    base = 4 * 3 + 6 * 1 + 2 + 4 * 4 + 44 + 4
    assert run(**one)["avg_read_latency"] == base
    assert run(**one, encryption="per_hop_aes")["avg_read_latency"] == base + 4 * 20
    assert run(**one, encryption="per_hop_otp")["avg_read_latency"] == base + 4
    assert run(**one, encryption="source_otp")["avg_read_latency"] == base


def test_every_request_answered_and_deterministic():
    a = run(workload="hotspot", encryption="source_otp", seed=3)
    b = run(workload="hotspot", encryption="source_otp", seed=3)
    for r in (a, b):
        r.pop("wall_seconds")
        r.pop("cycles_per_second")
    assert a == b
    assert a["responses"] == a["reads"] + a["writes"] == 16 * 150
    assert a["dram_reads"] == a["reads"]


def test_results_identical_for_1_and_2_threads(tmp_path):
    from veil import _native

    # Trace records read ahead on a worker (over a batch per core) and synthetic streams with a
    # secure algorithm's random draws: the same results whatever the thread count.
    path = str(tmp_path / "t.vtrace")
    _native.memnet.memsys_write_synthetic_trace(path, 4 * 1500, 4, 2)
    for kw in ({"workload": "trace", "trace": path, "cpus": 4, "encryption": "source_otp"},
               {"injection": "ghost_minimal", "requests_per_cpu": 1100}):
        one, two = run(**kw, threads=1), run(**kw, threads=2)
        for r in (one, two):
            r.pop("wall_seconds")
            r.pop("cycles_per_second")
        assert one == two
        assert one["responses"] == one["reads"] + one["writes"] > 0


def test_paper_ordering_of_encryption_costs():
    rt = {u: run(encryption=u, workload="batch")["runtime_cycles"] for u in UARCHS}
    assert rt["per_hop_aes"] > rt["per_hop_otp"] > rt["none"]
    assert abs(rt["source_otp"] / rt["none"] - 1) < 0.02


def test_functional_mode_round_trips():
    r = run(encryption="source_otp", functional=True, routing="ugal", workload="batch", check_bits=16)
    assert r["functional_mismatches"] == 0
    assert r["functional_rejected_at_destination"] == 0
    assert r["functional_packets"] == 2 * (r["reads"] + r["writes"])
    assert r["functional_foreign_trials"] == r["functional_packets"]


@pytest.mark.parametrize("extra, needle", [
    ({"cpus": 1, "placement": [64]}, "cpu.placement: module 64 does not exist"),
    ({"otp_depth": 0}, "encryption.otp_depth: must be >= 1"),
    ({"address_mapping": "RW:VL:LY:CLL"}, "does not cover the address bits: field CB"),
    ({"address_space": 2**40}, "exceed the modules' capacity"),
    ({"cpus": 2, "placement": [3, 3]}, "no free terminal"),
    ({"threads": 0}, "threads"),
    ({"threads": 1025}, "threads"),
])
def test_bad_input_one_line_exit_2(veil_cli, tmp_path, extra, needle):
    lines = ['experiment = "memnet.memsys"']
    for k, v in extra.items():
        lines.append(f"{k} = {v!r}".replace("'", '"'))
    write(tmp_path / "bad.toml", "\n".join(lines) + "\n")
    one_line_error(veil_cli("run", "bad.toml"), needle)


def test_trace_workload_from_a_config_file(veil_cli, tmp_path):
    from veil import _native

    _native.memnet.memsys_write_synthetic_trace(str(tmp_path / "t.vtrace"), 400, 4, 3)
    write(tmp_path / "trace.toml", 'experiment = "memnet.memsys"\nworkload = "trace"\ntrace = "t.vtrace"\ncpus = 4\n')
    r = veil_cli("run", "trace.toml")
    assert r.rc == 0, r.err
    res, _ = compute("memnet.memsys", {"workload": "trace", "trace": str(tmp_path / "t.vtrace"), "cpus": 4})
    assert res["reads"] + res["writes"] == res["responses"] == 400
    write(tmp_path / "few.toml", 'experiment = "memnet.memsys"\nworkload = "trace"\ntrace = "t.vtrace"\ncpus = 2\n')
    one_line_error(veil_cli("run", "few.toml"), "4 threads but cpu.count is 2")
