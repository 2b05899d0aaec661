"""memnet from Python: engine layer, the registered experiment, CLI bad input, reproducer math."""

from __future__ import annotations

import json

import pytest

from conftest import one_line_error, write
from veil.core import ConfigError, VeilError
from veil.core.runner import compute
from veil.memnet import engine
from veil.memnet.reproduce import compare

FAST = {"mode": "fixed", "warmup_cycles": 500, "measure_cycles": 3000}


def test_booksim_reference_point_is_reproduced_exactly():
    # rng=booksim draws BookSim2's random numbers in its order: the 0.05 point of the mesh
    # reference equals BookSim2's run (30.5619 cycles, 60,095 cycles simulated).
    r = engine.simulate(engine.booksim_preset("mesh8x8", 0.05) | {"rng": "booksim"})
    assert r["cycles_simulated"] == 60095
    assert r["avg_packet_latency"] == pytest.approx(30.5619, abs=1e-4)
    assert r["conservation_ok"] and not r["saturated"]
    ref = engine.reference_curve("mesh8x8")
    assert ref[0]["avg_packet_latency"] == 30.6 and ref[0]["cycles_simulated"] == 60095


def test_experiment_runs_and_is_deterministic():
    cfg = {"rate": 0.2, "seed": 7, **FAST}
    a, _ = compute("memnet.latency_load", cfg)
    b, _ = compute("memnet.latency_load", cfg)
    a.pop("wall_seconds")
    b.pop("wall_seconds")
    assert a == b
    c, _ = compute("memnet.latency_load", {**cfg, "seed": 8})
    c.pop("wall_seconds")
    assert c != a
    assert a["accepted_flits_per_node_cycle"] == pytest.approx(0.2, rel=0.05)
    assert a["avg_hops"] == pytest.approx(6.25, abs=0.15)


@pytest.mark.parametrize("extra", [
    {"topology": "dragonfly", "p": 2, "a": 4, "h": 2, "routing": "min", "num_vcs": 2},
    {"topology": "torus", "k": 4, "routing": "dor"},
    {"topology": "flatfly", "k": 4, "c": 2, "routing": "ugal"},
    {"topology": "dragonfly", "p": 2, "a": 4, "h": 2, "routing": "valiant", "num_vcs": 3},
])
def test_topologies_and_routings(extra):
    r, _ = compute("memnet.latency_load", {"rate": 0.1, **FAST, **extra})
    assert r["conservation_ok"] and not r["saturated"]
    assert r["packets_measured"] > 100


