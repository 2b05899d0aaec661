"""`veil memnet leak CONFIG`: an adversary that watches every channel of the memory network and
tries to tell two secret access patterns apart (docs/memnet-adversary.md, "The adversary").

One injection policy (the routing algorithm) runs the same program twice over with two secret
patterns A and B (e.g. uniform vs hotspot traffic, modules set A vs set B, two traces), with
`repeats` seeds each. The adversary records what the paper's adversary sees (`observe`),
cuts it up and asks, per feature family, whether the two patterns can be told apart: SPATIAL
(which channels, which next destinations: the paper's scope; in blocks cut by packet count, so
a change of rate is not read as where), TEMPORAL / VOLUME (when and how many, in cycle windows:
outside the paper's threat model) and REPLY (when each module answers). A pattern may name
several independent tracings (`traces`), one per seed pair: the exchangeable unit is then the
execution. Each family has exact sign-flip tests over seed pairs (veil.core.leak.aligned) and,
spatial and temporal, a held-out classifier that reports without voting; a family's verdict is "leaks" when its smallest
Holm-adjusted p-value is below `alpha`, otherwise "no leak of effect >= X detected", X the
smallest leak planted into these very observations that the test caught with 95% power
(veil.core.leak.power, verdict.py).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from types import SimpleNamespace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from veil.core import ComponentName, ConfigError, ExperimentConfig, InputFile, register_experiment

from veil.core.leak import aligned, power, stats
from .observe import TEMPORAL, Observation, Windows, observe, windows
from .verdict import LEAKS, NO_LEAK, analyse

__all__ = ["Pattern", "LeakConfig", "analyse", "run", "leak", "result_keys", "LEAK_RESULTS", "QUICK", "LEAKS",
           "NO_LEAK", "Observation", "Windows", "observe", "windows", "stats", "aligned", "power"]

# The stream an algorithm claims to produce, for the permutation-stream test: ghost
# non-minimal permutes (intermediate, final) pairs, so each intermediate (the next destination
# the adversary sees) appears once per module in a block of M^2.
PERMUTES_PAIRS = {"ghost_nonminimal"}


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
    traces: list[InputFile] = Field([], description="workload = trace: independent tracings of one program (each "
                                                    "its own `veil trace run`), one per seed pair: run i replays "
                                                    "tracing i, so the null holds execution-to-execution variation")

    def fields(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if k not in ("label", "traces") and v not in (None, "", [])}


class LeakConfig(ExperimentConfig):
    """Two secret patterns under one routing algorithm, observed on every channel."""

    base: InputFile = Field("", description="a memnet.memsys config file the runs start from (\"\" = its defaults)")
    memsys: dict[str, Any] = Field({}, description="memnet.memsys fields set over the base (e.g. requests_per_cpu)")
    algorithm: ComponentName("memnet.injection") = Field("minimal", description="routing algorithm (injection policy)")
    a: Pattern = Field(Pattern(label="uniform", workload="uniform"), description="secret pattern A")
    b: Pattern = Field(Pattern(label="hotspot", workload="hotspot", hot_modules=[0, 1, 2, 3], hotspot_fraction=0.5),
                       description="secret pattern B")
    repeats: int = Field(13, ge=1, le=64, description="seed pairs: run i of A (seed + 4i) is compared with run i of B "
                                                      "(seed + 4i + 2), window by window; 13 at alpha 0.001")
    window: int = Field(2000, ge=10, description="window length in network cycles")
    segments: int = Field(1, ge=1, le=64, description="phases (equal parts in program order) the aligned tests "
                                                     "keep apart")
    block: int = Field(4, ge=1, le=256, description="consecutive windows per classifier group")
    permutations: int = Field(aligned.PERMUTATIONS, ge=99, le=1_000_000, description="sign flips of the null")
    power: float = Field(0.95, gt=0.5, lt=1, description="power at which the detectable effect is measured")
    power_trials: int = Field(20, ge=5, le=1000, description="plantings per effect size when measuring power")
    plant: float | None = Field(None, description="plant a redirect of this fraction of the CPUs' packets into B's "
                                                  "observations (checking the tool; in (0, 1])")
    alpha: float = Field(1e-3, gt=0, lt=0.5, description="family-wise significance level of a verdict")
    max_events: int = Field(20_000_000, ge=1000, description="cap on recorded events per stream and run")

    @field_validator("plant")
    @classmethod
    def _plant_is_a_fraction(cls, v: float | None) -> float | None:
        if v is not None:
            power.check_effect(v)
        return v

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
    "blocks": ("", "aligned blocks of windows (sign-flip units) over every seed pair"),
    "planted": ("", "redirect planted into B's observations by the config (0 = none)"),
    "*_verdict": ("", "spatial / temporal / reply (reply timing: when each module answers): 'leaks' or "
                      "'no leak detected'"),
    "*_statement": ("", "the verdict with the smallest effect measured to be caught"),
    "*_leaks": ("", "spatial / temporal: the verdict as a flag"),
    "*_p": ("", "smallest Holm-adjusted p-value of the family's tests and classifier, or one test's adjusted p"),
    "*_detectable_effect": ("", "smallest planted effect caught with `power` (fraction of packets redirected: "
                                "spatial; added: temporal); nan = not even 1"),
    "*_detectable_power": ("", "measured power at that effect"),
    "*_accuracy": ("", "held-out accuracy of the family's classifier (chance 0.5)"),
    "*_accuracy_lo": ("", "95% interval of that accuracy (null band from relabelling whole run pairs), lower end"),
    "*_accuracy_hi": ("", "upper end"),
    "*_accuracy_n": ("", "held-out windows the accuracy is measured on"),
    "permutation_stream_p": ("", "p-value that CPUs' next destinations form uniform random permutation streams"),
    "permutation_stream_blocks": ("", "complete blocks of M destinations tested"),
    "permutation_stream_bad_blocks": ("", "blocks that are not permutations of the modules"),
    "permutation_stream_verdict": ("", "'uniform permutation stream' or 'not a uniform permutation stream'"),
}


def _memsys_configs(cfg: LeakConfig):
    """The two patterns' memnet.memsys configs (seed left at the base's; a pattern with `traces`
    names its first tracing). A trace workload gets its CPU count from the trace (one CPU per
    thread) unless the base or `memsys` sets `cpus`."""
    from veil.core.config import load_config

    from ..memsys import MemSysConfig

    cpus_set = "cpus" in cfg.memsys
    if cfg.base:
        exp, base = load_config(cfg.base)
        if exp != "memnet.memsys":
            raise ConfigError(f"base: {cfg.base} is a {exp} config, not memnet.memsys")
        data = base.model_dump()
        cpus_set = cpus_set or "cpus" in base.model_fields_set
    else:
        data = {}
    data.update(cfg.memsys)
    data["injection"] = cfg.algorithm
    out = []
    for name, pat in (("a", cfg.a), ("b", cfg.b)):
        fields = {**data, **pat.fields()}
        tracings = _tracings(name, pat, cfg.repeats, fields.get("workload"))
        if tracings:
            fields["trace"] = tracings[0]
            if not cpus_set:
                from .executions import threads

                fields["cpus"] = max(1, threads(tracings[0]))
        try:
            mc = MemSysConfig.model_validate(fields)
        except ValidationError as e:  # the first error, named by its field inside the pattern
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            text = str(err["msg"]).removeprefix("Value error, ")
            # memnet.memsys checks that hot modules exist and that a hotspot has one
            raise ConfigError(f"{name}.{loc}: {text}" if loc else f"{name}.{text}") from None
        out.append(mc)
    a, b = out
    if a.model_dump() == b.model_dump() and cfg.plant is None and cfg.a.traces == cfg.b.traces:
        raise ConfigError("a, b: the two secret patterns are identical, so there is nothing to tell apart "
                          "(set plant = FRACTION to plant a leak into B)")
    return a, b


def _tracings(name: str, pat: Pattern, repeats: int, workload: str | None) -> list[str]:
    """The tracings a pattern replays, run by run (empty: not a trace workload). One tracing of a
    program whose tracings differ (multi-threaded, traced without --replay) is refused: the
    seed-pair null would hold seed-to-seed variation only, and the adversary would read the
    difference between two executions as the secret."""
    from . import executions

    if pat.traces:
        if pat.trace:
            raise ConfigError(f"{name}.traces: set trace (one tracing) or traces (several), not both")
        if workload != "trace":
            raise ConfigError(f"{name}.traces: tracings need workload = \"trace\"")
        if len(pat.traces) < repeats:
            raise ConfigError(f"{name}.traces: {len(pat.traces)} tracing(s) for {repeats} seed pairs; each seed pair "
                              "needs its own execution (give at least `repeats` independent tracings)")
        return list(pat.traces[:repeats])
    if workload == "trace" and pat.trace:
        why = executions.varies(pat.trace)
        if why:
            raise ConfigError(f"{name}.trace: one tracing of {why}; its tracings differ from one execution to the next "
                              f"and the adversary would read that as the secret: give {name}.traces = [at least "
                              f"{repeats} independent tracings], or trace it with `veil trace run --replay`")
        return [pat.trace]
    return []


def plant_windows(w: Windows, effect: float, cpu_nodes: list[int], module_nodes: list[int], nodes: int,
                  rng: np.random.Generator) -> Windows:
    """`w` with a fraction `effect` of each CPU's packets redirected to the first quarter of the
    modules (their next destinations, in the cycle windows and in the count blocks; the channels
    they would cross are not re-routed). The reply profile is kept as it was: without it the
    REPLY family of a planted run read "not recorded" (p = 1)."""
    from .verdict import plant_cpu_pairs

    pairs = w.pairs.reshape(len(w), nodes, nodes).copy()
    targets = list(module_nodes[: max(1, len(module_nodes) // 4)])
    for c in cpu_nodes:
        pairs[:, c, :] = power.plant_redirect(pairs[:, c, :], effect, targets, rng)
    dest = None if w.dest_seq is None else plant_cpu_pairs(w.dest_seq, effect, targets, rng)
    return Windows(channels=w.channels, pairs=pairs.reshape(len(w), nodes * nodes), per_source=w.per_source,
                   scalars=w.scalars, dest_seq=dest, chan_seq=w.chan_seq, replies=w.replies)


def pair_seed(seed: int, i: int, side: int) -> int:
    """Seed of run i of pattern A (side 0) or B (side 1). Two apart, never 2k and 2k + 1: the
    network's Knuth generator (BookSim2's, kept for fidelity) clears a seed's lowest bit, so
    seeds 2k and 2k + 1 drive related streams; paired that way, 2 of 100 same-secret verdicts
    of minimal routing were flagged (uniform traffic, 4 CPUs x 60 records), where A/B splits
    that do not pair such seeds gave p 0.77-0.84 on the same runs."""
    return seed + 4 * i + 2 * side


def _jobs(n_runs: int, jobs: int | None) -> int:
    """Runs observed at once: one per core by default (each run is one serial simulation
    that holds no GIL), never more than there are runs."""
    return max(1, min(n_runs, jobs or os.cpu_count() or 1))


def run(cfg: LeakConfig, progress=None, jobs: int | None = None) -> dict[str, Any]:
    """Runs both patterns `repeats` times and analyses them: the full report (nested). The
    2 x `repeats` runs are independent simulations; `jobs` of them (default: one per core)
    run at once on threads, and their results are taken in run order, so the report does not
    depend on `jobs`."""
    from veil.core.runner import report_progress

    from ..memsys import to_rust_config

    ma, mb = _memsys_configs(cfg)
    plan = []  # (pattern key, run index, side, Rust config) in run order
    for i in range(cfg.repeats):
        for k, mc, off in (("a", ma, 0), ("b", mb, 1)):
            upd = {"seed": pair_seed(cfg.seed, i, off)}
            pat = cfg.a if k == "a" else cfg.b
            if pat.traces:  # the exchangeable unit is the execution: run i replays tracing i
                upd["trace"] = pat.traces[i]
            rc = to_rust_config(mc.model_copy(update=upd))
            rc["observe_max_events"] = cfg.max_events
            plan.append((k, i, off, rc))

    def one(job):
        k, i, off, rc = job
        if progress:
            progress(f"{cfg.algorithm}: pattern {k.upper()} run {i + 1}/{cfg.repeats}")
        o = observe(rc)
        w = windows(o, cfg.window)
        # Each run's CPU streams go to the permutation test with their own source ids.
        is_cpu = np.isin(o.inj_src, o.cpu_nodes)
        src = o.inj_src[is_cpu].astype(np.int64) + (2 * i + off) * o.nodes
        dst = o.inj_dst[is_cpu].astype(np.int64)
        meta = dict(cpu_nodes=o.cpu_nodes, module_nodes=o.module_nodes, nodes=o.nodes)
        return (o.result, w, o.complete_until < o.result["runtime_cycles"]), src, dst, meta

    runs: dict[str, list] = {"a": [], "b": []}
    perm_src, perm_dst = [], []
    done = 0
    ex = ThreadPoolExecutor(max_workers=_jobs(len(plan), jobs))
    try:
        futures = [ex.submit(one, job) for job in plan]
        for f in as_completed(futures):
            f.result()  # a failed run raises here, at once
            done += 1
            # The progress line (`veil memnet leak` on a terminal): runs done of 2 x repeats.
            report_progress(done, len(plan), "runs")
    except BaseException:
        # Ctrl-C reaches only this thread: the runs under way on the pool's threads are asked to
        # stop (they poll the process's interrupt flag), runs not yet started are dropped, and
        # the flag is cleared once every thread has returned.
        from veil import _native

        _native.interrupt_request()
        try:
            ex.shutdown(wait=True, cancel_futures=True)
        finally:
            _native.interrupt_clear()
        raise
    ex.shutdown(wait=True)
    for (k, _, _, _), f in zip(plan, futures):
        r, src, dst, meta = f.result()
        runs[k].append(r)
        perm_src.append(src)
        perm_dst.append(dst)
    obs_meta = SimpleNamespace(**meta)
    wb = [w for _, w, _ in runs["b"]]
    if cfg.plant is not None:
        rng = np.random.default_rng(cfg.seed)
        wb = [plant_windows(w, cfg.plant, obs_meta.cpu_nodes, obs_meta.module_nodes, obs_meta.nodes, rng) for w in wb]
    report = analyse([w for _, w, _ in runs["a"]], wb, nodes=obs_meta.nodes, cpu_nodes=obs_meta.cpu_nodes,
                     module_nodes=obs_meta.module_nodes, alpha=cfg.alpha, segments=cfg.segments, block=cfg.block,
                     permutations=cfg.permutations, power_target=cfg.power, power_trials=cfg.power_trials,
                     seed=cfg.seed)
    srcs = sorted(set(np.concatenate(perm_src).tolist())) if perm_src else []
    mods = list(obs_meta.module_nodes)
    perm = stats.permutation_stream(np.concatenate(perm_src), np.concatenate(perm_dst), srcs, mods, alpha=cfg.alpha,
                                    multiplicity=len(mods) if cfg.algorithm in PERMUTES_PAIRS else 1)
    mean = lambda k, key: float(np.mean([r[key] for r, _, _ in runs[k]]))  # noqa: E731
    report.update({
        "algorithm": cfg.algorithm, "pattern_a": cfg.a.label or "A", "pattern_b": cfg.b.label or "B",
        "window_cycles": cfg.window, "repeats": cfg.repeats, "planted": cfg.plant or 0.0,
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
                                  "truncated", "blocks", "planted")}
    for fam in ("spatial", "temporal", "reply"):
        f = report[fam]
        out[f"{fam}_verdict"] = f["verdict"]
        out[f"{fam}_statement"] = f["statement"]
        out[f"{fam}_leaks"] = bool(f["leaks"])
        out[f"{fam}_p"] = f["p"]
        det = f["detectable"]
        out[f"{fam}_detectable_effect"] = det["effect"] if det["effect"] is not None else float("nan")
        out[f"{fam}_detectable_power"] = det["power"]
        for t in f["tests"]:
            name, d = t["name"], t["detail"]
            if name == "classifier":
                out[f"{fam}_accuracy"] = t["statistic"]
                out[f"{fam}_accuracy_p"] = t["p_adjusted"]
                lo, hi = d.get("ci95", [0.0, 1.0])
                out[f"{fam}_accuracy_lo"], out[f"{fam}_accuracy_hi"] = lo, hi
                out[f"{fam}_accuracy_n"] = d.get("n", 0)
            else:
                out[f"{fam}_{name}_p"] = t["p_adjusted"]
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
    "memsys": {"requests_per_cpu": 60, "cpus": 4, "encryption": "source_otp"}, "repeats": 13, "window": 500,
    "alpha": 1e-3,
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
    if "reply_p" in result:
        keys[f"memnet/leak/{alg}/reply_p"] = float(result["reply_p"])
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
