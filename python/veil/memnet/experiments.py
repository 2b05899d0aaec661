"""Registry entries: component names and the `memnet.latency_load` experiment."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veil.core import (ComponentName, ConfigError, ExperimentConfig, InputFile, register_component,
                       register_experiment)

from . import engine

for _kind, _name, _doc in engine.components():
    register_component(f"memnet.{_kind}", _name, doc=_doc)


class LatencyLoadConfig(ExperimentConfig):
    """One simulation at one offered load. Defaults are the `booksim_compat` preset: BookSim2's
    iq router timing and run control, on the 8x8 mesh of the reference curve."""

    # topology
    topology: ComponentName("memnet.topology") = Field(
        "mesh", description="network: mesh, torus, flatfly, dragonfly or file")
    k: int = Field(8, ge=2, le=1024, description="mesh/torus: routers per dimension; flatfly: routers per row")
    n: int = Field(2, ge=1, le=8, description="mesh/torus: dimensions")
    c: int = Field(1, ge=1, le=256, description="flatfly: terminals per router")
    p: int = Field(2, ge=1, le=64, description="dragonfly: terminals per router")
    a: int = Field(4, ge=1, le=256, description="dragonfly: routers per group")
    h: int = Field(2, ge=1, le=64, description="dragonfly: global links per router")
    g: int | None = Field(None, ge=2, description="dragonfly: groups (default a*h+1, balanced)")
    topology_file: InputFile = Field("", description="file topology: path of the adjacency list (relative to "
                                                    "the config file's folder)")
    latency: int = Field(1, ge=1, description="link latency in cycles (dragonfly: local links)")
    global_latency: int = Field(1, ge=1, description="dragonfly: global link latency in cycles")
    flit_cycles: int = Field(1, ge=1, description="cycles a flit occupies a link (1 = full width; dragonfly: local)")
    global_flit_cycles: int = Field(1, ge=1, description="dragonfly: cycles a flit occupies a global link")
    # routing and router
    routing: ComponentName("memnet.routing") = Field("dor", description="routing function")
    num_vcs: int = Field(4, ge=1, le=64, description="virtual channels per port")
    vc_buf_size: int = Field(8, ge=1, le=65535, description="flit buffers per VC")
    routing_delay: int = Field(0, ge=0, description="route computation cycles (0 = lookahead routing)")
    vc_alloc_delay: int = Field(1, ge=1, description="VC allocation cycles")
    sw_alloc_delay: int = Field(1, ge=1, description="switch allocation cycles")
    st_delay: int = Field(1, ge=1, description="switch traversal cycles")
    credit_delay: int = Field(2, ge=0, description="cycles before a received credit can be used")
    internal_speedup: float = Field(1.0, ge=1.0, le=16.0, description="router internal steps per cycle")
    wait_for_tail_credit: bool = Field(False, description="free an output VC only when its tail credit returns")
    terminal_latency: int = Field(1, ge=1, description="injection/ejection channel latency")
    vc_classes: bool = Field(True, description="use the routing function's deadlock-avoidance VC classes")
    # traffic
    traffic: ComponentName("memnet.traffic") = Field("uniform", description="destination pattern")
    injection: Literal["bernoulli", "batch"] = Field("bernoulli", description="injection process")
    rate: float = Field(0.1, ge=0.0, description="offered load, flits/node/cycle (bernoulli)")
    packet_size: int = Field(4, ge=1, le=4096, description="packet length in flits (requests)")
    include_self: bool = Field(True, description="uniform: a node may send to itself (BookSim does)")
    hotspots: list[int] = Field([0], description="hotspot: hot nodes")
    hotspot_fraction: float = Field(0.2, ge=0.0, le=1.0, description="hotspot: fraction of packets to hot nodes")
    shift: int = Field(1, ge=0, description="shift: destination = source + shift (mod N)")
    request_reply: bool = Field(False, description="each request is answered by a reply (two message classes)")
    reply_size: int = Field(4, ge=1, le=4096, description="request-reply: reply length in flits")
    batch_size: int = Field(100, ge=1, description="batch: packets per node")
    max_outstanding: int = Field(0, ge=0, description="batch/request-reply: outstanding requests per node (0 = unlimited)")
    # run control
    mode: Literal["booksim", "fixed"] = Field(
        "booksim", description="booksim: BookSim2 sample periods and convergence; fixed: warmup then measure")
    sample_period: int = Field(10000, ge=1, description="booksim mode: cycles per sample period")
    warmup_periods: int = Field(3, ge=0, description="booksim mode: warm-up periods (0 = until converged)")
    max_samples: int = Field(10, ge=1, description="booksim mode: most sample periods")
    latency_threshold: float = Field(500.0, gt=0, description="mean latency that declares saturation (cycles)")
    warmup_cycles: int = Field(10000, ge=0, description="fixed mode: warm-up cycles")
    measure_cycles: int = Field(50000, ge=1, description="fixed mode: measured cycles")
    watchdog_cycles: int = Field(20000, ge=1, description="deadlock watchdog: cycles without movement")
    max_packet_age: int = Field(0, ge=0, description="livelock watchdog: oldest packet allowed (0 = off)")
    histogram: bool = Field(False, description="include the latency histogram in the result")
    channel_detail: bool = Field(False, description="include every channel's utilisation in the result")
    rng: Literal["streams", "booksim"] = Field(
        "streams", description="random numbers: per-node streams, or BookSim2's generators in its draw order "
                               "(with the booksim settings a run equals BookSim2's run with the same seed)")


def to_sim_config(cfg: LatencyLoadConfig) -> dict:
    """The Rust `SimConfig` for an experiment config."""
    topo: dict
    if cfg.topology == "mesh" or cfg.topology == "torus":
        topo = {"kind": cfg.topology, "k": cfg.k, "n": cfg.n, "latency": cfg.latency,
                "flit_cycles": cfg.flit_cycles}
    elif cfg.topology == "flatfly":
        topo = {"kind": "flatfly", "k": cfg.k, "c": cfg.c, "latency": cfg.latency,
                "flit_cycles": cfg.flit_cycles}
    elif cfg.topology == "dragonfly":
        topo = {"kind": "dragonfly", "p": cfg.p, "a": cfg.a, "h": cfg.h, "g": cfg.g,
                "local_latency": cfg.latency, "global_latency": cfg.global_latency,
                "local_flit_cycles": cfg.flit_cycles, "global_flit_cycles": cfg.global_flit_cycles}
    else:
        if not cfg.topology_file:
            raise ConfigError("topology_file: a file topology needs a path")
        topo = {"kind": "file", "path": cfg.topology_file}
    return {
        "topology": topo,
        "routing": cfg.routing,
        "router": {
            "num_vcs": cfg.num_vcs, "vc_buf_size": cfg.vc_buf_size,
            "routing_delay": cfg.routing_delay, "vc_alloc_delay": cfg.vc_alloc_delay,
            "sw_alloc_delay": cfg.sw_alloc_delay, "st_delay": cfg.st_delay,
            "credit_delay": cfg.credit_delay, "internal_speedup": cfg.internal_speedup,
            "wait_for_tail_credit": cfg.wait_for_tail_credit, "terminal_latency": cfg.terminal_latency,
        },
        "traffic": {
            "pattern": cfg.traffic, "injection": cfg.injection, "rate": cfg.rate,
            "packet_size": cfg.packet_size, "include_self": cfg.include_self,
            "hotspots": list(cfg.hotspots), "hotspot_fraction": cfg.hotspot_fraction,
            "shift": cfg.shift, "request_reply": cfg.request_reply, "reply_size": cfg.reply_size,
            "batch_size": cfg.batch_size, "max_outstanding": cfg.max_outstanding,
        },
        "sim": {
            "mode": cfg.mode, "sample_period": cfg.sample_period, "warmup_periods": cfg.warmup_periods,
            "max_samples": cfg.max_samples, "latency_threshold": cfg.latency_threshold,
            "warmup_cycles": cfg.warmup_cycles, "measure_cycles": cfg.measure_cycles,
            "watchdog_cycles": cfg.watchdog_cycles, "max_packet_age": cfg.max_packet_age,
        },
        "seed": cfg.seed,
        "histogram": cfg.histogram,
        "channel_detail": cfg.channel_detail,
        "vc_classes": cfg.vc_classes,
        "rng": cfg.rng,
    }


def run_sim(sim_config: dict) -> dict:
    """Runs the Rust simulator; bad input becomes ConfigError, a failed run VeilError."""
    from veil.core import VeilError

    try:
        return engine.simulate(sim_config)
    except engine.MemnetConfigError as e:
        raise ConfigError(str(e)) from None
    except engine.MemnetRunError as e:
        raise VeilError(f"memnet: {e}") from None


def _flatten(r: dict) -> dict:
    out = {}
    for key, val in r.items():
        if isinstance(val, dict):
            for k2, v2 in val.items():
                out[f"{key}_{k2}"] = v2
        else:
            out[key] = val
    return out


@register_experiment("memnet.latency_load", LatencyLoadConfig,
                     doc="one memnet simulation at one offered load: latency, throughput, hops, "
                         "channel utilisation, saturation")
def latency_load(cfg: LatencyLoadConfig) -> dict:
    return _flatten(run_sim(to_sim_config(cfg)))
