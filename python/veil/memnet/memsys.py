"""The memory-centric network experiment `memnet.memsys`: HMC-like memory modules as the
network's routers, CPUs replaying LLC-miss streams, and the ghost routing paper's packet
encryption microarchitectures. The model is the Rust `veil_memnet::memsys`; docs/memnet-memsys.md
describes it and gives every timing value's source."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import ConfigDict, Field, create_model, model_validator

from veil import _native
from veil.core import ComponentName, ConfigError, ExperimentConfig, InputFile, register_component, register_experiment
from veil.core.config import ConfigTable

from . import engine

__all__ = ["MemSysConfig", "SecureParams", "to_rust_config", "simulate", "default_config", "ghost_dummies_analytic"]


class SecureParams(ConfigTable):
    """The `[secure]` table: parameters of the secure routing algorithms (docs/memnet-memsys.md)."""

    model_config = ConfigDict(extra="forbid")

    batch: int = Field(1, ge=1, le=64, description="real messages one packet may carry to its destination (batching per "
                                                  "destination), while they and their replies fit in packet_flits")
    packet_flits: int = Field(5, ge=5, le=64, description="flits of every packet of a secure algorithm, real or dummy "
                                                         "(>= 5: a 64-byte line and its header)")
    slot_cycles: int = Field(0, ge=0, description="constant_rate: cycles between packets on an injection channel "
                                                  "(0 = back to back)")
    hot_modules: list[Annotated[int, Field(ge=0)]] = Field([], description="adaptive_ghost: modules given hot_weight slots per round "
                                                   "(public and fixed; must exist)")
    hot_weight: int = Field(4, ge=1, le=1024, description="adaptive_ghost: slots per round of each hot module")
    dwell_cycles: int = Field(0, ge=0, description="cycles a packet stays at least at each module where it may pick "
                                                   "up data (0 = leaves when nothing is due; the idle access time, "
                                                   "44 by default, hides an idle vault's access time)")
    finish_rounds: bool = Field(False, description="ghost routings: a CPU out of messages finishes its permutation "
                                                   "with dummies, so no burst ends right after a real packet")


# Each routing algorithm is a component; `veil list` shows the [secure] parameters it reads.
for _name, _doc in [(n, d) for k, n, d in engine.components() if k == "injection"]:
    _used = dict(_native.memnet.injection_params()).get(_name, [])
    _params = create_model(f"Secure_{_name}", **{f: (SecureParams.model_fields[f].annotation, SecureParams.model_fields[f])
                                                 for f in _used}) if _used else None
    register_component("memnet.injection", _name, doc=_doc, params=_params)


class MemSysConfig(ExperimentConfig):
    """One program run on a memory-centric network. Defaults: 64 modules on a dragonfly
    (8 groups of 8, one global link per router), 16 CPUs two per group, gem5's HMC timing."""

    # network
    topology: ComponentName("memnet.topology") = Field("dragonfly", description="mesh, torus, flatfly or dragonfly; every router is a memory module")
    k: int = Field(8, ge=2, le=1024, description="mesh/torus: routers per dimension; flatfly: routers per row")
    n: int = Field(2, ge=1, le=8, description="mesh/torus: dimensions")
    c: int = Field(2, ge=1, le=256, description="flatfly: terminals per router (one is the module's)")
    p: int = Field(2, ge=1, le=64, description="dragonfly: terminals per router (one is the module's)")
    a: int = Field(8, ge=1, le=256, description="dragonfly: routers per group")
    h: int = Field(1, ge=1, le=64, description="dragonfly: global links per router")
    g: int | None = Field(8, ge=2, description="dragonfly: groups (None = a*h+1)")
    latency: int = Field(1, ge=1, description="wire latency of router links in cycles (dragonfly: local)")
    global_latency: int = Field(1, ge=1, description="dragonfly: global wire latency in cycles")
    serdes_ns: float = Field(3.2, ge=0, description="SerDes latency of an off-chip link (both ends)")
    routing: ComponentName("memnet.routing") = Field("min", description="routing function")
    num_vcs: int = Field(6, ge=2, le=64, description="virtual channels per port (requests and replies x route classes)")
    vc_buf_size: int = Field(8, ge=1, le=65535, description="flit buffers per VC")
    # memory module
    layers: int = Field(4, ge=1, description="DRAM layers per module")
    vaults: int = Field(16, ge=1, description="vaults per module")
    banks_per_layer: int = Field(2, ge=1, description="banks per layer in a vault")
    gb: int = Field(2, ge=1, le=1 << 20, description="GiB per module")
    row_bytes: int = Field(256, ge=64, description="row buffer bytes")
    address_mapping: str = Field("RW:VL:CB:LY:CLL", description="address fields, most significant first (RW, VL, CB, LY, BK, CL, CLL)")
    page_policy: str = Field("closed", description="closed or open")
    tck_ns: float = Field(0.8, ge=0.05, le=100, description="DRAM clock period, also the network cycle")
    trp_ns: float = Field(7.7, ge=0, description="precharge")
    tccd_ns: float = Field(3.2, ge=0, description="column to column")
    trcd_ns: float = Field(10.2, ge=0, description="activate to column")
    tcl_ns: float = Field(9.9, ge=0, description="column to data")
    twr_ns: float = Field(8.0, ge=0, description="write recovery")
    tras_ns: float = Field(21.6, ge=0, description="activate to precharge")
    tburst_ns: float = Field(3.2, gt=0, description="one 32-byte burst")
    frontend_ns: float = Field(4.0, ge=0, description="vault controller front end")
    backend_ns: float = Field(4.0, ge=0, description="vault controller back end")
    # CPUs
    cpus: int = Field(16, ge=1, description="CPUs")
    placement: list[int] = Field([], description="module of each CPU (empty: spread evenly)")
    mshrs: int = Field(16, ge=1, description="outstanding misses per core")
    rob: int = Field(128, ge=1, description="reorder buffer: instructions a core runs past its oldest load miss")
    issue_width: float = Field(4.0, gt=0, description="instructions the core dispatches per cycle between misses")
    ipc: float = Field(2.0, gt=0, description="instructions per core cycle between misses")
    cpu_ghz: float = Field(2.0, ge=0.01, le=100, description="core clock")
    # workload
    workload: ComponentName("memnet.workload") = Field("uniform", description="miss stream per core")
    requests_per_cpu: int = Field(2000, ge=1, description="records (fills and writebacks) per core")
    write_fraction: float = Field(0.25, ge=0, le=1, description="probability a fill is followed by a writeback")
    insts_per_miss: float = Field(100.0, ge=0, description="mean instructions between misses")
    hot_modules: list[Annotated[int, Field(ge=0)]] = Field([0], description="hotspot: hot modules (must exist)")
    hotspot_fraction: float = Field(0.5, ge=0, le=1, description="hotspot: fraction of misses to hot modules")
    address_space: int = Field(0, ge=0, description="bytes the workload uses (0 = all capacity)")
    trace: InputFile = Field("", description="workload = trace: a veil-trace file, thread i on CPU i "
                                             "(relative to the config file's folder)")
    page_mapping: str = Field("first_touch", description="trace: first_touch (4 KiB pages get frames on first use) "
                                                         "or identity (addresses as they are)")
    # encryption
    encryption: ComponentName("memnet.encryption") = Field("none", description="packet encryption microarchitecture")
    aes_latency: int = Field(10, ge=0, description="AES latency in cycles")
    xor_cycles: int = Field(1, ge=0, description="per_hop_otp: XOR stage cycles per hop")
    otp_depth: int = Field(16, ge=0, description="OTP buffer depth D per (source, destination) pair")
    aes_blocks_per_cycle: float = Field(2.0, gt=0, description="pad generation rate per node (16-byte blocks/cycle)")
    counter_bits: int = Field(32, ge=8, le=64, description="pair counter width (saturation forces a re-key)")
    rekey_cycles: int = Field(1000, ge=0, description="cycles a re-key stalls a pair")
    functional: bool = Field(False, description="really encrypt and decrypt every packet")
    check_bits: int = Field(16, ge=1, le=16, description="bits of the encrypted destination check")
    foreign_checks: int = Field(1, ge=0, description="functional: non-destination decode attempts per packet")
    injection: ComponentName("memnet.injection") = Field("minimal", description="routing and injection algorithm "
                                                                             "(minimal is non-secure; direct is its old name)")
    secure: SecureParams = Field(default_factory=SecureParams, description="parameters of the secure routing algorithms")
    max_cycles: int = Field(0, ge=0, description="give up after this many cycles (0 = no limit)")
    threads: int | None = Field(None, ge=1, le=1024, description="threads one run uses, its own included "
                                                                  "(default: every core); results do not depend on it")

    @model_validator(mode="after")
    def _relations(self):
        modules = _modules(self)
        if modules is None:
            return self
        for key, hot in (("hot_modules", self.hot_modules if self.workload == "hotspot" else []),
                         ("secure.hot_modules", self.secure.hot_modules)):
            absent = [m for m in hot if m >= modules]
            if absent:
                raise ValueError(f"{key}: module(s) {absent} do not exist (the network has {modules} modules, "
                                 f"0..{modules - 1})")
        if self.workload == "hotspot" and not self.hot_modules:
            raise ValueError("hot_modules: the hotspot workload needs at least one hot module")
        if self.workload == "trace" and self.trace:
            _trace_records(self.trace)
        if 0 < self.address_space < 64 * modules:
            raise ValueError(f"address_space: {self.address_space} bytes is less than one 64-byte line per module "
                             f"({64 * modules} bytes for {modules} modules; 0 = all capacity)")
        return self


