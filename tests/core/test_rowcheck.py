"""Per-row falsification (veil.core.rowcheck): known answers on the toy system whose value is
y = 100 x + 5 z (+30 at level b), x in [0.5, 2], z in [-1, 1]."""

from __future__ import annotations


import pytest

from conftest import assert_shapes_falsifiable
from veil.core import Row, Shape
from veil.core import rowcheck as RC
from veil.core.store import ResultStore


@pytest.fixture
def store(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as st:
        yield st


def _declare(flips: dict, keys=("toy/fig/y_shape", "toy/fig/y_b", "toy/other/fixed"), ablations=()):
    @RC.register_row_check("toy", "y", keys, reduced="the report's sizes", flips=flips, ablations=ablations)
    def check(ctx):
        r = ctx.run("toy.linear", {})
        ctx.table("", [Row("y shape", r["y"], shape=Shape(">=", 90), source="toy claim", key="toy/fig/y_shape"),
                       Row("y b", r["y"], shape=Shape("<", 120), source="toy claim", key="toy/fig/y_b")], name="fig")
        ctx.table("", [Row("fixed count", r["c"], shape=Shape(">=", 31340), source="toy claim",
                           key="toy/other/fixed")], name="other")
    return check


def test_declared_flips_fail_and_the_evaluation_is_cached(toy, store):
    _declare({"toy/fig/y_shape": ("toy.x", 0.5), "toy/fig/y_b": ("toy.z", 1.0)})
    found = RC.falsify("toy", store)
    # y >= 90 fails at x = 0.5 (50); y < 120 holds at z = 1 (105): a declared flip that does not flip
    assert found["toy/fig/y_shape"].flipped_by == "toy.x = 0.5" and found["toy/fig/y_shape"].flipped_value == 50
    assert found["toy/fig/y_b"].flipped_by is None and found["toy/fig/y_b"].tried == ["toy.z = 1.0"]
    assert found["toy/other/fixed"].nominal == "holds" and found["toy/other/fixed"].flipped_by is None
    n = len(toy.CALLS)
    assert n == 3   # nominal, x = 0.5, z = 1
    RC.falsify("toy", store)
    assert len(toy.CALLS) == n, "a second falsify reads every evaluation back from the store"


def test_search_tries_range_ends_levels_and_ablations(toy, store):
    abl = RC.ablation("huge level", {"toy.linear.x": 400.0}, what="a slope no datasheet allows")
    _declare({}, ablations=[abl])
    found = RC.falsify("toy", store, search=True)
    assert found["toy/fig/y_shape"].flipped_by == "toy.x = 0.5"
    assert found["toy/fig/y_b"].flipped_by == "toy.x = 2.0"
    # nothing plausible moves a count fixed by construction; the ablation does not move it either
    assert found["toy/other/fixed"].flipped_by is None
    assert "ablation 'huge level' (toy.linear.x = 400.0)" in found["toy/other/fixed"].tried


def test_bad_declarations_are_refused(toy):
    with pytest.raises(ValueError, match="outside its declared range"):
        _declare({"toy/fig/y_shape": ("toy.x", 5.0)})
    with pytest.raises(ValueError, match="not a registered assumption"):
        _declare({"toy/fig/y_shape": ("toy.nope", 1.0)})
    with pytest.raises(ValueError, match="not one of its keys"):
        _declare({"toy/fig/y": ("toy.x", 0.5)}, keys=("toy/fig/y_shape",))
    with pytest.raises(ValueError, match="say what"):
        RC.register_row_check("toy", "z", ["toy/fig/y_shape"], reduced="")
    with pytest.raises(ValueError, match="say what it removes"):
        RC.ablation("x", {"toy.linear.x": 1}, what="")


def test_assert_shapes_falsifiable_names_what_cannot_fail(toy, tmp_path):
    _declare({"toy/fig/y_shape": ("toy.x", 0.5), "toy/fig/y_b": ("toy.x", 2.0)})
    with pytest.raises(AssertionError, match=r"toy/other/fixed"):
        assert_shapes_falsifiable("toy", tmp_path / "s.sqlite")
    _declare({"toy/fig/y_shape": ("toy.x", 0.5), "toy/fig/y_b": ("toy.x", 2.0)},
             keys=("toy/fig/y_shape", "toy/fig/y_b"))
    got = assert_shapes_falsifiable("toy", tmp_path / "s.sqlite")
    assert got == {"toy/fig/y_shape": "toy.x = 0.5", "toy/fig/y_b": "toy.x = 2.0"}


def test_report_rows_without_a_check_are_named(toy, tmp_path):
    from conftest import assert_shapes_covered

    _declare({"toy/fig/y_shape": ("toy.x", 0.5)}, keys=("toy/fig/y_shape",))
    refs = {"toy/fig/y_shape": {"shape": ">= 90", "verdict": "holds"},
            "toy/fig/y_b": {"shape": "< 120", "verdict": "holds"},
            "toy/fig/z": {"shape": "< 1", "verdict": "fails"},
            "toy/other/fixed": {"shape": ">= 31,340", "verdict": "self-check"},
            "toy/fig/y": {"shape": None, "verdict": "within"}}
    with pytest.raises(AssertionError, match=r"\['toy/fig/y_b'\]"):
        assert_shapes_covered("toy", refs)
    del refs["toy/fig/y_b"]
    assert_shapes_covered("toy", refs)


def test_cli_names_the_systems_with_evaluators(tmp_path):
    import subprocess
    import sys

    from conftest import CliResult, one_line_error

    p = subprocess.run([sys.executable, "-m", "veil.core.rowcheck", "nosuch", "--store", str(tmp_path / "s.sqlite")],
                       capture_output=True, text=True, timeout=120)
    one_line_error(CliResult(p.returncode, p.stdout, p.stderr), "nosuch", "enclave", "memcrypt")
