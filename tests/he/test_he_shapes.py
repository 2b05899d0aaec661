"""he's shape rows test the model: Fig. 13's ordering and TACO's design-space size hold, and the
same checks fail once the predicates are negated."""

from veil.core.report import ReproduceContext, Section
from veil.core.rows import inverted_shapes
from veil.core.store import ResultStore
from veil.he import reproduce as he_reproduce


def _verdicts(section: Section) -> dict[str, str]:
    return {r.key: r.outcome for r in section.rows if r.shape is not None}


def test_fig13_shape_holds_and_inverted_fails(tmp_path):
    with ResultStore(tmp_path / "store.sqlite") as store:
        sec = Section("he", "test")
        he_reproduce._fig13(ReproduceContext(sec, tmp_path / "out", store, quick=True, jobs=1))
        got = _verdicts(sec)
        assert got and set(got.values()) == {"holds"}, got
        with inverted_shapes():
            again = Section("he", "test")
            he_reproduce._fig13(ReproduceContext(again, tmp_path / "out2", store, quick=True, jobs=1))
            assert again.computed == 0
            assert set(_verdicts(again).values()) == {"fails"}
