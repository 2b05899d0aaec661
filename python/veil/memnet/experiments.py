"""Registry entries: component names and the `memnet.latency_load` experiment."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from veil.core import (ComponentName, ConfigError, ExperimentConfig, InputFile, register_component,
                       register_experiment)

from . import engine

for _kind, _name, _doc in engine.components():
    if _kind != "injection":  # memsys.py registers them with their [secure] parameters
        register_component(f"memnet.{_kind}", _name, doc=_doc)


PRESETS = {
    # BookSim2's iq router timing and run control on the 8x8 mesh of the reference curve, drawing
    # BookSim2's random numbers: a run equals BookSim2's run with the same seed. Every other
    # setting of the preset is already the default.
    "booksim_compat": {"rng": "booksim"},
}


class LatencyLoadConfig(ExperimentConfig):
    """One simulation at one offered load. The defaults are BookSim2's iq router timing and run
    control on the 8x8 mesh of the reference curve; `preset = "booksim_compat"` also draws
    BookSim2's random numbers. Keys set beside a preset win over it."""

    preset: Literal["", "booksim_compat"] = Field(
        "", description="named settings applied under the keys given: booksim_compat = the defaults with "
                        "rng = 'booksim' (BookSim2 draw for draw)")

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data):
        if isinstance(data, dict) and data.get("preset") in PRESETS:
            return {**PRESETS[data["preset"]], **data}
        return data

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
    noc_latency: bool = Field(False, description="flatfly: a link's latency is `latency` times the router pitches "
                                                 "it spans on the k x k grid (BookSim2's use_noc_latency)")
    topology_file: InputFile = Field("", description="file topology: path of the adjacency list (relative to "
                                                    "the config file's folder)")
    latency: int = Field(1, ge=1, description="link latency in cycles: every mesh and torus link, wrap-around "
                                              "links included (default 1; BookSim2's torus uses 2: set latency = 2 "
                                              "to compare); flatfly: per pitch with noc_latency; dragonfly: local")
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
    rate: float = Field(0.1, ge=0.0, le=1.0, description="offered load, flits/node/cycle (bernoulli; a node "
                                                         "injects at most one flit a cycle)")
    packet_size: int = Field(4, ge=1, le=4096, description="packet length in flits (requests)")
    include_self: bool = Field(True, description="uniform: a node may send to itself (BookSim does)")
    hotspots: list[Annotated[int, Field(ge=0)]] = Field([0], description="hotspot: hot nodes")
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
    threads: int | None = Field(
        None, ge=1, le=1024,
        description="threads one simulation steps its routers on (default: every core; a sweep running "
                    "several points at once gives each point its share). Results do not depend on it; "
                    "networks under 128 routers and routing_delay > 0 step on one thread")


def to_sim_config(cfg: LatencyLoadConfig) -> dict:
    """The Rust `SimConfig` for an experiment config."""
    topo: dict
    if cfg.topology == "mesh" or cfg.topology == "torus":
        topo = {"kind": cfg.topology, "k": cfg.k, "n": cfg.n, "latency": cfg.latency,
                "flit_cycles": cfg.flit_cycles}
    elif cfg.topology == "flatfly":
        topo = {"kind": "flatfly", "k": cfg.k, "c": cfg.c, "latency": cfg.latency,
                "flit_cycles": cfg.flit_cycles, "noc_latency": cfg.noc_latency}
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
        "threads": cfg.threads,
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


RESULTS = {
    "saturated": ("", "true if latency passed latency_threshold or the network did not drain: the "
                      "latencies are then not steady-state values"),
    "offered_flits_per_node_cycle": ("flits/node/cycle", "offered load (rate)"),
    "injected_flits_per_node_cycle": ("flits/node/cycle", "load the sources generated while measuring"),
    "accepted_flits_per_node_cycle": ("flits/node/cycle", "throughput: flits ejected per node per cycle"),
    "avg_packet_latency": ("cycles", "mean packet latency, creation to tail ejection (source queueing included)"),
    "avg_network_latency": ("cycles", "mean latency from head injection to tail ejection"),
    "p50_packet_latency": ("cycles", "median packet latency"),
    "p99_packet_latency": ("cycles", "99th-percentile packet latency"),
    "max_packet_latency": ("cycles", "largest packet latency"),
    "avg_hops": ("router hops", "mean hops per measured packet"),
    "packets_measured": ("packets", "packets whose latency was recorded"),
    "packets_delivered": ("packets", "every packet delivered, warm-up and drain included"),
    "latency_histogram": ("cycles: packets", "latency histogram (histogram = true)"),
    "*_channels_count": ("channels", "channels of that kind (injection, ejection, network, global)"),
    "*_channels_mean": ("flits/cycle", "mean utilisation of channels of that kind"),
    "*_channels_max": ("flits/cycle", "utilisation of the busiest channel of that kind"),
    "channels": ("flits/cycle", "every channel's utilisation (channel_detail = true)"),
    "batch_cycles": ("cycles", "batch injection: cycles until the last packet arrived (else null)"),
    "cycles_simulated": ("cycles", "simulated cycles, warm-up and drain included"),
    "wall_seconds": ("s", "wall time of the simulation on this machine"),
    "threads": ("", "threads the routers stepped on (the other results do not depend on it)"),
    "conservation_ok": ("", "every packet, flit and credit created was delivered or returned"),
    "nodes": ("terminals", "terminals (traffic sources and sinks)"),
    "routers": ("routers", "routers in the topology"),
    "link_latency_min": ("cycles", "shortest router-to-router link latency used (not for file topologies)"),
    "link_latency_max": ("cycles", "longest router-to-router link latency used (not for file topologies)"),
}


