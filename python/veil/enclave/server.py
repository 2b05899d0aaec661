"""Experiment `enclave.server`: one run of the Server workload under one execution model.

The simulation is the Rust crate `veil-enclave` (`veil._native.enclave`); this module gives it a
validated config, registers the models and exit policies as components, and flattens the
result. Every field and its source is documented in docs/enclave-model.md.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, model_validator

from veil import _native
from veil.core import ComponentName, ConfigError, ExperimentConfig, register_components, register_experiment

MODELS = {
    "bl": "baseline: system calls run directly, no enclave, no memory encryption",
    "ex-b": "exit-based: each exiting call is an ocall (9,000 cycles) out and an ecall (9,000) back",
    "ex-l": "exitless: worker-responder threads, shared buffer in untrusted memory, responder timer",
    "sse-nhp": "SSE, no hardware penalty: responders on per-tile SSEs, L2 slice shrunk to 224 KB",
    "sse-hp": "SSE, hardware penalty: responders on per-tile SSEs, full 256 KB L2 slice",
}
POLICIES = {
    "sgx": "SGX-like (user-level enclave): every system call exits",
    "sev": "SEV-like (VM enclave): only device calls (recv, send) exit as hypercalls",
}
PLACEMENTS = {
    "server-only": "only workers and responders run on the tiles; the clients issuing the requests are off-chip",
    "wake-affine": "clients too (one per worker): an idle core if one is left, else the core that wakes them "
                   "(Linux select_idle_sibling / wake_affine); a woken client preempts a worker (CFS)",
}
register_components("enclave.placement", PLACEMENTS)
register_components("enclave.model", MODELS)
register_components("enclave.policy", POLICIES)

# The calibrated constants take their defaults from the Rust config (one source of truth; the
# values come from `python -m veil.enclave.calibrate`, docs/enclave.md lists them).
_NATIVE_DEFAULTS = json.loads(_native.enclave.defaults())
CALIBRATED = ["work_scale", "syscall_scale", "work_lines_scale", "syscall_lines_scale", "global_lines_scale",
              "kernel_state_kb", "core_mlp", "copy_mlp", "ctx_switch_kb", "responder_ws_lines"]


def _cal(name: str):
    return _NATIVE_DEFAULTS[name]


CATEGORIES = ["workload", "pack", "unpack", "syscall", "polling", "ecall", "ocall", "ctx_switch", "client"]


class ServerConfig(ExperimentConfig):
    model: ComponentName("enclave.model") = Field("bl", description="execution model")
    policy: ComponentName("enclave.policy") = Field("sgx", description="which calls exit the enclave")
    placement: ComponentName("enclave.placement") = Field(
        _cal("placement"), description="which threads run on the tiles and where (clients off or on the chip)")
    client_work_cycles: float = Field(2000.0, ge=0, description="client compute per request besides its send and two recvs "
                                      "(wake-affine placement only)")
    workers: int = Field(64, ge=1, le=65536, description="worker threads N (requests are split evenly)")
    requests: int = Field(1000, ge=1, le=10_000_000, description="total web-page requests M")
    tiles: int = Field(64, ge=1, le=4096, description="tiles on the 2D mesh (one enclave core + L2 slice each)")
    cores_per_sse: int = Field(1, ge=1, le=4096, description="enclave cores one SSE serves (SSE models)")
    sses: int = Field(0, ge=0, le=4096, description="number of SSEs; 0 = tiles / cores_per_sse")
    clock_ghz: float = Field(1.0, gt=0, le=100, description="clock for converting cycles to requests/s")
    page_bytes: int = Field(16384, ge=1, le=64 << 20, description="web page (file) size per request")
    cached_pages: bool = Field(False, description="the enclave serves every page from its own memory: no file calls "
                               "(open, fstat, lseek, read, close), only ioctl, recv and the two sends")
    http_request_bytes: int = Field(512, ge=1, le=1 << 20, description="HTTP request size received per request")
    header_bytes: int = Field(256, ge=1, le=1 << 20, description="HTTP response header size")
    ecall_cycles: float = Field(9000.0, ge=0, description="cost of one ecall (enclave entry), cycles")
    ocall_cycles: float = Field(9000.0, ge=0, description="cost of one ocall (enclave exit), cycles")
    ctx_switch_ns: float = Field(500.0, ge=0, description="direct cost of one context switch, ns")
    responder_sleep_us: float = Field(10.0, ge=0, description="responder's self-governed sleep timer, us")
    sched_quantum_us: float = Field(1000.0, gt=0, description="round-robin quantum among workers sharing a core, us")
    mem_crypto_cycles: float = Field(10.0, ge=0, description="encryption + integrity per DRAM access (not BL)")
    dram_cycles: float = Field(100.0, ge=0, description="DRAM access latency, cycles")
    mem_controllers: int = Field(0, ge=0, le=4096, description="memory controllers on the mesh, lines interleaved over "
                                 "them; 0 = one per tile serving the lines homed there (Graphite's ALL)")
    controller_gbps: float = Field(5.0, ge=0, description="bandwidth of each memory controller, GB/s (Graphite's "
                                   "per_controller_bandwidth); 0 = no controller queueing")
    flit_bytes: int = Field(8, ge=0, le=64, description="mesh link width, bytes per cycle (Graphite's 64-bit flits); "
                            "0 = no link contention (latency only)")
    l2_hit_cycles: float = Field(8.0, ge=0, description="L2 slice access latency before mesh hops")
    hop_cycles: float = Field(2.0, ge=0, description="one mesh hop, one way (X-Y routing)")
    remote_l1_cycles: float = Field(10.0, ge=0, description="extra latency when another L1 supplies or gives up a line")
    core_mlp: float = Field(_cal("core_mlp"), gt=0, description="miss overlap of the out-of-order enclave core (scattered accesses)")
    copy_mlp: float = Field(_cal("copy_mlp"), gt=0, description="miss overlap of sequential copy streams (stream prefetch)")
    sse_cpi_factor: float = Field(1.0, gt=0, description="SSE cycles per enclave-core cycle of compute")
    l1d_kb: int = Field(32, ge=1, description="enclave core L1D size, KB")
    l1d_ways: int = Field(8, ge=1, description="enclave core L1D ways")
    l2_slice_kb: int = Field(256, ge=1, description="L2 slice per tile, KB (all models but SSE-NHP)")
    l2_slice_nhp_kb: int = Field(224, ge=1, description="L2 slice per tile under SSE-NHP, KB")
    l2_ways: int = Field(8, ge=1, description="L2 ways")
    sse_l1d_kb: int = Field(1, ge=1, description="SSE private L1D size, KB")
    sse_l1d_ways: int = Field(2, ge=1, description="SSE L1D ways")
    app_ws_kb: int = Field(192, ge=1, description="worker application working set, KB")
    app_hot_kb: int = Field(16, ge=1, description="its hot part, KB")
    app_hot_fraction: float = Field(0.7, ge=0, le=1, description="share of application accesses to the hot part")
    ctx_switch_kb: int = Field(_cal("ctx_switch_kb"), ge=0, le=1024, description="scheduler data a context switch moves through the L1, KB")
    kernel_state_kb: int = Field(_cal("kernel_state_kb"), ge=1, le=1024,
                                 description="kernel state per connection the calls touch, KB (calibrated)")
    responder_ws_lines: int = Field(_cal("responder_ws_lines"), ge=1, le=16384, description="responder runtime lines touched per buffer pass")
    copy_cycles_per_line: float = Field(8.0, ge=0, description="compute per 64-byte line copied")
    work_scale: float = Field(_cal("work_scale"), ge=0, description="scales the workload compute of the step table (calibrated)")
    syscall_scale: float = Field(_cal("syscall_scale"), ge=0, description="scales the system-call compute of the step table (calibrated)")
    work_lines_scale: float = Field(_cal("work_lines_scale"), ge=0, description="scales the application lines each step touches (calibrated)")
    syscall_lines_scale: float = Field(_cal("syscall_lines_scale"), ge=0, description="scales the kernel lines each call touches (calibrated)")
    global_lines_scale: float = Field(_cal("global_lines_scale"), ge=0, description="scales the kernel-global (all-tile) lines each call touches (calibrated)")

    @model_validator(mode="after")
    def _fit(self):
        if self.sses > self.tiles:
            raise ValueError(f"sses ({self.sses}) must be <= tiles ({self.tiles}): at most one SSE per tile")
        if self.cores_per_sse > self.tiles:
            raise ValueError(f"cores_per_sse ({self.cores_per_sse}) must be <= tiles ({self.tiles})")
        if self.sses == 0 and self.tiles % self.cores_per_sse:
            raise ValueError(f"cores_per_sse ({self.cores_per_sse}) must divide tiles ({self.tiles}) when sses = 0 "
                             f"(sses = tiles / cores_per_sse)")
        if self.mem_controllers > self.tiles:
            raise ValueError(f"mem_controllers ({self.mem_controllers}) must be <= tiles ({self.tiles}); 0 = one per tile")
        if self.responder_sleep_us * 1000 <= self.ctx_switch_ns or self.responder_sleep_us < 0.1:
            raise ValueError(f"responder_sleep_us ({self.responder_sleep_us} us) must be at least 0.1 us and longer "
                             f"than a context switch ({self.ctx_switch_ns} ns)")
        return self


def native_config(cfg: ServerConfig | dict[str, Any]) -> dict[str, Any]:
    d = cfg.model_dump(mode="json") if isinstance(cfg, ServerConfig) else dict(cfg)
    return d


def flatten(r: dict[str, Any]) -> dict[str, Any]:
    """The native result as flat metrics (breakdown and counters prefixed)."""
    out: dict[str, Any] = {k: v for k, v in r.items() if not isinstance(v, dict)}
    for k, v in r["breakdown"].items():
        out[f"time_{k}"] = v
    for k, v in r["counters"].items():
        out[k] = v
    return out


def simulate(cfg: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(_native.enclave.simulate(json.dumps(cfg)))
    except ValueError as e:
        raise ConfigError(f"enclave.server: {e}") from None


def simulate_many(cfgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs many configs in parallel in Rust (rayon); the benchmark's path."""
    try:
        return json.loads(_native.enclave.simulate_many(json.dumps(cfgs)))
    except ValueError as e:
        raise ConfigError(f"enclave.server: {e}") from None