@pytest.mark.parametrize("extra, needle", [
    ({"topology": "dragonfly", "routing": "dor"}, "routing: 'dor' does not fit topology 'dragonfly'"),
    ({"topology": "dragonfly", "g": 20, "routing": "min", "num_vcs": 2}, "cannot be built"),
    ({"topology": "torus", "num_vcs": 1}, "needs at least 2 VCs"),
    ({"topology": "file"}, "topology_file"),
    ({"traffic": "bitcomp", "k": 3}, "power-of-two"),
])
def test_bad_combinations_are_config_errors(extra, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        compute("memnet.latency_load", {**FAST, **extra})


def test_deadlock_is_reported_not_hung():
    cfg = {"topology": "torus", "k": 8, "n": 1, "num_vcs": 1, "vc_buf_size": 2, "vc_classes": False,
           "packet_size": 8, "rate": 0.9, "watchdog_cycles": 2000, **FAST}
    with pytest.raises(VeilError, match="deadlock"):
        compute("memnet.latency_load", cfg)


def test_cli_bad_input_one_line_exit_2(veil_cli, tmp_path):
    write(tmp_path / "dor.toml", 'experiment = "memnet.latency_load"\ntopology = "dragonfly"\nrouting = "dor"\n')
    one_line_error(veil_cli("run", "dor.toml"), "routing: 'dor' does not fit topology 'dragonfly'")
    write(tmp_path / "vcs.toml", 'experiment = "memnet.latency_load"\nnum_vcs = 0\n')
    one_line_error(veil_cli("run", "vcs.toml"), "num_vcs")
    write(tmp_path / "df.toml", 'experiment = "memnet.latency_load"\ntopology = "dragonfly"\nrouting = "min"\n'
                                'a = 4\nh = 2\ng = 12\n')
    one_line_error(veil_cli("run", "df.toml"), "dragonfly", "cannot be built")
    write(tmp_path / "bad.adj", "0: 1\n1 0\n")
    write(tmp_path / "file.toml", 'experiment = "memnet.latency_load"\ntopology = "file"\nrouting = "min"\n'
                                  'topology_file = "bad.adj"\n')
    one_line_error(veil_cli("run", "file.toml"), "topology file line 2")


def test_cli_run_and_sweep_over_load(veil_cli, tmp_path):
    write(tmp_path / "ring.adj", "terminals 2\n0: 1 2\n1: 2 0\n2: 0 1@3\n")
    write(tmp_path / "ring.toml", 'experiment = "memnet.latency_load"\ntopology = "file"\nrouting = "min"\n'
                                  'topology_file = "ring.adj"\nrate = 0.1\nmode = "fixed"\nmeasure_cycles = 3000\n')
    r = veil_cli("run", "ring.toml", "--json", "out.json")
    assert r.rc == 0, r.err
    rec = json.loads((tmp_path / "out.json").read_text())
    assert rec["result"]["conservation_ok"] is True
    write(tmp_path / "sweep.toml", 'experiment = "memnet.latency_load"\n[base]\nmode = "fixed"\n'
                                   'measure_cycles = 3000\n[grid]\nrate = [0.1, 0.3]\n')
    r = veil_cli("sweep", "sweep.toml")
    assert r.rc == 0, r.err
    assert "2 computed" in r.out and "0 failed" in r.out


def test_compare_metrics():
    ref = [
        {"offered_flits_per_node_cycle": 0.1, "avg_packet_latency": 10.0, "accepted_flits_per_node_cycle": 0.1,
         "saturated": 0.0},
        {"offered_flits_per_node_cycle": 0.2, "avg_packet_latency": 20.0, "accepted_flits_per_node_cycle": 0.2,
         "saturated": 0.0},
        {"offered_flits_per_node_cycle": 0.3, "avg_packet_latency": None, "accepted_flits_per_node_cycle": 0.25,
         "saturated": 1.0},
    ]
    veil = {
        0.1: {"saturated": False, "avg_packet_latency": 10.2, "accepted_flits_per_node_cycle": 0.1},
        0.2: {"saturated": False, "avg_packet_latency": 19.0, "accepted_flits_per_node_cycle": 0.2},
        0.3: {"saturated": True, "avg_packet_latency": 900.0, "accepted_flits_per_node_cycle": 0.24},
    }
    m = compare(ref, veil)
    assert m["max_latency_error"] == pytest.approx(0.05)
    assert m["worst_rate"] == 0.2
    assert m["saturation_error"] == pytest.approx(0.04)
    veil[0.2]["saturated"] = True
    assert compare(ref, veil)["max_latency_error"] == float("inf")


def _bench_module():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "benches" / "memnet.py"
    spec = importlib.util.spec_from_file_location("memnet_bench_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_workloads_are_the_issue_s():
    mod = _bench_module()
    m = mod.mesh_config()
    assert m["topology"] == {"kind": "mesh", "k": 8, "n": 2, "latency": 1, "flit_cycles": 1}
    assert m["traffic"]["rate"] == 0.25 and m["traffic"]["packet_size"] == 4
    assert m["sim"]["warmup_cycles"] + m["sim"]["measure_cycles"] == 60_000
    d = mod.dragonfly1056_config()
    t = d["topology"]
    assert (t["p"], t["a"], t["h"]) == (4, 8, 4) and d["traffic"]["rate"] == 0.45
    engine.check(d)


def test_bench_reports_cpu_efficiency_beside_wall_and_kills_its_hog():
    from veil.core.bench import BenchContext

    mod = _bench_module()
    lines = []
    ctx = BenchContext("memnet", log=lines.append)

    def tiny(threads):
        # 144 routers: above the size where routers step on the pool.
        cfg = mod._fixed(engine.booksim_preset("mesh8x8", 0.25), warmup=200, measure=800)
        cfg["topology"]["k"] = 12
        cfg["threads"] = threads
        return cfg

    with mod.cpu_hog() as hog:
        assert hog.poll() is None
        one, used, cpu1, _, cpun, _ = mod.thread_efficiency(ctx, tiny, "tiny", 2)
    assert hog.poll() is not None, "the CPU hog outlived the bench"
    assert used == 2 and one["cycles_simulated"] >= 1000
    assert ctx.results["memnet/tiny_cpu_efficiency_2_threads"] == pytest.approx(cpun / cpu1)
    text = "\n".join(lines)
    assert "memnet/tiny_wall_2_threads" in text and "1 thread:" in text
    assert "memnet/tiny_cpu_efficiency_2_threads" in text and "target: <= 1.2" in text
    assert "results identical" in text and "load average" in text

def test_cli_latency_load_figure(veil_cli, tmp_path):
    write(tmp_path / "m.toml", 'experiment = "memnet.latency_load"\nk = 4\nmode = "fixed"\nmeasure_cycles = 2000\n')
    r = veil_cli("memnet", "latency-load", "m.toml", "seed=2", "--rates", "0.1,0.9", "--out", "fig/ll.png")
    assert r.rc == 0, r.err
    assert "saturated" in r.out and (tmp_path / "fig" / "ll.png").stat().st_size > 1000
    one_line_error(veil_cli("memnet", "latency-load", "m.toml", "--rates", "x"), "--rates")


@pytest.mark.parametrize("extra", [
    # 144 and 136 routers: above the size where routers step on threads.
    {"k": 12, "rng": "booksim", "rate": 0.3},
    {"topology": "dragonfly", "p": 2, "a": 8, "h": 2, "routing": "min", "num_vcs": 2, "rate": 0.4,
     "internal_speedup": 2.0, "rng": "booksim"},
])
def test_results_identical_for_one_and_two_threads(extra):
    one, _ = compute("memnet.latency_load", {**FAST, **extra, "threads": 1})
    two, _ = compute("memnet.latency_load", {**FAST, **extra, "threads": 2})
    assert (one.pop("threads"), two.pop("threads")) == (1, 2)
    one.pop("wall_seconds")
    two.pop("wall_seconds")
    assert one == two
    assert one["packets_measured"] > 1000


def test_small_network_steps_on_one_thread():
    r, _ = compute("memnet.latency_load", {**FAST, "threads": 2})
    assert r["threads"] == 1  # 64 routers: below the parallel threshold


@pytest.mark.parametrize("threads", [0, 1025, -1])
def test_bad_thread_count_one_line_exit_2(veil_cli, tmp_path, threads):
    write(tmp_path / "t.toml", f'experiment = "memnet.latency_load"\nthreads = {threads}\n')
    one_line_error(veil_cli("run", "t.toml"), "threads")


def test_sweep_shares_cores_between_points():
    from veil.core.sweep import cores, share_threads

    payload = [(i, {"threads": None}) for i in range(8)] + [(8, {"threads": 3}), (9, {})]
    share_threads(payload, jobs=64)
    assert [c.get("threads") for _, c in payload] == [1] * 8 + [3, None]
    two = [(0, {"threads": None}), (1, {"threads": None})]
    share_threads(two, jobs=2)
    assert two[0][1]["threads"] == max(1, cores() // 2)
