"""A toy system for `veil explain`'s known-answer tests: one experiment whose value is linear in
two assumptions, y = 100 x + 5 z, and a reproducer with rows on it. Imported by the tests (and
by the pool's workers, which import a reproducer's module); `unregister()` takes it out again."""

from pydantic import Field

from veil.core import ExperimentConfig, Row, Shape, register_assumption, register_experiment, register_reproducer
from veil.core.provenance import PROVENANCE
from veil.core.registry import REGISTRY

CALLS = []


class ToyConfig(ExperimentConfig):
    x: float = Field(1.0, description="slope input")
    z: float = Field(0.0, description="offset input")
    level: str = Field("a", description="a named alternative")


@register_experiment("toy.linear", ToyConfig, results={"y": ("", "100 x + 5 z"), "c": ("", "a constant")})
def linear(cfg: ToyConfig) -> dict:
    CALLS.append(cfg.model_dump())
    return {"y": 100 * cfg.x + 5 * cfg.z + (30 if cfg.level == "b" else 0), "c": 31340}


register_assumption("toy", "x", value=1.0, lo=0.5, hi=2.0, source="toy datasheet", knobs=["toy.linear.x"],
                    applies=["toy/fig/*"])
register_assumption("toy", "z", value=0.0, lo=-1.0, hi=1.0, source="toy paper's text", knobs=["toy.linear.z"],
                    applies=["toy/fig/*"])
register_assumption("toy", "level", value="a", levels=("a", "b"), source="toy ablation",
                    knobs=["toy.linear.level"], applies=["toy/fig/y_b"])


@register_reproducer("toy", title="toy: linear rows", order=99)
def reproduce(ctx) -> None:
    r = ctx.run("toy.linear", {})
    fig, ax = ctx.subplots()
    ax.plot([0, 1], [r["y"], r["y"]])
    ctx.figure(fig, "fig", rows=[
        # within 110 +- 20% = [88, 132]: x in [0.88, 1.32] at z = 0
        Row("y", r["y"], ref=110.0, source="toy reference", tol=0.2, tol_source="toy band", key="toy/fig/y"),
        Row("y shape", r["y"], shape=Shape(">=", 90), source="toy claim", key="toy/fig/y_shape"),
        Row("y b", r["y"], shape=Shape("<", 120), source="toy claim", key="toy/fig/y_b"),
        # outside at the nominal and at both ends of x's range; within only for x in [1.35, 1.65]
        Row("y window", r["y"], ref=150.0, source="toy reference", tol=0.1, tol_source="toy band",
            key="toy/fig/y_window"),
        Row("fixed count", r["c"], shape=Shape(">=", 31340), source="toy claim", key="toy/other/fixed"),
    ])


def unregister() -> None:
    REGISTRY.reproducers.pop("toy", None)
    REGISTRY.experiments.pop("toy.linear", None)
    for n in ("toy.x", "toy.z", "toy.level"):
        PROVENANCE.assumptions.pop(n, None)