def _trace_records(path: str) -> int:
    from veil.core.tracefile import trace_records

    try:
        return trace_records(path)  # the whole file checked, an empty trace refused
    except ConfigError as e:
        raise ValueError(str(e)) from None


def _modules(cfg: "MemSysConfig") -> int | None:
    """Memory modules (routers) of the config's topology; None for one this model does not know."""
    if cfg.topology in ("mesh", "torus"):
        return cfg.k ** cfg.n
    if cfg.topology == "flatfly":
        return cfg.k * cfg.k
    if cfg.topology == "dragonfly":
        return cfg.a * (cfg.g if cfg.g is not None else cfg.a * cfg.h + 1)
    return None


def to_rust_config(cfg: MemSysConfig) -> dict[str, Any]:
    """The Rust `MemSysConfig` (nested) for an experiment config."""
    net = engine.default_config()
    if cfg.topology in ("mesh", "torus"):
        net["topology"] = {"kind": cfg.topology, "k": cfg.k, "n": cfg.n, "latency": cfg.latency}
    elif cfg.topology == "flatfly":
        net["topology"] = {"kind": "flatfly", "k": cfg.k, "c": cfg.c, "latency": cfg.latency}
    elif cfg.topology == "dragonfly":
        net["topology"] = {"kind": "dragonfly", "p": cfg.p, "a": cfg.a, "h": cfg.h, "g": cfg.g,
                           "local_latency": cfg.latency, "global_latency": cfg.global_latency}
    else:
        raise ConfigError(f"topology: '{cfg.topology}' is not supported for a memory network (mesh, torus, flatfly, dragonfly)")
    net["routing"] = cfg.routing
    net["router"].update(num_vcs=cfg.num_vcs, vc_buf_size=cfg.vc_buf_size)
    net["seed"] = cfg.seed
    return {
        "network": net,
        "serdes_ns": cfg.serdes_ns,
        "module": {
            "layers": cfg.layers, "vaults": cfg.vaults, "banks_per_layer": cfg.banks_per_layer,
            "gb": cfg.gb, "row_bytes": cfg.row_bytes, "address_mapping": cfg.address_mapping,
            "page_policy": cfg.page_policy, "tck_ns": cfg.tck_ns, "trp_ns": cfg.trp_ns,
            "tccd_ns": cfg.tccd_ns, "trcd_ns": cfg.trcd_ns, "tcl_ns": cfg.tcl_ns, "twr_ns": cfg.twr_ns,
            "tras_ns": cfg.tras_ns, "tburst_ns": cfg.tburst_ns, "frontend_ns": cfg.frontend_ns,
            "backend_ns": cfg.backend_ns,
        },
        "cpu": {"count": cfg.cpus, "placement": list(cfg.placement), "mshrs": cfg.mshrs, "rob": cfg.rob,
                "issue_width": cfg.issue_width, "ipc": cfg.ipc, "ghz": cfg.cpu_ghz},
        "workload": {"kind": cfg.workload, "requests_per_cpu": cfg.requests_per_cpu,
                     "write_fraction": cfg.write_fraction, "insts_per_miss": cfg.insts_per_miss,
                     "hot_modules": list(cfg.hot_modules), "hotspot_fraction": cfg.hotspot_fraction,
                     "address_space": cfg.address_space, "trace": cfg.trace,
                     "page_mapping": cfg.page_mapping},
        "encryption": {"uarch": cfg.encryption, "aes_latency": cfg.aes_latency, "xor_cycles": cfg.xor_cycles,
                       "otp_depth": cfg.otp_depth, "aes_blocks_per_cycle": cfg.aes_blocks_per_cycle,
                       "counter_bits": cfg.counter_bits, "rekey_cycles": cfg.rekey_cycles,
                       "functional": cfg.functional, "check_bits": cfg.check_bits,
                       "foreign_checks": cfg.foreign_checks},
        "injection": cfg.injection,
        "secure": cfg.secure.model_dump(),
        "max_cycles": cfg.max_cycles,
        "threads": cfg.threads,
    }


