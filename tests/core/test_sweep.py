import pytest

from conftest import write
from veil.core.errors import ConfigError
from veil.core.store import ResultStore
from veil.core.sweep import expand, load_spec, run_sweep

SWEEP = """experiment = "crypto.pad_randomness"
[base]
nbytes = 4096
[grid]
seed = [1, 2, 3]
[zip]
key_bits = [128, 256]
counter = [0, 7]
"""


def test_expand_crosses_grid_with_zip():
    pts = expand({"a": [1, 2], "b": [3, 4, 5]}, {"x": [0, 1], "y": [9, 8]}, "s")
    assert len(pts) == 12
    assert {"a": 2, "b": 5, "x": 1, "y": 8} in pts
    assert {"a": 2, "b": 5, "x": 1, "y": 9} not in pts  # zip pairs, never crosses
    with pytest.raises(ConfigError, match="equal lengths"):
        expand({}, {"x": [1], "y": [1, 2]}, "s")
    with pytest.raises(ConfigError, match="grid.a: expected a non-empty list"):
        expand({"a": 3}, {}, "s")


def test_bad_point_fails_before_any_work(tmp_path):
    write(tmp_path / "s.toml", SWEEP.replace("seed = [1, 2, 3]", "nbytes = [4096, 5]"))
    with pytest.raises(ConfigError, match=r"point 2 \(nbytes=5, key_bits=128, counter=0\): nbytes"):
        load_spec(tmp_path / "s.toml")


def test_sweep_twice_computes_nothing_the_second_time(veil_cli, tmp_path):
    write(tmp_path / "s.toml", SWEEP)
    first = veil_cli("sweep", "s.toml", "--jobs", "2")
    assert first.rc == 0, first.err
    assert "6 points: 6 computed, 0 cached (skipped), 0 failed" in first.out
    second = veil_cli("sweep", "s.toml", "--jobs", "2")
    assert second.rc == 0
    assert "6 points: 0 computed, 6 cached (skipped), 0 failed" in second.out
    forced = veil_cli("sweep", "s.toml", "--jobs", "1", "--force")
    assert "6 points: 6 computed, 0 cached" in forced.out


def test_dask_cluster_gives_same_results_as_local_pool(tmp_path):
    from distributed import Client, LocalCluster

    write(tmp_path / "s.toml", SWEEP)
    spec = load_spec(tmp_path / "s.toml")
    with ResultStore(tmp_path / "a.sqlite") as store:
        local = run_sweep(spec, store, jobs=2, progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with ResultStore(tmp_path / "b.sqlite") as store:
            remote = run_sweep(spec, store, scheduler=cluster.scheduler_address, progress=False)
        with Client(cluster) as client:  # an already-connected client is accepted too
            again = run_sweep(spec, None, scheduler=client, progress=False)
    assert local.computed == remote.computed == again.computed == 6
    assert [r.result for r in local.records] == [r.result for r in remote.records] == [r.result for r in again.records]
    assert [r.config_hash for r in local.records] == [r.config_hash for r in remote.records]


def test_unreachable_scheduler_is_config_error(veil_cli, tmp_path):
    write(tmp_path / "s.toml", SWEEP)
    r = veil_cli("sweep", "s.toml", "--scheduler", "tcp://127.0.0.1:9", timeout=120)
    assert r.rc == 2 and "cannot connect" in r.err and len(r.err.strip().splitlines()) == 1