# A lower bound on the simulator's cost per router-cycle, 20x below the fastest measured (docs/memnet.md,
# "Cost estimate"): a network and run length whose router-cycles alone would take more than a day
# (k = 1024 in 3 dimensions) is refused unless --force.
ROUTER_CYCLE_S_LOWER = 2e-8


def latency_load_cost(cfg: LatencyLoadConfig) -> tuple[float, str]:
    routers = {"mesh": cfg.k ** cfg.n, "torus": cfg.k ** cfg.n, "flatfly": cfg.k * cfg.k,
               "dragonfly": cfg.a * (cfg.g if cfg.g is not None else cfg.a * cfg.h + 1)}.get(cfg.topology, 0)
    # booksim mode runs its warm-up periods and at least one sample period; fixed mode both phases
    cycles = (cfg.warmup_cycles + cfg.measure_cycles if cfg.mode == "fixed"
              else cfg.sample_period * (cfg.warmup_periods + 1))
    return routers * cycles * ROUTER_CYCLE_S_LOWER, (f"{routers:,} routers x {cycles:,} cycles at "
                                                     f"{ROUTER_CYCLE_S_LOWER * 1e9:g} ns each, below the fastest measured")


@register_experiment("memnet.latency_load", LatencyLoadConfig, results=RESULTS, headline="avg_packet_latency",
                     cost=latency_load_cost,
                     doc="one memnet simulation at one offered load: latency, throughput, hops, "
                         "channel utilisation, saturation")
def latency_load(cfg: LatencyLoadConfig) -> dict:
    result = _flatten(run_sim(to_sim_config(cfg)))
    result.update(link_latencies(cfg))
    notes = not_honoured(cfg)
    if result.get("saturated"):
        notes.append(f"saturated at offered load {cfg.rate:g} flits/node/cycle: the run was stopped early and "
                     f"its latencies are not steady-state values")
    if notes:
        result["warnings"] = notes
    return result


def link_latencies(cfg: LatencyLoadConfig) -> dict:
    """The router-to-router link latencies the run used (shortest, longest), so that a default is
    never a surprise (BookSim2's torus and flatfly can take longer links with use_noc_latency)."""
    if cfg.topology in ("mesh", "torus"):
        lo = hi = cfg.latency
    elif cfg.topology == "flatfly":
        lo, hi = cfg.latency, cfg.latency * ((cfg.k - 1) if cfg.noc_latency else 1)
    elif cfg.topology == "dragonfly":
        lo, hi = min(cfg.latency, cfg.global_latency), max(cfg.latency, cfg.global_latency)
    else:
        return {}  # a file topology gives its latencies link by link
    return {"link_latency_min": lo, "link_latency_max": hi}


def not_honoured(cfg: LatencyLoadConfig) -> list[str]:
    """Settings the simulator accepts but cannot apply as asked (reported, never silent)."""
    if cfg.rng != "booksim":
        return []
    why = []
    if cfg.traffic in ("hotspot", "randperm") or (cfg.traffic == "uniform" and not cfg.include_self):
        why.append(f"traffic '{cfg.traffic}'" + ("" if cfg.include_self else " without include_self")
                   + " draws destinations from per-node streams")
    if cfg.routing == "valiant":
        why.append("Valiant routing's intermediate choices")
    if cfg.injection == "batch":
        why.append("batch injection")
    if cfg.request_reply:
        why.append("request-reply traffic")
    if not why:
        return []
    return [f"rng='booksim' is not honoured in full for {'; '.join(why)}: the run is not BookSim2's run "
            f"draw for draw"]