def simulate(config: dict[str, Any]) -> dict[str, Any]:
    """Runs one memory-system simulation from a Rust-shaped config dict."""
    return json.loads(engine._call(_native.memnet.simulate_memsys, json.dumps(config)))


def default_config() -> dict[str, Any]:
    return json.loads(_native.memnet.memsys_default_config())


def ghost_dummies_analytic(modules: int) -> float:
    """Expected dummies per real packet of ghost_minimal on uniform traffic with one message
    at a time per CPU (docs/memnet-memsys.md derives it; the Rust tests check the simulator against it)."""
    return engine._call(_native.memnet.ghost_dummies_analytic, modules)


MEMSYS_RESULTS = {
    "runtime_cycles": ("cycles", "network cycles (tCK, 0.8 ns by default) until every CPU finished"),
    "runtime_ns": ("ns", "the same in nanoseconds"),
    "reads": ("", "read requests sent"),
    "writes": ("", "write requests sent (writebacks)"),
    "responses": ("", "responses received (one per request)"),
    "dummies": ("", "dummy packets delivered and dropped (every leg of a dummy counts)"),
    "injection": ("", "routing and injection algorithm"),
    "real_packets": ("", "packet injections carrying real messages (every leg, CPU and module channels)"),
    "dummy_packets": ("", "packet injections carrying none (dummies and dummy replies)"),
    "extra_packets_per_request": ("", "injections beyond the non-secure baseline's one request and one reply, "
                                      "per request"),
    "dummies_per_real_packet": ("", "dummy_packets / real_packets"),
    "avg_packet_latency_ns": ("ns", "mean latency of a real message from ready to leave its node to arrival at its "
                                    "destination (waiting for a slot and detours included)"),
    "injection_utilisation": ("", "mean busy fraction of the CPU and module injection channels"),
    "cpu_injection_utilisation": ("", "mean busy fraction of the CPUs' injection channels alone (the paper's "
                                      "injection bandwidth)"),
    "network_utilisation": ("", "mean busy fraction of the router-to-router channels"),
    "avg_read_latency": ("cycles", "mean read latency, from sending the request to the response arriving"),
    "max_read_latency": ("cycles", "largest read latency"),
    "avg_network_latency": ("cycles", "mean packet latency in the network"),
    "avg_hops": ("hops", "mean router hops per packet"),
    "instructions": ("", "instructions retired by all CPUs"),
    "otp_sender_stalls": ("", "packets that waited for an OTP pad at the sender"),
    "otp_sender_stall_cycles": ("cycles", "cycles senders waited for pads"),
    "otp_receiver_waits": ("", "packets that waited for their pad at the receiver"),
    "otp_receiver_wait_cycles": ("cycles", "cycles receivers waited for pads"),
    "otp_rekeys": ("", "re-keys forced by a saturated counter"),
    "otp_pads_generated": ("", "OTP pads generated"),
    "otp_storage_bytes_*": ("B", "OTP buffer, counter and permutation storage per node (largest, CPU, module)"),
    "functional_packets": ("", "packets really encrypted and decrypted (functional mode)"),
    "functional_bytes": ("B", "payload bytes that round-tripped"),
    "functional_mismatches": ("", "payloads that did not decrypt to what was sent (must be 0)"),
    "functional_rejected_at_destination": ("", "packets refused by their own destination (must be 0)"),
    "functional_foreign_trials": ("", "header checks tried by a node that is not the destination"),
    "functional_foreign_accepts": ("", "those a wrong node accepted (false-accept rate = accepts / trials)"),
    "functional_out_of_order": ("", "packets that arrived after a later one of the same pair"),
    "dram_reads": ("", "DRAM reads"),
    "dram_writes": ("", "DRAM writes"),
    "dram_row_hits": ("", "DRAM accesses to an open row"),
    "dram_max_vault_queue": ("", "deepest vault request queue seen"),
    "pages_touched": ("", "trace pages mapped to physical frames (trace workloads)"),
    "modules": ("", "memory modules (routers)"),
    "cpus": ("", "CPUs"),
    "uarch": ("", "packet encryption microarchitecture"),
    "wall_seconds": ("s", "wall time of the simulation"),
    "cycles_per_second": ("cycles/s", "simulation speed"),
}


