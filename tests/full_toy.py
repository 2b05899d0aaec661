"""A toy system shaped like a real `--full` reproduction: a single point, then two sweeps of
points (the second depends on the first's results), each through ctx.run_many, so a Dask cluster
gets batches as it does from memnet or enclave. FAIL names points that fail once (an interrupted
run); `unregister()` takes the toy out again."""

from pydantic import Field

from veil.core import ExperimentConfig, Row, Shape, register_experiment, register_reproducer
from veil.core.registry import REGISTRY

FAIL: set[int] = set()


class FullToyConfig(ExperimentConfig):
    n: int = Field(1, ge=0, description="point number")
    scale: float = Field(1.0, description="multiplier")


@register_experiment("fulltoy.point", FullToyConfig, results={"y": ("", "a seeded function of n and scale")})
def point(cfg: FullToyConfig) -> dict:
    if cfg.n in FAIL:
        FAIL.discard(cfg.n)
        raise RuntimeError(f"point {cfg.n} interrupted")
    import random

    rng = random.Random(cfg.seed * 1000 + cfg.n)
    return {"y": cfg.scale * (cfg.n + sum(rng.random() for _ in range(1000)))}


@register_reproducer("fulltoy", title="fulltoy: batches of points", order=98)
def reproduce(ctx) -> None:
    base = ctx.run("fulltoy.point", {"n": 0})["y"]
    count = 24 if ctx.full else 4
    first = ctx.run_many("fulltoy.point", {}, [{"n": n} for n in range(1, count + 1)])
    second = ctx.run_many("fulltoy.point", {"scale": 2.0}, [{"n": n} for n in range(1, count + 1)])
    total = sum(r["y"] for r in first) + base
    fig, ax = ctx.subplots()
    ax.plot([r["y"] for r in first], [r["y"] for r in second])
    ctx.figure(fig, "fig", rows=[Row("sum", total, shape=Shape(">", 0), source="toy claim", key="fulltoy/fig/sum"),
                                 Row("ratio", second[0]["y"] / first[0]["y"], ref=2.0, tol=1e-9, source="toy",
                                     tol_source="exact", key="fulltoy/fig/ratio")])


def unregister() -> None:
    REGISTRY.reproducers.pop("fulltoy", None)
    REGISTRY.experiments.pop("fulltoy.point", None)
