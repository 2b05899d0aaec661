"""`veil reproduce --full --scheduler`: a --full-shaped reproduction on a Dask LocalCluster gives
the serial answer, resumes from the store after an interruption, and leaves a timing.json whose
projection is the analytic one."""

import importlib
import json

import pytest

from veil.core.store import ResultStore
from veil.core.timing import makespan, projected_wall, section_timing


@pytest.fixture
def toy():
    import full_toy

    importlib.reload(full_toy)
    full_toy.FAIL.clear()
    yield full_toy
    full_toy.unregister()


def _values(out):
    refs = json.loads((out / "references.json").read_text())
    return {k: v["value"] for k, v in refs.items() if k.startswith("fulltoy/")}


def test_full_on_a_local_cluster_is_the_serial_answer_and_resumes(toy, tmp_path):
    from distributed import LocalCluster

    from veil.core.report import reproduce

    with ResultStore(tmp_path / "serial.sqlite") as st:
        (sec,), _ = reproduce(["fulltoy"], tmp_path / "serial", st, quick=False, jobs=1, log=lambda s: None)
    assert sec.error is None and sec.computed == 49
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            ResultStore(tmp_path / "dask.sqlite") as st:
        toy.FAIL.update({7, 19})  # the first run is cut short: two points of the first sweep fail
        (cut,), _ = reproduce(["fulltoy"], tmp_path / "dask", st, quick=False, jobs=1, log=lambda s: None,
                              scheduler=cluster.scheduler_address)
        assert cut.error and "interrupted" in cut.error
        assert cut.computed == 1  # the single point; the failed sweep's finished points are stored, not counted
        kept = sum(1 for _ in st.records("fulltoy.point"))
        assert kept == 1 + 22
        (again,), _ = reproduce(["fulltoy"], tmp_path / "dask", st, quick=False, jobs=1, log=lambda s: None,
                                scheduler=cluster.scheduler_address)
    assert again.error is None
    assert (again.cached, again.computed) == (23, 26)  # only what the interruption left undone
    assert _values(tmp_path / "dask") == _values(tmp_path / "serial")
    timing = json.loads((tmp_path / "dask" / "timing.json").read_text())
    entry = timing["systems"]["fulltoy"]
    assert timing["mode"] == "full"
    assert [b["points"] for b in entry["batches"]] == [1, 24, 24]
    assert entry["points"] == 49


def test_makespan_is_longest_first_list_scheduling():
    assert makespan([], 4) == 0.0
    assert makespan([5.0, 1.0], 8) == 5.0  # more workers than points: the longest point
    assert makespan([3.0, 3.0, 2.0, 2.0, 2.0], 2) == 7.0  # LPT: {3,2,2} and {3,2}; the best split is 6
    assert makespan([1.0] * 10, 1) == 10.0
    assert makespan([1.0] * 10, 3) == 4.0


def test_projection_adds_batches_and_the_sections_own_work():
    batches = [{"experiment": "e", "many": False, "point_s": [2.0]},
               {"experiment": "e", "many": True, "point_s": [1.0] * 8}]
    assert projected_wall(batches, 3.0, 1) == 3.0 + 2.0 + 8.0
    assert projected_wall(batches, 3.0, 4) == 3.0 + 2.0 + 2.0
    assert projected_wall(batches, 3.0, 128) == 3.0 + 2.0 + 1.0  # a single run never spreads
    t = section_timing("x", seconds=20.0, cpu_seconds=None, batches=batches, batch_wall_s=15.0, workers=(1, 8))
    assert t["own_s"] == 5.0 and t["point_cpu_s"] == 10.0
    assert t["projected_wall_s"] == {"1": 15.0, "8": 8.0}


def test_a_prefetched_point_is_computed_once_and_counted_once(toy, tmp_path):
    from veil.core.report import ReproduceContext
    from veil.core.section import Section

    with ResultStore(tmp_path / "s.sqlite") as st:
        sec = Section("fulltoy", "t")
        ctx = ReproduceContext(sec, tmp_path / "out", st, quick=False, jobs=1)
        ctx.prefetch("fulltoy.point", [{"n": n} for n in range(1, 7)])
        a = ctx.run_many("fulltoy.point", {}, [{"n": n} for n in range(1, 4)])
        b = ctx.run("fulltoy.point", {"n": 5})
        assert (sec.computed, sec.cached) == (6, 0)
        assert [len(x["point_s"]) for x in sec.batches] == [6, 0, 0]  # timed where computed, once
        alone = ReproduceContext(Section("fulltoy", "u"), tmp_path / "out2", None, quick=False, jobs=1)
        assert a == alone.run_many("fulltoy.point", {}, [{"n": n} for n in range(1, 4)])
        assert b == alone.run("fulltoy.point", {"n": 5})