# A lower bound on the model's cost per record (one fill or writeback of one CPU), below the
# fastest configuration measured (docs/memnet.md, "Cost estimate"): a config whose records alone
# would take more than a day is refused unless --force.
RECORD_S_LOWER = 1e-6


def memsys_cost(cfg: MemSysConfig) -> tuple[float, str]:
    if cfg.workload == "trace":
        return 0.0, "the trace sets the records"
    records = cfg.requests_per_cpu * cfg.cpus
    return records * RECORD_S_LOWER, (f"requests_per_cpu = {cfg.requests_per_cpu} x cpus = {cfg.cpus} records "
                                      f"at {RECORD_S_LOWER * 1e6:g} us each, the model's fastest")


@register_experiment("memnet.memsys", MemSysConfig, results=MEMSYS_RESULTS, cost=memsys_cost,
                     headline="runtime_cycles",
                     doc="a program on a memory-centric network: runtime, read latency, DRAM, "
                         "OTP stalls and storage, functional encryption checks")
def memsys(cfg: MemSysConfig) -> dict:
    from veil.core import VeilError

    try:
        r = simulate(to_rust_config(cfg))
    except engine.MemnetConfigError as e:
        raise ConfigError(str(e)) from None
    except engine.MemnetRunError as e:
        raise VeilError(f"memnet: {e}") from None
    r.pop("cores", None)
    out: dict[str, Any] = {}
    for key, val in r.items():
        if isinstance(val, dict):
            for k2, v2 in val.items():
                out[f"{key}_{k2}"] = v2
        elif val is not None:
            out[key] = val
    return out
