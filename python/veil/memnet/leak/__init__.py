"""`veil memnet leak CONFIG`: an adversary that watches every channel of the memory network and
tries to tell two secret access patterns apart (docs/memnet.md, "The adversary").

One injection policy (the routing algorithm) runs the same program twice over with two secret
patterns A and B (e.g. uniform vs hotspot traffic, modules set A vs set B, two traces), with
`repeats` seeds each. The adversary records what the paper's adversary sees (`observe`),
cuts it into windows and asks, per feature family, whether the two patterns can be told
apart: SPATIAL (which channels, which next destinations: the paper's scope) and TEMPORAL /
VOLUME (when and how many: outside the paper's threat model). Each family has two-sample
tests and a held-out classifier; a family's verdict is "leaks" when its smallest
Holm-adjusted p-value is below `alpha`, otherwise "no leak detected at this sample size",
stated with the sample size and the smallest effect the tests would have caught.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from veil.core import ComponentName, ConfigError, ExperimentConfig, InputFile, register_experiment

from . import stats
from .observe import TEMPORAL, Observation, Windows, observe, windows

__all__ = ["Pattern", "LeakConfig", "analyse", "run", "leak", "result_keys", "LEAK_RESULTS", "QUICK",
           "Observation", "Windows", "observe", "windows", "stats"]

# The stream an algorithm claims to produce, for the permutation-stream test: ghost
# non-minimal permutes (intermediate, final) pairs, so each intermediate (the next destination
# the adversary sees) appears once per module in a block of M^2.
PERMUTES_PAIRS = {"ghost_nonminimal"}

LEAKS = "leaks"
NO_LEAK = "no leak detected at this sample size"


class Pattern(BaseModel):
    """One secret access pattern: the workload fields of `memnet.memsys` it sets (unset fields
    keep the base config's value)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    label: str = Field("", description="name shown in the report")
    workload: ComponentName("memnet.workload") | None = Field(None, description="uniform, hotspot, stream, batch or trace")
    hot_modules: list[int] | None = Field(None, description="hotspot: hot modules")
    hotspot_fraction: float | None = Field(None, ge=0, le=1, description="hotspot: fraction of misses to hot modules")
    insts_per_miss: float | None = Field(None, ge=0, description="mean instructions between misses")
    write_fraction: float | None = Field(None, ge=0, le=1, description="probability a fill is followed by a writeback")
    requests_per_cpu: int | None = Field(None, ge=1, description="records per core")
    trace: InputFile = Field("", description="workload = trace: a veil-trace file (relative to the config file)")

    def fields(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if k != "label" and v not in (None, "")}


class LeakConfig(ExperimentConfig):
    """Two secret patterns under one routing algorithm, observed on every channel."""

    base: InputFile = Field("", description="a memnet.memsys config file the runs start from (\"\" = its defaults)")
    memsys: dict[str, Any] = Field({}, description="memnet.memsys fields set over the base (e.g. requests_per_cpu)")
    algorithm: ComponentName("memnet.injection") = Field("minimal", description="routing algorithm (injection policy)")
    a: Pattern = Field(Pattern(label="uniform", workload="uniform"), description="secret pattern A")
    b: Pattern = Field(Pattern(label="hotspot", workload="hotspot", hot_modules=[0, 1, 2, 3], hotspot_fraction=0.5),
                       description="secret pattern B")
    repeats: int = Field(3, ge=1, le=64, description="runs per pattern (seeds seed + 2i for A, seed + 2i + 1 for B)")
    window: int = Field(1000, ge=10, description="window length in network cycles")
    blocks_per_run: int = Field(6, ge=1, le=64, description="contiguous blocks of windows per run the classifier is "
                                                            "cross-validated over")
    alpha: float = Field(1e-3, gt=0, lt=0.5, description="family-wise significance level of a verdict")
    max_events: int = Field(20_000_000, ge=1000, description="cap on recorded events per stream and run")

    @field_validator("memsys")
    @classmethod
    def _no_nested_experiment(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in ("experiment", "injection", "seed"):
            if k in v:
                raise ValueError(f"'{k}' is set by the leak config itself, not in memsys")
        return v


LEAK_RESULTS = {
    "algorithm": ("", "routing algorithm (injection policy) observed"),
    "pattern_a": ("", "label of secret pattern A"),
    "pattern_b": ("", "label of secret pattern B"),
    "windows_a": ("", "complete windows of pattern A over every repeat"),
    "windows_b": ("", "complete windows of pattern B"),
    "window_cycles": ("cycles", "window length"),
    "runtime_a": ("cycles", "mean runtime of pattern A's runs"),
    "runtime_b": ("cycles", "mean runtime of pattern B's runs"),
    "packets_a": ("", "packets injected in pattern A's runs (mean per run)"),
    "packets_b": ("", "packets injected in pattern B's runs (mean per run)"),
    "dummies_a": ("", "dummy packets in pattern A's runs (mean per run)"),
    "dummies_b": ("", "dummy packets in pattern B's runs (mean per run)"),
    "truncated": ("", "a run's record hit max_events (windows past the cap are dropped)"),
    "*_verdict": ("", "spatial / temporal: 'leaks' or 'no leak detected at this sample size'"),
    "*_leaks": ("", "spatial / temporal: the verdict as a flag"),
    "*_p": ("", "smallest Holm-adjusted p-value of the family's tests and classifier, or one test's adjusted p"),
    "*_accuracy": ("", "held-out accuracy of the family's classifier (chance 0.5)"),
    "*_accuracy_lo": ("", "Wilson 95% interval of that accuracy, lower end"),
    "*_accuracy_hi": ("", "upper end"),
    "*_accuracy_n": ("", "held-out windows the accuracy is measured on"),
    "*_detectable_accuracy": ("", "smallest held-out accuracy that would be significant at alpha"),
    "*_detectable_w": ("", "Cohen's w a categorical test detects with 80% power at alpha (smaller may pass unseen)"),
    "*_auc": ("", "temporal feature: probability that a window of A exceeds one of B (0.5 = alike)"),
    "*_ratio": ("", "temporal_runtime: mean runtime of B over A (Welch's t-test over runs gives its p)"),
    "permutation_stream_p": ("", "p-value that CPUs' next destinations form uniform random permutation streams"),
    "permutation_stream_blocks": ("", "complete blocks of M destinations tested"),
    "permutation_stream_bad_blocks": ("", "blocks that are not permutations of the modules"),
    "permutation_stream_verdict": ("", "'uniform permutation stream' or 'not a uniform permutation stream'"),
}


def modules_of(mc) -> int:
    """Memory modules (routers) of a memnet.memsys config's topology."""
    if mc.topology in ("mesh", "torus"):
        return mc.k ** mc.n
    if mc.topology == "flatfly":
        return mc.k * mc.k
    if mc.topology == "dragonfly":
        return mc.a * (mc.g if mc.g is not None else mc.a * mc.h + 1)
    raise ConfigError(f"topology: '{mc.topology}' is not supported for a memory network")


def _memsys_configs(cfg: LeakConfig):
    """The two patterns' memnet.memsys configs (seed left at the base's)."""
    from veil.core.config import load_config

    from ..memsys import MemSysConfig

    if cfg.base:
        exp, base = load_config(cfg.base)
        if exp != "memnet.memsys":
            raise ConfigError(f"base: {cfg.base} is a {exp} config, not memnet.memsys")
        data = base.model_dump()
    else:
        data = {}
    data.update(cfg.memsys)
    data["injection"] = cfg.algorithm
    out = []
    for name, pat in (("a", cfg.a), ("b", cfg.b)):
        try:
            mc = MemSysConfig.model_validate({**data, **pat.fields()})
        except Exception as e:  # pydantic's message names the field
            msg = str(e).splitlines()
            raise ConfigError(f"{name}: not a valid memnet.memsys pattern: {' '.join(msg[:3])}") from None
        if mc.workload == "hotspot":
            nm = modules_of(mc)
            absent = [m for m in mc.hot_modules if not 0 <= m < nm]
            if absent:
                raise ConfigError(f"{name}.hot_modules: module(s) {absent} do not exist (the network has {nm} modules, 0..{nm - 1})")
            if not mc.hot_modules:
                raise ConfigError(f"{name}.hot_modules: a hotspot pattern needs at least one hot module")
        out.append(mc)
    a, b = out
    if a.model_dump() == b.model_dump():
        raise ConfigError("a, b: the two secret patterns are identical, so there is nothing to tell apart")
    return a, b


def _groups(n: int, run: int, blocks: int) -> np.ndarray:
    return run * blocks + (np.arange(n) * blocks // max(n, 1))


def _fractions(m: np.ndarray) -> np.ndarray:
    tot = m.sum(axis=1, keepdims=True).astype(float)
    return np.divide(m, tot, out=np.zeros(m.shape, dtype=float), where=tot > 0)


def _family(tests: list[stats.TestResult], alpha: float) -> dict[str, Any]:
    adj = stats.holm([t.p for t in tests])
    out = {"tests": []}
    for t, a in zip(tests, adj):
        d = t.as_dict()
        d["p_adjusted"] = a
        out["tests"].append(d)
    out["p"] = min(adj) if adj else 1.0
    out["leaks"] = out["p"] < alpha
    out["verdict"] = LEAKS if out["leaks"] else NO_LEAK
    return out


def analyse(runs_a: list[Windows], runs_b: list[Windows], alpha: float = 1e-3, blocks_per_run: int = 6,
            nodes: int | None = None, cpu_nodes: list[int] | None = None,
            runtimes: tuple[list[float], list[float]] | None = None) -> dict[str, Any]:
    """Both families' tests, classifiers and verdicts for windows of runs of A and of B
    (block j of run i of A and of B form one cross-validation group). The temporal family's
    per-source volumes are the CPUs' (`cpu_nodes`, default every node): how much a *module*
    sends reveals how often it is accessed, which is the spatial family's business (its
    injection channel's share in the channel test)."""
    if not runs_a or not runs_b or sum(map(len, runs_a)) < 2 or sum(map(len, runs_b)) < 2:
        raise ConfigError("window: fewer than two complete windows per pattern; use a shorter window or longer runs")
    cat = lambda runs, f: np.vstack([f(w) for w in runs])  # noqa: E731
    ga = np.concatenate([_groups(len(w), i, blocks_per_run) for i, w in enumerate(runs_a)])
    gb = np.concatenate([_groups(len(w), i, blocks_per_run) for i, w in enumerate(runs_b)])
    # The classifier's folds: whole runs when there are several (see stats.classify), else blocks.
    if len(runs_a) > 1 and len(runs_b) > 1:
        fa, fb = ga // blocks_per_run, gb // blocks_per_run
    else:
        fa, fb = ga, gb
    nodes = nodes or int(round(np.sqrt(runs_a[0].pairs.shape[1])))
    # SPATIAL: proportions only (which channel, which destination given the source).
    cha, chb = cat(runs_a, lambda w: w.channels), cat(runs_b, lambda w: w.channels)
    pa, pb = cat(runs_a, lambda w: w.pairs), cat(runs_b, lambda w: w.pairs)
    used = (pa.sum(axis=0) + pb.sum(axis=0)) > 0
    strata = (np.arange(pa.shape[1]) // nodes)[used]
    spatial_tests = [
        stats.homogeneity(cha, chb, name="channels", alpha=alpha, groups_a=ga, groups_b=gb),
        stats.homogeneity(pa[:, used], pb[:, used], strata=strata, name="pairs", alpha=alpha, groups_a=ga, groups_b=gb),
    ]
    dest = lambda p: p.reshape(p.shape[0], nodes, nodes).sum(axis=1)  # noqa: E731
    xa = np.hstack([_fractions(cha), _fractions(dest(pa))])
    xb = np.hstack([_fractions(chb), _fractions(dest(pb))])
    spatial_tests.append(stats.classify(xa, xb, ga, gb, "classifier", alpha=alpha, folds_a=fa, folds_b=fb))
    # TEMPORAL / VOLUME: how many and when.
    sa = {k: np.concatenate([w.scalars[k] for w in runs_a]) for k in TEMPORAL}
    sb = {k: np.concatenate([w.scalars[k] for w in runs_b]) for k in TEMPORAL}
    temporal_tests = [stats.window_mannwhitney(sa[k], sb[k], k) for k in TEMPORAL]
    if runtimes is not None:
        temporal_tests.append(stats.runs_welch(runtimes[0], runtimes[1], "runtime"))
    cpus = np.arange(nodes) if cpu_nodes is None else np.asarray(cpu_nodes)
    ta = np.column_stack([sa[k] for k in TEMPORAL] + [cat(runs_a, lambda w: w.per_source[:, cpus])])
    tb = np.column_stack([sb[k] for k in TEMPORAL] + [cat(runs_b, lambda w: w.per_source[:, cpus])])
    temporal_tests.append(stats.classify(ta, tb, ga, gb, "classifier", alpha=alpha, folds_a=fa, folds_b=fb))
    return {"spatial": _family(spatial_tests, alpha), "temporal": _family(temporal_tests, alpha),
            "windows_a": int(len(ga)), "windows_b": int(len(gb)), "alpha": alpha}


def run(cfg: LeakConfig, progress=None) -> dict[str, Any]:
    """Runs both patterns `repeats` times and analyses them: the full report (nested)."""
    from ..memsys import to_rust_config

    ma, mb = _memsys_configs(cfg)
    runs: dict[str, list] = {"a": [], "b": []}
    obs_meta = None
    perm_src, perm_dst = [], []
    for i in range(cfg.repeats):
        for k, mc, off in (("a", ma, 0), ("b", mb, 1)):
            rc = to_rust_config(mc.model_copy(update={"seed": cfg.seed + 2 * i + off}))
            rc["observe_max_events"] = cfg.max_events
            if progress:
                progress(f"{cfg.algorithm}: pattern {k.upper()} run {i + 1}/{cfg.repeats}")
            o = observe(rc)
            w = windows(o, cfg.window)
            runs[k].append((o.result, w, o.complete_until < o.result["runtime_cycles"]))
            obs_meta = o
            # Each run's CPU streams go to the permutation test with their own source ids.
            base_id = (2 * i + off) * o.nodes
            is_cpu = np.isin(o.inj_src, o.cpu_nodes)
            perm_src.append(o.inj_src[is_cpu].astype(np.int64) + base_id)
            perm_dst.append(o.inj_dst[is_cpu].astype(np.int64))
    report = analyse([w for _, w, _ in runs["a"]], [w for _, w, _ in runs["b"]], cfg.alpha, cfg.blocks_per_run,
                     nodes=obs_meta.nodes, cpu_nodes=obs_meta.cpu_nodes,
                     runtimes=tuple([float(r["runtime_cycles"]) for r, _, _ in runs[k]] for k in ("a", "b")))
    srcs = sorted(set(np.concatenate(perm_src).tolist())) if perm_src else []
    mods = list(obs_meta.module_nodes)
    perm = stats.permutation_stream(np.concatenate(perm_src), np.concatenate(perm_dst), srcs, mods, alpha=cfg.alpha,
                                    multiplicity=len(mods) if cfg.algorithm in PERMUTES_PAIRS else 1)
    mean = lambda k, key: float(np.mean([r[key] for r, _, _ in runs[k]]))  # noqa: E731
    report.update({
        "algorithm": cfg.algorithm, "pattern_a": cfg.a.label or "A", "pattern_b": cfg.b.label or "B",
        "window_cycles": cfg.window, "repeats": cfg.repeats,
        "runtime_a": mean("a", "runtime_cycles"), "runtime_b": mean("b", "runtime_cycles"),
        "packets_a": float(np.mean([w.per_source.sum() for _, w, _ in runs["a"]])),
        "packets_b": float(np.mean([w.per_source.sum() for _, w, _ in runs["b"]])),
        "dummies_a": mean("a", "dummies"), "dummies_b": mean("b", "dummies"),
        "truncated": any(t for k in runs for _, _, t in runs[k]),
        "permutation_stream": perm.as_dict(),
    })
    return report


def flatten(report: dict[str, Any]) -> dict[str, Any]:
    """The experiment's flat result fields (LEAK_RESULTS) from a full report."""
    out = {k: report[k] for k in ("algorithm", "pattern_a", "pattern_b", "windows_a", "windows_b", "window_cycles",
                                  "runtime_a", "runtime_b", "packets_a", "packets_b", "dummies_a", "dummies_b",
                                  "truncated")}
    for fam in ("spatial", "temporal"):
        f = report[fam]
        out[f"{fam}_verdict"] = f["verdict"]
        out[f"{fam}_leaks"] = bool(f["leaks"])
        out[f"{fam}_p"] = f["p"]
        for t in f["tests"]:
            name, d = t["name"], t["detail"]
            if name == "classifier":
                out[f"{fam}_accuracy"] = t["statistic"]
                out[f"{fam}_accuracy_p"] = t["p_adjusted"]
                lo, hi = d.get("ci95", [0.0, 1.0])
                out[f"{fam}_accuracy_lo"], out[f"{fam}_accuracy_hi"] = lo, hi
                out[f"{fam}_accuracy_n"] = d.get("n", 0)
                out[f"{fam}_detectable_accuracy"] = d.get("detectable_accuracy", 1.0)
            else:
                out[f"{fam}_{name}_p"] = t["p_adjusted"]
                if "detectable_w" in d:
                    out[f"{fam}_{name}_detectable_w"] = d["detectable_w"]
                if "auc" in d:
                    out[f"{fam}_{name}_auc"] = d["auc"]
                if "ratio" in d:
                    out[f"{fam}_{name}_ratio"] = d["ratio"]
    p = report.get("permutation_stream")
    if p:
        out["permutation_stream_p"] = p["p"]
        out["permutation_stream_blocks"] = p["detail"]["blocks"]
        out["permutation_stream_bad_blocks"] = p["detail"]["non_permutation_blocks"]
        out["permutation_stream_verdict"] = p["detail"].get("verdict", "no complete block")
    return out


# The reproducer's leak run per algorithm (configs/memnet/leak_uniform_vs_hotspot.toml):
# `ctx.run_many("memnet.leak", QUICK, [{"algorithm": a} for a in algorithms])`, then
# `result_keys(result)` for each.
QUICK: dict[str, Any] = {
    "memsys": {"requests_per_cpu": 150, "encryption": "source_otp"}, "repeats": 2, "window": 500, "alpha": 1e-3,
    "a": {"label": "uniform", "workload": "uniform"},
    "b": {"label": "hotspot 0-3", "workload": "hotspot", "hot_modules": [0, 1, 2, 3], "hotspot_fraction": 0.5},
}


def result_keys(result: dict[str, Any]) -> dict[str, float]:
    """The results.json keys the reproducer publishes for one algorithm's leak run."""
    alg = result["algorithm"]
    keys = {}
    for fam in ("spatial", "temporal"):
        keys[f"memnet/leak/{alg}/{fam}_accuracy"] = float(result[f"{fam}_accuracy"])
        keys[f"memnet/leak/{alg}/{fam}_accuracy_p"] = float(result[f"{fam}_accuracy_p"])
        keys[f"memnet/leak/{alg}/{fam}_p"] = float(result[f"{fam}_p"])
    return keys


@register_experiment("memnet.leak", LeakConfig, results=LEAK_RESULTS,
                     doc="an adversary on every channel tries to tell two secret access patterns apart: "
                         "spatial and temporal verdicts, classifier accuracy with a 95% interval")
def leak(cfg: LeakConfig) -> dict[str, Any]:
    from veil.core import VeilError

    from .. import engine

    try:
        return flatten(run(cfg))
    except engine.MemnetConfigError as e:
        raise ConfigError(str(e)) from None
    except engine.MemnetRunError as e:
        raise VeilError(f"memnet: {e}") from None