@register_experiment("enclave.server", ServerConfig, results={
    "model": ("", "execution model simulated"),
    "policy": ("", "exit policy simulated"),
    "workers": ("threads", "worker threads"),
    "tiles": ("tiles", "cores (tiles) of the chip"),
    "requests": ("requests", "web-page requests asked for"),
    "requests_completed": ("requests", "requests served"),
    "each_request_once": ("", "every request was served exactly once"),
    "completion_cycles": ("cycles", "simulated time until the last worker finished"),
    "completion_s": ("s", "completion_cycles at clock_ghz (simulated seconds)"),
    "throughput_krps": ("10^3 requests/s", "requests per simulated second, in thousands"),
    "mean_worker_cycles": ("cycles", "mean over workers of the time they were busy (sum of time_*)"),
    "time_*": ("cycles", "mean time per worker in this category (the Fig. 3 breakdown)"),
    "l1d_accesses": ("accesses", "L1 data-cache accesses of the worker cores"),
    "l1d_misses": ("misses", "L1 data-cache misses of the worker cores"),
    "sse_l1d_misses": ("misses", "L1 data-cache misses of the SSE cores"),
    "sharing_misses": ("misses", "misses on lines another core had written (coherence)"),
    "l2_accesses": ("accesses", "shared L2 accesses"),
    "l2_misses": ("misses", "shared L2 misses"),
    "dram_accesses": ("accesses", "memory accesses that left the chip"),
    "dram_gbps": ("GB/s", "off-chip traffic (lines read and written back) per simulated second"),
    "dram_queue_cycles": ("cycles", "mean wait of a DRAM access at its memory controller"),
    "link_utilization": ("", "flits carried over (mesh links x completion cycles): mean link load"),
    "link_wait_per_miss": ("cycles", "packets' total wait at mesh links per private-cache miss"),
    "queue_late": ("requests", "link crossings or DRAM accesses stamped before their queue's remembered history "
                   "(booked at its oldest bucket; a check that the history is long enough)"),
    "ctx_switches": ("switches", "context switches"),
    "ecalls": ("calls", "enclave entries"),
    "ocalls": ("calls", "enclave exits for system calls"),
    "calls_*": ("calls", "system calls run locally, posted to a responder, completed by one"),
    "responder_checks": ("checks", "times a responder polled its queue"),
    "responder_empty_checks": ("checks", "polls that found nothing to do"),
    "responder_sleeps": ("sleeps", "times a responder slept on its timer"),
    "responder_check_cycles": ("cycles", "cycles responders spent polling"),
    "responder_syscall_cycles": ("cycles", "cycles responders spent running system calls"),
    "preemptions": ("preemptions", "workers preempted at the end of their quantum"),
    "pickup_wait_cycles": ("cycles", "cycles posted calls waited before a responder picked them up"),
    "client_cycles": ("cycles", "cycles clients ran on enclave cores (wake-affine placement)"),
    "client_wakeups": ("wake-ups", "times a client blocked in recv was woken by a response"),
    "events": ("events", "simulation events processed"),
},
                     doc="Server workload (SSE paper) under one execution model: throughput, Fig. 3 breakdown, misses")
def server(cfg: ServerConfig) -> dict:
    return flatten(simulate(native_config(cfg)))
