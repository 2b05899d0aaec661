//! A memory-centric network (ghost routing §II): memory modules are the network's routers,
//! each with vault controllers behind a local port; CPUs attach to some modules as
//! endpoints and replay LLC-miss streams; every access is a packet (HMC sizes in 16-byte
//! flits: read request 1, read response 5, write request 5, write response 1). Packets
//! optionally go through one of the paper's encryption microarchitectures.
//!
//! The network is memnet's cycle-level engine in external mode ([`Engine::external`]): this
//! driver offers packets at nodes and collects deliveries each cycle. Node `m * T` of
//! router `m` (T terminals per router) is module m's vault port (on chip); CPUs take the
//! other terminals of the routers they are placed at (off-chip links with SerDes). With one
//! terminal per router (mesh, torus) a CPU shares its module's port.

pub mod addrmap;
pub mod config;
pub mod cpu;
pub mod encryption;
pub mod functional;
pub mod injection;
pub mod otp;
pub mod vault;
pub mod workload;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use veil_core::RngStreams;

use crate::error::{ConfigError, SimError};
use crate::sim::{Engine, Offer};
use crate::topology::{End, Topology};

use addrmap::{AddressMap, Geometry};
pub use config::{CpuConfig, EncryptionConfig, MemSysConfig, ModuleConfig, SecureConfig, WorkloadConfig};
use cpu::{Core, CoreStats, Kind, MissSource};
use encryption::Encryption;
use functional::{Functional, FunctionalStats};
use injection::{InjectionPolicy, Injected, Packet, Queued};
use otp::{OtpBuffers, OtpParams, OtpStats, Ticket};
use vault::{Req, Timing, Vault};

/// HMC packet sizes in 16-byte flits.
pub const READ_REQ_FLITS: u16 = 1;
pub const READ_RESP_FLITS: u16 = 5;
pub const WRITE_REQ_FLITS: u16 = 5;
pub const WRITE_RESP_FLITS: u16 = 1;
const PAD_BLOCKS: u64 = 5;

const READ_REQ: u8 = 0;
const WRITE_REQ: u8 = 1;
const READ_RESP: u8 = 2;
const WRITE_RESP: u8 = 3;
const DUMMY: u8 = 4;
/// A full-size packet of a secure algorithm: carries real messages (or none) along a route.
const CARRIER: u8 = 5;

const EV_VAULT: u8 = 0;
const EV_RESPOND: u8 = 1;
const EV_DELIVER: u8 = 2;
/// A carrier whose dwell at a module is over joins the node's send queue.
const EV_DEPART: u8 = 3;

#[derive(Clone, Debug, Default)]
struct Msg {
    kind: u8,
    src: u32,
    dst: u32,
    core: u32,
    addr: u64,
    issued: u64,
    ticket: Ticket,
    seq: u64,
    /// Load misses: the core's instruction position (ROB bookkeeping).
    load_at: Option<u64>,
    /// Dummy packets and carriers: their length.
    dummy_flits: u16,
    /// Ready to leave its source node (packet latency counts from here).
    queued_at: u64,
    /// A request served where a carrier waits for its reply: the carrier's id + 1.
    bound: u32,
    /// A request of a broadcast: its group's id + 1 and the router that serves it.
    bgroup: u32,
    brouter: u32,
    /// Carriers: messages on board, waypoints, position, and what happens at the end.
    carrier: Option<Box<Carrier>>,
    /// Functional mode: the plaintext and the bytes on the wire.
    plain: Vec<u8>,
    wire: Vec<u8>,
    data: Option<Box<[u8; 64]>>,
}

impl Msg {
    fn flits(&self) -> u16 {
        match self.kind {
            CARRIER => self.dummy_flits,
            READ_REQ => READ_REQ_FLITS,
            WRITE_REQ => WRITE_REQ_FLITS,
            READ_RESP => READ_RESP_FLITS,
            WRITE_RESP => WRITE_RESP_FLITS,
            _ => self.dummy_flits.max(1),
        }
    }
    fn class(&self) -> u8 {
        match &self.carrier {
            Some(c) => c.class,
            None => (self.kind == READ_RESP || self.kind == WRITE_RESP) as u8,
        }
    }
}

/// The state of a secure algorithm's packet on its way.
#[derive(Clone, Debug, Default)]
struct Carrier {
    msgs: Vec<u32>,
    route: Vec<u32>,
    /// Index in `route` of the current leg's destination.
    pos: usize,
    origin: u32,
    turn: bool,
    /// On its way back after turning.
    back: bool,
    class: u8,
    /// Responses still to come at a node before the carrier may leave it: (node, count).
    pending: Vec<(u32, u32)>,
    /// Held at its current node until `pending` there is empty.
    parked: bool,
    /// Leaves its current node no earlier than this (`secure.dwell_cycles`).
    hold_until: u64,
    /// The current leg carries real content (counted as a real packet).
    real: bool,
    /// Broadcast: group id + 1, and whether it travels up the tree (to the CPU at the root).
    group: u32,
    up: bool,
    to_cpu: bool,
}

/// One broadcast request in progress: per router of the tree, what it still waits for.
#[derive(Clone, Debug, Default)]
struct Group {
    origin: u32,
    root: usize,
    reqs: Vec<u32>,
    children_left: Vec<u32>,
    data_wait: Vec<u32>,
    got: Vec<Vec<u32>>,
    sent: Vec<bool>,
    /// When the request reached each router (its answer leaves `dwell_cycles` later at the
    /// earliest).
    arrived: Vec<u64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DramStats {
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    pub max_vault_queue: usize,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MemSysResult {
    /// Cycles until every core finished (network cycles = tCK).
    pub runtime_cycles: u64,
    pub runtime_ns: f64,
    pub reads: u64,
    pub writes: u64,
    pub responses: u64,
    pub dummies: u64,
    pub avg_read_latency: f64,
    pub max_read_latency: u64,
    pub avg_network_latency: f64,
    pub avg_hops: f64,
    pub instructions: u64,
    pub otp: OtpStats,
    /// OTP storage per node in bytes (the largest node; CPUs talk to every module).
    pub otp_storage_bytes_per_node: u64,
    pub otp_storage_bytes_cpu: u64,
    pub otp_storage_bytes_module: u64,
    pub functional: Option<FunctionalStats>,
    pub dram: DramStats,
    /// Trace pages given a frame (first-touch mapping), 0 otherwise.
    pub pages_touched: u64,
    pub cores: Vec<CoreStats>,
    pub modules: usize,
    pub cpus: usize,
    pub uarch: String,
    /// Routing and injection algorithm.
    pub injection: String,
    /// Packet injections (every leg, CPU and module channels) carrying real messages.
    pub real_packets: u64,
    /// Packet injections carrying none (dummies, dummy replies).
    pub dummy_packets: u64,
    /// Injections beyond the non-secure baseline's one request and one reply per request,
    /// per request.
    pub extra_packets_per_request: f64,
    pub dummies_per_real_packet: f64,
    /// Mean latency of a real message from ready to leave its node to arrival at its
    /// destination (waiting for a slot and detours included).
    pub avg_packet_latency_ns: f64,
    /// Mean busy fraction of the CPU and module injection channels.
    pub injection_utilisation: f64,
    /// Mean busy fraction of the CPUs' injection channels alone (the paper's "injection
    /// bandwidth"; with one terminal per router, the port a CPU shares with its module).
    pub cpu_injection_utilisation: f64,
    /// Mean busy fraction of the router-to-router channels.
    pub network_utilisation: f64,
    pub wall_seconds: f64,
    pub cycles_per_second: f64,
}

/// A packet as it entered the network: when, from which node to which (this leg), whether it
/// carried real messages, its length, and its bytes (functional mode; else empty).
#[derive(Clone, Debug)]
pub struct WireRecord {
    pub at: u64,
    pub src: u32,
    pub dst: u32,
    pub real: bool,
    pub flits: u16,
    pub wire: Vec<u8>,
}

/// Source of each core's miss stream (synthetic or a trace reader), given the address map.
pub type SourceFactory<'a> = dyn FnMut(usize, &AddressMap) -> Result<Box<dyn MissSource>, SimError> + 'a;

pub struct MemSystem {
    cfg: MemSysConfig,
    pub engine: Engine,
    map: AddressMap,
    timing: Timing,
    front: u64,
    back: u64,
    tpr: usize,
    pub modules: usize,
    vaults_per_module: usize,
    vaults: Vec<Vault>,
    active_vaults: Vec<u32>,
    vault_active: Vec<bool>,
    msgs: Vec<Msg>,
    free: Vec<u32>,
    live: usize,
    events: BinaryHeap<Reverse<(u64, u8, u32)>>,
    policy: Box<dyn InjectionPolicy>,
    head: Vec<Option<(u32, bool)>>,
    /// Nodes whose head is set.
    heads: usize,
    enc: Box<dyn Encryption>,
    otp: Option<OtpBuffers>,
    functional: Option<Functional>,
    store: HashMap<u64, [u8; 64]>,
    pub cores: Vec<Core>,
    pub cpu_nodes: Vec<u32>,
    cores_done: usize,
    read_lat_sum: u64,
    read_lat_n: u64,
    read_lat_max: u64,
    net_lat_sum: u64,
    hops_sum: u64,
    delivered: u64,
    dummies: u64,
    responses: u64,
    foreign_rr: u64,
    /// Carriers ready to leave a node (forwarded legs, replies), sent before new packets.
    fwd: Vec<VecDeque<u32>>,
    fwd_count: usize,
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    real_packets: u64,
    dummy_packets: u64,
    inj_flits: Vec<u64>,
    net_flits: u64,
    router_links: u64,
    pkt_lat_sum: u64,
    pkt_lat_n: u64,
    /// Pad size in 16-byte blocks (the largest packet).
    pad_blocks: u64,
    packet_flits: u16,
    finished: bool,
    /// When set, every packet put on the wire (tests of the routing algorithms).
    pub wire_log: Option<Vec<WireRecord>>,
    /// Trace page frames assigned on first touch (None = addresses used as they are).
    pages: Option<HashMap<u64, u64>>,
}

const PAGE: u64 = 4096;

fn cycles(ns: f64, tck: f64) -> u64 {
    (ns / tck - 1e-9).ceil().max(0.0) as u64
}

impl MemSystem {
    /// Builds the system with synthetic miss streams from `cfg.workload`.
    pub fn new(cfg: &MemSysConfig) -> Result<Self, SimError> {
        let w = cfg.workload.clone();
        let seed = cfg.network.seed;
        let pattern = match w.kind.as_str() {
            "uniform" | "batch" => workload::Pattern::Uniform,
            "hotspot" => workload::Pattern::Hotspot,
            "stream" => workload::Pattern::Stream,
            "trace" => return Self::from_trace(cfg),
            other => {
                let names: Vec<&str> = workload::WORKLOAD_NAMES.iter().map(|x| x.0).collect();
                return Err(ConfigError(format!("workload.kind: unknown '{other}' ({})", names.join(", "))).into());
            }
        };
        let gap = if w.kind == "batch" { 0.0 } else { w.insts_per_miss };
        let streams = RngStreams::new(seed);
        let mut factory = |i: usize, map: &AddressMap| -> Result<Box<dyn MissSource>, SimError> {
            Ok(Box::new(workload::Synthetic::new(
                streams.named("memnet.workload", i as u64),
                map.clone(),
                pattern,
                i as u32,
                w.requests_per_cpu,
                w.write_fraction,
                gap,
                w.hot_modules.clone(),
                w.hotspot_fraction,
            )))
        };
        Self::with_sources(cfg, &mut factory)
    }

    /// Builds the system replaying `cfg.workload.trace`: thread i on CPU i.
    fn from_trace(cfg: &MemSysConfig) -> Result<Self, SimError> {
        let path = cfg.workload.trace.clone();
        if path.is_empty() {
            return Err(ConfigError("workload.trace: kind 'trace' needs a trace file".into()).into());
        }
        let probe = veil_trace::TraceReader::open(&path).map_err(|e| ConfigError(format!("workload.trace '{path}': {e}")))?;
        let h = probe.header();
        if h.line_size != 64 {
            return Err(ConfigError(format!("workload.trace '{path}': line size {} bytes, the memory modules use 64", h.line_size)).into());
        }
        let threads = h.threads as usize;
        drop(probe);
        // One thread per core, every core: a header of 0 threads (a trace whose producer did not
        // know them) would leave every CPU idle and the run empty, fewer would idle CPU ports.
        if threads != cfg.cpu.count {
            return Err(ConfigError(format!("workload.trace '{path}': {threads} threads but cpu.count is {} (one thread per core: set cpus = {threads}, or trace with --threads {})", cfg.cpu.count, cfg.cpu.count)).into());
        }
        let first_touch = match cfg.workload.page_mapping.as_str() {
            "first_touch" => true,
            "identity" => false,
            other => return Err(ConfigError(format!("workload.page_mapping: unknown '{other}' (first_touch, identity)")).into()),
        };
        let mut factory = |i: usize, _: &AddressMap| -> Result<Box<dyn MissSource>, SimError> {
            if i < threads {
                Ok(Box::new(workload::TraceStream::open(&path, i as u32)?))
            } else {
                Ok(Box::new(workload::Empty))
            }
        };
        let mut s = Self::with_sources(cfg, &mut factory)?;
        if first_touch {
            s.pages = Some(HashMap::new());
        }
        Ok(s)
    }

    /// The physical address of a trace address: first-touch page frames when enabled.
    fn physical(&mut self, addr: u64, thread: u32) -> Result<u64, SimError> {
        let cap = self.map.capacity;
        let phys = match self.pages.as_mut() {
            None => addr,
            Some(p) => {
                let next = p.len() as u64;
                let frame = *p.entry(addr / PAGE).or_insert(next);
                if (frame + 1) * PAGE > cap {
                    return Err(ConfigError(format!(
                        "trace: thread {thread} touches more than the modules' capacity of {cap} bytes ({} pages of 4 KiB)",
                        cap / PAGE
                    ))
                    .into());
                }
                frame * PAGE + addr % PAGE
            }
        };
        if phys >= cap {
            return Err(ConfigError(format!("trace: address {addr:#x} of thread {thread} is beyond the modules' capacity of {cap} bytes")).into());
        }
        Ok(phys)
    }

    /// Builds the system; core i replays the stream `sources(i, map)` returns.
    pub fn with_sources(cfg: &MemSysConfig, sources: &mut SourceFactory) -> Result<Self, SimError> {
        let m = &cfg.module;
        let bad = |s: String| -> Result<Self, SimError> { Err(ConfigError(s).into()) };
        if m.layers == 0 || m.vaults == 0 || m.banks_per_layer == 0 || m.gb == 0 {
            return bad("module: layers, vaults, banks_per_layer and gb must be >= 1".into());
        }
        for (name, v) in [("tck_ns", m.tck_ns), ("tburst_ns", m.tburst_ns)] {
            if !(v > 0.0 && v.is_finite()) {
                return bad(format!("module.{name}: must be > 0 (got {v})"));
            }
        }
        for (name, v) in [
            ("trp_ns", m.trp_ns),
            ("tccd_ns", m.tccd_ns),
            ("trcd_ns", m.trcd_ns),
            ("tcl_ns", m.tcl_ns),
            ("twr_ns", m.twr_ns),
            ("tras_ns", m.tras_ns),
            ("frontend_ns", m.frontend_ns),
            ("backend_ns", m.backend_ns),
            ("serdes_ns", cfg.serdes_ns),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return bad(format!("{name}: must be >= 0 (got {v})"));
            }
        }
        if m.row_bytes < 64 || m.row_bytes % 64 != 0 || m.burst_bytes == 0 || 64 % m.burst_bytes != 0 {
            return bad(format!("module: row_bytes must be a multiple of the 64-byte line and burst_bytes divide it (got {}, {})", m.row_bytes, m.burst_bytes));
        }
        let open_page = match m.page_policy.as_str() {
            "open" => true,
            "closed" => false,
            other => return bad(format!("module.page_policy: unknown '{other}' (open, closed)")),
        };
        if m.scheduler_window == 0 {
            return bad("module.scheduler_window: must be >= 1".into());
        }
        let e = &cfg.encryption;
        if e.otp_depth == 0 {
            return bad("encryption.otp_depth: must be >= 1 (got 0)".into());
        }
        if e.otp_depth > 65_535 {
            return bad(format!("encryption.otp_depth: at most 65535 (got {})", e.otp_depth));
        }
        if !(e.aes_blocks_per_cycle > 0.0 && e.aes_blocks_per_cycle.is_finite()) {
            return bad(format!("encryption.aes_blocks_per_cycle: must be > 0 (got {})", e.aes_blocks_per_cycle));
        }
        if e.counter_bits < 8 || e.counter_bits > 64 {
            return bad(format!("encryption.counter_bits: must be in 8..=64 (got {})", e.counter_bits));
        }
        if e.check_bits == 0 || e.check_bits > 16 {
            return bad(format!("encryption.check_bits: must be in 1..=16 (got {})", e.check_bits));
        }
        let c = &cfg.cpu;
        if c.count == 0 {
            return bad("cpu.count: must be >= 1".into());
        }
        if !(c.ipc > 0.0 && c.ghz > 0.0 && c.issue_width > 0.0) || c.ipc > c.issue_width {
            return bad(format!("cpu: need 0 < ipc <= issue_width and ghz > 0 (got ipc {}, issue_width {}, ghz {})", c.ipc, c.issue_width, c.ghz));
        }
        if c.mshrs == 0 {
            return bad("cpu.mshrs: must be >= 1".into());
        }
        let enc = encryption::build(&e.uarch, encryption::CipherCycles { aes_latency: e.aes_latency, xor_cycles: e.xor_cycles })?;

        cfg.network.validate()?;
        let mut topo = Topology::build(&cfg.network.topology, cfg.network.router.terminal_latency)?;
        let modules = topo.routers;
        if topo.nodes % modules != 0 {
            return bad(format!("network: {} terminals do not divide evenly over {modules} routers", topo.nodes));
        }
        let tpr = topo.nodes / modules;
        if modules > 65_535 {
            return bad(format!("network: at most 65535 modules (got {modules})"));
        }

        // CPUs.
        let placement: Vec<usize> = if c.placement.is_empty() {
            (0..c.count).map(|i| i * modules / c.count).collect()
        } else {
            if c.placement.len() != c.count {
                return bad(format!("cpu.placement: {} modules given for {} CPUs", c.placement.len(), c.count));
            }
            c.placement.clone()
        };
        let mut used = vec![0usize; modules];
        let mut cpu_nodes = Vec::new();
        for &pm in &placement {
            if pm >= modules {
                return bad(format!("cpu.placement: module {pm} does not exist (the network has {modules} modules, 0..{})", modules - 1));
            }
            let node = if tpr == 1 {
                pm
            } else {
                used[pm] += 1;
                if used[pm] >= tpr {
                    return bad(format!("cpu.placement: module {pm} has no free terminal for another CPU ({} terminals per router, one is the module's)", tpr));
                }
                pm * tpr + used[pm]
            };
            cpu_nodes.push(node as u32);
        }

        // Off-chip links: SerDes plus the scheme's per-hop stages.
        let tck = m.tck_ns;
        let extra = cycles(cfg.serdes_ns, tck) as u32 + enc.per_hop_cycles();
        let is_cpu = |n: u32| tpr > 1 && (n as usize) % tpr != 0;
        for r in 0..topo.routers {
            for p in 0..topo.out[r].len() {
                let off = match topo.out[r][p].to {
                    End::Router { .. } => true,
                    End::Node(n) => is_cpu(n),
                    End::None => false,
                };
                if off {
                    topo.out[r][p].latency += extra;
                }
                let off_in = match topo.inp[r][p].0 {
                    End::Router { .. } => true,
                    End::Node(n) => is_cpu(n),
                    End::None => false,
                };
                if off_in {
                    topo.inp[r][p].1 += extra;
                }
            }
        }
        let mut engine = Engine::external(&cfg.network, topo)?;
        if cfg.observe {
            engine.observe(cfg.observe_max_events);
        }

        // Memory geometry and address map.
        let banks = (m.layers * m.banks_per_layer) as u64;
        let per_bank = (m.gb as u64) << 30;
        let div = m.vaults as u64 * banks * m.row_bytes as u64;
        if per_bank % div != 0 {
            return bad(format!("module: {} GiB does not split into {} vaults x {banks} banks of {}-byte rows", m.gb, m.vaults, m.row_bytes));
        }
        let geo = Geometry {
            modules: modules as u64,
            vaults: m.vaults as u64,
            layers: m.layers as u64,
            banks_per_layer: m.banks_per_layer as u64,
            rows_per_bank: per_bank / div,
            lines_per_row: (m.row_bytes / 64) as u64,
            line_bytes: 64,
        };
        let map = AddressMap::new(&m.address_mapping, geo)?;
        let w = &cfg.workload;
        if w.address_space > map.capacity {
            return bad(format!(
                "workload.address_space: {} bytes exceed the modules' capacity of {} bytes ({modules} x {} GiB)",
                w.address_space, map.capacity, m.gb
            ));
        }
        let timing = Timing {
            trp: cycles(m.trp_ns, tck),
            tccd: cycles(m.tccd_ns, tck),
            trcd: cycles(m.trcd_ns, tck),
            tcl: cycles(m.tcl_ns, tck),
            twr: cycles(m.twr_ns, tck),
            tras: cycles(m.tras_ns, tck),
            line: (64 / m.burst_bytes) as u64 * cycles(m.tburst_ns, tck),
            open_page,
            window: m.scheduler_window,
        };
        let cpi = (1.0 / c.ipc) * (1.0 / tck) / c.ghz;
        let mut cores = Vec::new();
        for (i, &n) in cpu_nodes.iter().enumerate() {
            cores.push(Core::new(n, sources(i, &map)?, c.mshrs, cpi, c.rob));
        }
        let nodes = engine.topo.nodes;
        let mut adjacency = vec![Vec::new(); modules];
        let mut router_links = 0u64;
        for (r, ports) in engine.topo.out.iter().enumerate() {
            for l in ports {
                if let End::Router { r: to, .. } = l.to {
                    adjacency[r].push(to);
                    router_links += 1;
                }
            }
        }
        let net = injection::Net {
            nodes,
            tpr,
            modules,
            cpu_nodes: cpu_nodes.clone(),
            adjacency,
            seed: cfg.network.seed,
            secure: cfg.secure.clone(),
        };
        let policy = injection::build(&cfg.injection, &net)?;
        let secure = !matches!(cfg.injection.as_str(), "minimal" | "direct");
        // Secure packets are padded to packet_flits; a pad covers the largest packet.
        let pad_blocks = if secure { PAD_BLOCKS.max(cfg.secure.packet_flits as u64) } else { PAD_BLOCKS };
        let otp = enc.end_to_end_pads().then(|| {
            OtpBuffers::new(
                OtpParams {
                    depth: e.otp_depth,
                    aes_latency: e.aes_latency as u64,
                    blocks_per_cycle: e.aes_blocks_per_cycle,
                    pad_blocks,
                    counter_bits: e.counter_bits,
                    rekey_cycles: e.rekey_cycles,
                },
                nodes,
                cfg.network.seed,
            )
        });
        let functional = e.functional.then(|| {
            let mut key = [0u8; 16];
            key[..8].copy_from_slice(&cfg.network.seed.to_le_bytes());
            key[8..].copy_from_slice(b"memnetky");
            Functional::new(key, e.otp_depth, pad_blocks, e.check_bits)
        });
        let nv = modules * m.vaults as usize;
        Ok(Self {
            policy,
            cfg: cfg.clone(),
            engine,
            map,
            timing,
            front: cycles(m.frontend_ns, tck),
            back: cycles(m.backend_ns, tck),
            tpr,
            modules,
            vaults_per_module: m.vaults as usize,
            vaults: (0..nv).map(|_| Vault::new(banks as usize)).collect(),
            active_vaults: Vec::new(),
            vault_active: vec![false; nv],
            msgs: Vec::new(),
            free: Vec::new(),
            live: 0,
            events: BinaryHeap::new(),
            head: vec![None; nodes],
            heads: 0,
            enc,
            otp,
            functional,
            store: HashMap::new(),
            cores,
            cpu_nodes,
            cores_done: 0,
            read_lat_sum: 0,
            read_lat_n: 0,
            read_lat_max: 0,
            net_lat_sum: 0,
            hops_sum: 0,
            delivered: 0,
            dummies: 0,
            responses: 0,
            foreign_rr: 0,
            pages: None,
            fwd: (0..nodes).map(|_| VecDeque::new()).collect(),
            fwd_count: 0,
            groups: Vec::new(),
            free_groups: Vec::new(),
            real_packets: 0,
            dummy_packets: 0,
            inj_flits: vec![0; nodes],
            net_flits: 0,
            router_links,
            pkt_lat_sum: 0,
            pkt_lat_n: 0,
            pad_blocks,
            packet_flits: cfg.secure.packet_flits,
            finished: false,
            wire_log: None,
        })
    }

    /// The address map's capacity in bytes (every module together).
    pub fn capacity(&self) -> u64 {
        self.map.capacity
    }

    pub fn address_map(&self) -> &AddressMap {
        &self.map
    }

    /// Message slots ever allocated (bounded by what is in flight, not by trace length).
    pub fn message_slots(&self) -> usize {
        self.msgs.len()
    }

    /// Module node of module `m` (its vault port).
    pub fn module_node(&self, m: usize) -> u32 {
        (m * self.tpr) as u32
    }

    /// DRAM part of an idle read: controller front end, activate, column, burst, back end.
    pub fn idle_dram_read_cycles(&self) -> u64 {
        self.front + self.timing.trcd + self.timing.tcl + self.timing.line + self.back
    }

    fn alloc(&mut self, m: Msg) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.msgs[i as usize] = m;
            i
        } else {
            self.msgs.push(m);
            (self.msgs.len() - 1) as u32
        }
    }

    fn release(&mut self, id: u32) {
        self.live -= 1;
        self.msgs[id as usize] = Msg::default();
        self.free.push(id);
    }

    fn queue_msg(&mut self, id: u32, now: u64) {
        self.msgs[id as usize].queued_at = now;
        let m = &self.msgs[id as usize];
        let reply_flits = match m.kind {
            READ_REQ => READ_RESP_FLITS,
            WRITE_REQ => WRITE_RESP_FLITS,
            _ => 0,
        };
        let q = Queued { id, dest: m.dst, flits: m.flits(), reply_flits, class: m.class() };
        let src = m.src as usize;
        self.policy.push(src, q, now);
    }

    fn issue_from_cores(&mut self, now: u64) -> Result<(), SimError> {
        for i in 0..self.cores.len() {
            if self.cores[i].done {
                continue;
            }
            loop {
                let Some(rec) = self.cores[i].ready(now)? else { break };
                let (addr, thread, rkind, rdata) = (rec.addr, rec.thread, rec.kind, rec.data);
                let addr = self.physical(addr, thread)?;
                let loc = self.map.decode(addr);
                let write = rkind == Kind::Writeback;
                let load_at = (rkind == Kind::LoadFill).then(|| self.cores[i].position());
                let data = if write && self.functional.is_some() { Some(Box::new(rdata)) } else { None };
                let msg = Msg {
                    kind: if write { WRITE_REQ } else { READ_REQ },
                    src: self.cores[i].node,
                    dst: self.module_node(loc.module as usize),
                    core: i as u32,
                    addr,
                    issued: now,
                    data,
                    load_at,
                    ..Default::default()
                };
                self.cores[i].issued(now);
                let id = self.alloc(msg);
                self.queue_msg(id, now);
            }
            if self.cores[i].check_done(now) {
                self.cores_done += 1;
            }
        }
        Ok(())
    }

    fn schedule_vaults(&mut self, now: u64) {
        let mut i = 0;
        while i < self.active_vaults.len() {
            let v = self.active_vaults[i] as usize;
            if let Some((req, done)) = self.vaults[v].schedule(now, &self.timing) {
                self.events.push(Reverse((done + self.back, EV_RESPOND, req.msg)));
            }
            if self.vaults[v].queue.is_empty() {
                self.vault_active[v] = false;
                self.active_vaults.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn handle_event(&mut self, now: u64, kind: u8, id: u32) {
        match kind {
            EV_VAULT => {
                let m = &self.msgs[id as usize];
                let loc = self.map.decode(m.addr);
                let v = loc.module as usize * self.vaults_per_module + loc.vault as usize;
                self.vaults[v].push(Req { msg: id, bank: loc.bank, row: loc.row, write: m.kind == WRITE_REQ });
                if !self.vault_active[v] {
                    self.vault_active[v] = true;
                    self.active_vaults.push(v as u32);
                }
            }
            EV_RESPOND => {
                let req = std::mem::take(&mut self.msgs[id as usize]);
                let write = req.kind == WRITE_REQ;
                let line = req.addr / 64;
                let data = if self.functional.is_some() {
                    if write {
                        self.store.insert(line, *req.data.as_deref().expect("write data"));
                        None
                    } else {
                        let d = self.store.get(&line).copied().unwrap_or_else(|| initial_line(line));
                        Some(Box::new(d))
                    }
                } else {
                    None
                };
                let resp = Msg {
                    kind: if write { WRITE_RESP } else { READ_RESP },
                    src: req.dst,
                    dst: req.src,
                    core: req.core,
                    addr: req.addr,
                    issued: req.issued,
                    data,
                    load_at: req.load_at,
                    queued_at: now,
                    ..Default::default()
                };
                self.release(id);
                let rid = self.alloc(resp);
                if req.bound != 0 {
                    self.response_ready(now, req.bound - 1, id, rid, req.dst);
                } else if req.bgroup != 0 {
                    let (g, r) = (req.bgroup - 1, req.brouter as usize);
                    let grp = &mut self.groups[g as usize];
                    grp.got[r].push(rid);
                    grp.data_wait[r] -= 1;
                    self.bcast_check_up(now, g, r);
                } else {
                    self.queue_msg(rid, now);
                }
            }
            EV_DEPART => {
                let n = self.msgs[id as usize].src as usize;
                self.fwd[n].push_back(id);
                self.fwd_count += 1;
            }
            _ => self.deliver(now, id),
        }
    }

    /// The response `rid` to request `req` (served at `node`) joins the carrier `c` waiting
    /// for it; the carrier leaves once nothing else is due there.
    fn response_ready(&mut self, now: u64, c: u32, req: u32, rid: u32, node: u32) {
        let at = self.msgs[c as usize].dst;
        let car = self.msgs[c as usize].carrier.as_mut().expect("bound to a carrier");
        for x in car.msgs.iter_mut() {
            if *x == req {
                *x = rid;
            }
        }
        let e = car.pending.iter_mut().find(|e| e.0 == node).expect("pending at node");
        e.1 -= 1;
        if e.1 == 0 && car.parked && at == node {
            car.parked = false;
            self.depart(c, node, now);
        }
    }

    /// Sends carrier `id` from `node` towards its route's next waypoint.
    fn depart(&mut self, id: u32, node: u32, now: u64) {
        let m = &mut self.msgs[id as usize];
        let car = m.carrier.as_mut().expect("carrier");
        car.pending.retain(|e| e.1 > 0);
        car.real = !car.msgs.is_empty();
        m.src = node;
        m.dst = car.route[car.pos];
        if car.hold_until > now {
            self.events.push(Reverse((car.hold_until, EV_DEPART, id)));
        } else {
            self.fwd[node as usize].push_back(id);
            self.fwd_count += 1;
        }
    }

    /// A new packet of a secure algorithm leaves node `n`.
    fn new_carrier(&mut self, n: usize, p: Packet, now: u64) -> u32 {
        let mut car = Carrier { route: p.route, origin: n as u32, turn: p.turn, ..Default::default() };
        if p.tree {
            let root = car.route[0] as usize / self.tpr;
            let g = Group {
                origin: n as u32,
                root,
                reqs: p.msgs,
                children_left: vec![u32::MAX; self.modules],
                data_wait: vec![0; self.modules],
                got: vec![Vec::new(); self.modules],
                sent: vec![false; self.modules],
                arrived: vec![0; self.modules],
            };
            let gid = match self.free_groups.pop() {
                Some(i) => {
                    self.groups[i as usize] = g;
                    i
                }
                None => {
                    self.groups.push(g);
                    (self.groups.len() - 1) as u32
                }
            };
            car.group = gid + 1;
            car.real = true;
        } else {
            car.real = !p.msgs.is_empty();
            car.msgs = p.msgs;
        }
        let m = Msg {
            kind: CARRIER,
            src: n as u32,
            dst: car.route[0],
            issued: now,
            dummy_flits: self.packet_flits,
            carrier: Some(Box::new(car)),
            ..Default::default()
        };
        self.alloc(m)
    }

    /// A broadcast packet from node `from` to `to` (down the tree or up it).
    fn bcast_send(&mut self, g: u32, from: u32, to: u32, up: bool, to_cpu: bool, msgs: Vec<u32>, now: u64, at: u64) {
        let real = !up || !msgs.is_empty();
        let car = Carrier { msgs, route: vec![to], origin: from, class: up as u8, real, group: g + 1, up, to_cpu, ..Default::default() };
        let m = Msg { kind: CARRIER, src: from, dst: to, issued: now, dummy_flits: self.packet_flits, carrier: Some(Box::new(car)), ..Default::default() };
        let id = self.alloc(m);
        if at > now {
            self.events.push(Reverse((at, EV_DEPART, id)));
        } else {
            self.fwd[from as usize].push_back(id);
            self.fwd_count += 1;
        }
    }

    /// Router `r` of broadcast `g` answers its parent once its children have and its own
    /// data is ready.
    fn bcast_check_up(&mut self, now: u64, g: u32, r: usize) {
        let grp = &mut self.groups[g as usize];
        if grp.sent[r] || grp.children_left[r] != 0 || grp.data_wait[r] != 0 {
            return;
        }
        grp.sent[r] = true;
        let msgs = std::mem::take(&mut grp.got[r]);
        let (root, origin) = (grp.root, grp.origin);
        let at = grp.arrived[r] + self.cfg.secure.dwell_cycles as u64;
        let from = self.module_node(r);
        if r == root {
            self.bcast_send(g, from, origin, true, true, msgs, now, at);
        } else {
            let parent = self.policy.tree(root).expect("broadcast tree").parent[r] as usize;
            let to = self.module_node(parent);
            self.bcast_send(g, from, to, true, false, msgs, now, at);
        }
    }

    /// A broadcast packet arrived at its node.
    fn bcast_at(&mut self, now: u64, id: u32) {
        let w = self.msgs[id as usize].dst;
        let car = self.msgs[id as usize].carrier.take().expect("carrier");
        self.release(id);
        let g = car.group - 1;
        if car.to_cpu {
            for rid in car.msgs {
                self.note_latency(now, rid);
                self.deliver(now, rid);
            }
            let grp = &mut self.groups[g as usize];
            grp.reqs.clear();
            self.free_groups.push(g);
            return;
        }
        let r = w as usize / self.tpr;
        if car.up {
            let grp = &mut self.groups[g as usize];
            grp.got[r].extend(car.msgs);
            grp.children_left[r] -= 1;
        } else {
            // Served requests leave the group's list (their ids are reused once answered).
            let reqs = std::mem::take(&mut self.groups[g as usize].reqs);
            let (here, rest): (Vec<u32>, Vec<u32>) = reqs.into_iter().partition(|&q| self.msgs[q as usize].dst == w);
            self.groups[g as usize].reqs = rest;
            for q in here {
                {
                    self.note_latency(now, q);
                    let m = &mut self.msgs[q as usize];
                    m.bgroup = g + 1;
                    m.brouter = r as u32;
                    self.groups[g as usize].data_wait[r] += 1;
                    self.events.push(Reverse((now + self.front, EV_VAULT, q)));
                }
            }
            let root = self.groups[g as usize].root;
            let children = self.policy.tree(root).expect("broadcast tree").children[r].clone();
            self.groups[g as usize].children_left[r] = children.len() as u32;
            self.groups[g as usize].arrived[r] = now;
            for ch in children {
                let to = self.module_node(ch as usize);
                self.bcast_send(g, w, to, false, false, Vec::new(), now, now);
            }
        }
        self.bcast_check_up(now, g, r);
    }

    /// A real message reached its destination node.
    fn note_latency(&mut self, now: u64, id: u32) {
        self.pkt_lat_sum += now - self.msgs[id as usize].queued_at;
        self.pkt_lat_n += 1;
    }

    /// A carrier arrived at a waypoint: serve the messages addressed there, then send it
    /// on, turn it round, hold it for data, or retire it.
    fn carrier_at(&mut self, now: u64, id: u32) {
        if self.msgs[id as usize].carrier.as_ref().expect("carrier").group != 0 {
            return self.bcast_at(now, id);
        }
        let w = self.msgs[id as usize].dst;
        let mut car = self.msgs[id as usize].carrier.take().expect("carrier");
        let last = car.pos + 1 == car.route.len();
        // A packet that ends at a module without turning leaves its replies to be queued.
        let bind = !(last && !car.turn);
        let mut keep = Vec::with_capacity(car.msgs.len());
        let mut bound_here = 0;
        for mid in std::mem::take(&mut car.msgs) {
            let (kind, dst, bound) = {
                let m = &self.msgs[mid as usize];
                (m.kind, m.dst, m.bound)
            };
            if dst != w || bound != 0 {
                keep.push(mid);
                continue;
            }
            self.note_latency(now, mid);
            match kind {
                READ_REQ | WRITE_REQ => {
                    if bind {
                        self.msgs[mid as usize].bound = id + 1;
                        bound_here += 1;
                        keep.push(mid);
                    }
                    self.events.push(Reverse((now + self.front, EV_VAULT, mid)));
                }
                _ => self.deliver(now, mid),
            }
        }
        car.msgs = keep;
        if bound_here > 0 {
            car.pending.push((w, bound_here));
        }
        if last && (!car.turn || car.back) {
            debug_assert!(car.msgs.is_empty(), "a carrier retires with messages on board");
            self.release(id);
            return;
        }
        if last {
            // Turn: back along the waypoints before this one, then to the source.
            let mut r: Vec<u32> = car.route[..car.pos].iter().rev().copied().collect();
            r.push(car.origin);
            car.route = r;
            car.pos = 0;
            car.back = true;
            car.class = 1;
        } else {
            car.pos += 1;
        }
        // On its way out a turning packet passes every waypoint again: it collects there then.
        let revisit = car.turn && !car.back;
        let wait = !revisit && car.pending.iter().any(|e| e.0 == w && e.1 > 0);
        car.parked = wait;
        // Where it may pick up data it stays at least dwell_cycles, data or not.
        car.hold_until = if revisit { now } else { now + self.cfg.secure.dwell_cycles as u64 };
        self.msgs[id as usize].carrier = Some(car);
        if !wait {
            self.depart(id, w, now);
        }
    }

    /// Admission at each free injection port: forwarded packets first, else the policy
    /// picks; then the scheme's pad.
    fn inject(&mut self, now: u64) {
        if !self.policy.busy() && self.heads == 0 && self.fwd_count == 0 {
            return;
        }
        for n in 0..self.head.len() {
            if self.engine.queued(n) > 0 {
                continue;
            }
            if self.head[n].is_none() {
                if let Some(id) = self.fwd[n].pop_front() {
                    self.fwd_count -= 1;
                    self.head[n] = Some((id, false));
                    self.heads += 1;
                } else {
                    match self.policy.pop(n, now) {
                        None => continue,
                        Some(Injected::Packet(p)) => {
                            let id = self.new_carrier(n, p, now);
                            self.head[n] = Some((id, false));
                            self.heads += 1;
                        }
                        Some(Injected::Real(id)) => {
                            self.head[n] = Some((id, false));
                            self.heads += 1;
                        }
                        Some(Injected::Dummy { dest, flits }) => {
                            let m = Msg { kind: DUMMY, src: n as u32, dst: dest, issued: now, dummy_flits: flits, ..Default::default() };
                            let id = self.alloc(m);
                            self.head[n] = Some((id, false));
                            self.heads += 1;
                        }
                    }
                }
            }
            let (id, stalled) = self.head[n].unwrap();
            let (src, dst) = (self.msgs[id as usize].src, self.msgs[id as usize].dst);
            if let Some(otp) = self.otp.as_mut() {
                match otp.take(src as usize, dst as usize, now) {
                    Ok(t) => self.msgs[id as usize].ticket = t,
                    Err(_) => {
                        if !stalled {
                            otp.stats.sender_stalls += 1;
                        }
                        otp.stats.sender_stall_cycles += 1;
                        self.head[n] = Some((id, true));
                        continue;
                    }
                }
            }
            if let Some(f) = self.functional.as_mut() {
                let m = &self.msgs[id as usize];
                let flits = m.flits() as usize;
                // A carrier's plaintext holds its first message (a dummy's: the dummy command).
                let inner = m.carrier.as_ref().and_then(|c| c.msgs.first()).map(|&x| &self.msgs[x as usize]);
                let (kind, line, data) = match (m.kind, inner) {
                    (CARRIER, Some(x)) => (x.kind, x.addr / 64, x.data.as_deref()),
                    (CARRIER, None) => (DUMMY, 0, None),
                    _ => (m.kind, m.addr / 64, m.data.as_deref()),
                };
                let plain = f.plaintext(src, dst, m.ticket, kind, line, data, flits);
                let mut wire = plain.clone();
                f.encrypt(src, dst, m.ticket, &mut wire);
                let seq = f.last_seq(src, dst);
                let m = &mut self.msgs[id as usize];
                m.plain = plain;
                m.wire = wire;
                m.seq = seq;
            }
            let m = &self.msgs[id as usize];
            let real = match &m.carrier {
                Some(c) => c.real,
                None => m.kind != DUMMY,
            };
            if real {
                self.real_packets += 1;
            } else {
                self.dummy_packets += 1;
            }
            self.inj_flits[n] += m.flits() as u64;
            if let Some(log) = self.wire_log.as_mut() {
                log.push(WireRecord { at: now, src: n as u32, dst, real, flits: m.flits(), wire: m.wire.clone() });
            }
            self.engine.offer(n, Offer { at: now, dest: dst, len: m.flits(), msg: m.class(), tag: id });
            self.head[n] = None;
            self.heads -= 1;
        }
    }

    /// A packet's tail arrived at its destination node.
    fn arrive(&mut self, d: crate::sim::Delivery) {
        let now = d.at;
        let id = d.tag;
        self.net_lat_sum += d.at - d.itime;
        self.hops_sum += d.hops as u64;
        self.delivered += 1;
        let m = &self.msgs[id as usize];
        self.net_flits += m.flits() as u64 * (d.hops as u64).saturating_sub(1);
        if m.carrier.as_ref().is_some_and(|c| !c.real) {
            self.dummies += 1;
        }
        if m.carrier.is_none() && m.kind != DUMMY {
            self.note_latency(now, id);
        }
        let mut ready = now;
        if let Some(otp) = self.otp.as_mut() {
            let m = &self.msgs[id as usize];
            ready = otp.receive(m.src as usize, m.dst as usize, m.ticket, now);
        }
        if let Some(f) = self.functional.as_mut() {
            let m = &self.msgs[id as usize];
            f.arrived(m.src, m.dst, m.seq);
            match f.decode(m.dst, &m.wire, m.ticket.round) {
                Some(p) if p == m.plain => {}
                Some(_) => f.stats.mismatches += 1,
                None => f.stats.rejected_at_destination += 1,
            }
            let nodes = self.engine.topo.nodes as u64;
            for _ in 0..self.cfg.encryption.foreign_checks {
                // Another node, walking the nodes so every one gets its turn.
                self.foreign_rr += 1;
                let other = ((m.dst as u64 + 1 + self.foreign_rr % (nodes - 1)) % nodes) as u32;
                f.stats.foreign_trials += 1;
                if f.decode(other, &m.wire, m.ticket.round).is_some() {
                    f.stats.foreign_accepts += 1;
                }
            }
        }
        if ready > now {
            self.events.push(Reverse((ready, EV_DELIVER, id)));
        } else {
            self.deliver(now, id);
        }
    }

    fn deliver(&mut self, now: u64, id: u32) {
        let kind = self.msgs[id as usize].kind;
        match kind {
            CARRIER => self.carrier_at(now, id),
            READ_REQ | WRITE_REQ => self.events.push(Reverse((now + self.front, EV_VAULT, id))),
            READ_RESP | WRITE_RESP => {
                self.responses += 1;
                let m = &self.msgs[id as usize];
                let core = m.core as usize;
                let lat = (kind == READ_RESP).then(|| now - m.issued);
                let load_at = m.load_at;
                if let Some(l) = lat {
                    self.read_lat_sum += l;
                    self.read_lat_n += 1;
                    self.read_lat_max = self.read_lat_max.max(l);
                }
                self.release(id);
                self.cores[core].completed(lat, load_at);
                if self.cores[core].check_done(now) {
                    self.cores_done += 1;
                }
            }
            _ => {
                self.dummies += 1;
                self.release(id);
            }
        }
    }

    /// When nothing can happen before a later cycle (network quiescent, no vault or
    /// injection work, cores busy computing), that cycle: the loop jumps there. Results are
    /// those of stepping every cycle.
    fn idle_until(&self, now: u64) -> Option<u64> {
        if !self.cfg.fast_forward
            || self.engine.flits_in_flight() > 0
            || !self.active_vaults.is_empty()
            || self.policy.busy()
            || self.heads > 0
            || self.fwd_count > 0
        {
            return None;
        }
        if !self.engine.quiescent() {
            return None;
        }
        let mut next = self.events.peek().map_or(u64::MAX, |r| r.0 .0);
        for c in &self.cores {
            match c.next_time() {
                Some(t) => next = next.min(t),
                // A stalled core counts its stall cycles one by one.
                None if !c.done => return None,
                None => {}
            }
        }
        let max = self.cfg.max_cycles;
        if max > 0 {
            next = next.min(max);
        }
        // Stop at every interrupt poll point too.
        next = next.min((now | 1023) + 1);
        (next > now + 1 && next != u64::MAX).then_some(next)
    }

    /// Runs until every core has finished and every packet is delivered.
    pub fn run(&mut self) -> Result<MemSysResult, SimError> {
        let started = std::time::Instant::now();
        let max = self.cfg.max_cycles;
        let mut deliveries = Vec::new();
        // Progress counts the records the cores have issued (the trace workload may end sooner).
        veil_core::progress::start(self.cfg.workload.requests_per_cpu * self.cores.len() as u64, "records");
        loop {
            let now = self.engine.now;
            while let Some(&Reverse((t, kind, id))) = self.events.peek() {
                if t > now {
                    break;
                }
                self.events.pop();
                self.handle_event(now, kind, id);
            }
            self.issue_from_cores(now)?;
            self.schedule_vaults(now);
            if !self.finished && self.cores_done == self.cores.len() {
                self.finished = true;
                self.policy.finish();
            }
            self.inject(now);
            if self.cores_done == self.cores.len() && self.live == 0 && self.engine.flits_in_flight() == 0 {
                break;
            }
            if now & 1023 == 0 {
                if veil_core::interrupt::requested() {
                    return Err(SimError::Interrupted);
                }
                veil_core::progress::set(self.cores.iter().map(|c| c.stats.reads + c.stats.writes).sum());
            }
            if max > 0 && now >= max {
                return Err(SimError::Conservation(format!(
                    "memory system did not finish within max_cycles = {max} ({} of {} cores done, {} messages live)",
                    self.cores_done,
                    self.cores.len(),
                    self.live
                )));
            }
            if let Some(t) = self.idle_until(now) {
                self.engine.skip_to(t);
                continue;
            }
            self.engine.step()?;
            std::mem::swap(&mut deliveries, &mut self.engine.delivered);
            for d in deliveries.drain(..) {
                self.arrive(d);
            }
        }
        Ok(self.result(started.elapsed().as_secs_f64()))
    }

    fn result(&self, wall: f64) -> MemSysResult {
        let runtime = self.cores.iter().map(|c| c.stats.finished_at).max().unwrap_or(0);
        let mut dram = DramStats::default();
        for v in &self.vaults {
            dram.reads += v.stats.reads;
            dram.writes += v.stats.writes;
            dram.row_hits += v.stats.row_hits;
            dram.max_vault_queue = dram.max_vault_queue.max(v.stats.max_queue);
        }
        let e = &self.cfg.encryption;
        let ncpu = self.cpu_nodes.len() as u64;
        let (cpu_b, mod_b) = if self.enc.end_to_end_pads() {
            // A CPU pairs with every module, a module with every CPU, both directions.
            (
                otp::storage_bytes(e.otp_depth, self.pad_blocks * 16, e.counter_bits, self.modules as u64, self.modules as u64),
                otp::storage_bytes(e.otp_depth, self.pad_blocks * 16, e.counter_bits, ncpu, ncpu),
            )
        } else {
            (0, 0)
        };
        let n = self.delivered.max(1) as f64;
        let requests: u64 = self.cores.iter().map(|c| c.stats.reads + c.stats.writes).sum();
        let cycles_run = self.engine.now.max(1);
        // Injection channels: every CPU's, and every module's vault port.
        let inj_nodes: Vec<usize> = if self.tpr == 1 {
            (0..self.modules).collect()
        } else {
            (0..self.modules).map(|m| m * self.tpr).chain(self.cpu_nodes.iter().map(|&c| c as usize)).collect()
        };
        let util = |nodes: &mut dyn Iterator<Item = usize>| {
            let (sum, k) = nodes.fold((0.0, 0usize), |(s, k), x| (s + self.inj_flits[x] as f64 / cycles_run as f64, k + 1));
            sum / k.max(1) as f64
        };
        let inj_util = util(&mut inj_nodes.iter().copied());
        let cpu_util = util(&mut self.cpu_nodes.iter().map(|&c| c as usize));
        MemSysResult {
            runtime_cycles: runtime,
            runtime_ns: runtime as f64 * self.cfg.module.tck_ns,
            reads: self.cores.iter().map(|c| c.stats.reads).sum(),
            writes: self.cores.iter().map(|c| c.stats.writes).sum(),
            responses: self.responses,
            dummies: self.dummies,
            avg_read_latency: self.read_lat_sum as f64 / self.read_lat_n.max(1) as f64,
            max_read_latency: self.read_lat_max,
            avg_network_latency: self.net_lat_sum as f64 / n,
            avg_hops: self.hops_sum as f64 / n,
            instructions: self.cores.iter().map(|c| c.stats.instructions).sum(),
            otp: self.otp.as_ref().map(|o| o.stats.clone()).unwrap_or_default(),
            otp_storage_bytes_per_node: cpu_b.max(mod_b),
            otp_storage_bytes_cpu: cpu_b,
            otp_storage_bytes_module: mod_b,
            functional: self.functional.as_ref().map(|f| f.stats.clone()),
            dram,
            pages_touched: self.pages.as_ref().map_or(0, |p| p.len() as u64),
            cores: self.cores.iter().map(|c| c.stats.clone()).collect(),
            modules: self.modules,
            cpus: self.cores.len(),
            uarch: self.enc.name().into(),
            injection: self.policy.name().into(),
            real_packets: self.real_packets,
            dummy_packets: self.dummy_packets,
            extra_packets_per_request: (self.real_packets + self.dummy_packets) as f64 / requests.max(1) as f64 - 2.0,
            dummies_per_real_packet: self.dummy_packets as f64 / self.real_packets.max(1) as f64,
            avg_packet_latency_ns: self.pkt_lat_sum as f64 / self.pkt_lat_n.max(1) as f64 * self.cfg.module.tck_ns,
            injection_utilisation: inj_util,
            cpu_injection_utilisation: cpu_util,
            network_utilisation: self.net_flits as f64 / (self.router_links.max(1) * cycles_run) as f64,
            wall_seconds: wall,
            cycles_per_second: self.engine.now as f64 / wall.max(1e-9),
        }
    }
}

/// Functional mode: a line's contents before anything was written to it.
fn initial_line(line: u64) -> [u8; 64] {
    let mut d = [0u8; 64];
    for (i, c) in d.chunks_mut(8).enumerate() {
        c.copy_from_slice(&veil_core::rng::splitmix64(line ^ (i as u64) << 56).to_le_bytes());
    }
    d
}

/// Builds and runs a memory system with synthetic streams.
pub fn simulate(cfg: &MemSysConfig) -> Result<MemSysResult, SimError> {
    MemSystem::new(cfg)?.run()
}

/// JSON in, JSON out (for the Python bindings).
pub fn simulate_json(text: &str) -> Result<String, SimError> {
    let cfg: MemSysConfig = serde_json::from_str(text).map_err(|e| ConfigError(format!("memnet memory system config: {e}")))?;
    let r = simulate(&cfg)?;
    Ok(serde_json::to_string(&r).expect("results serialise"))
}

/// The default configuration as JSON.
pub fn default_config_json() -> String {
    serde_json::to_string(&MemSysConfig::default()).expect("config serialises")
}

/// Writes a synthetic trace (veil-trace's deterministic generator) of `records` records over
/// `threads` threads: the benchmark's input.
pub fn write_synthetic_trace(path: &str, records: usize, threads: u32, seed: u64) -> Result<(), SimError> {
    let io = |e: veil_trace::TraceError| SimError::Config(ConfigError(format!("trace '{path}': {e}")));
    let h = veil_trace::synthetic::header(threads, 64);
    let mut w = veil_trace::TraceWriter::create(path, &h).map_err(io)?;
    for r in veil_trace::synthetic::records(seed, records, threads, 64) {
        w.write(&r).map_err(io)?;
    }
    w.finish().map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends a 2-flit dummy to the next node after every real message.
    struct Chatty {
        inner: Box<dyn InjectionPolicy>,
        owe: Vec<bool>,
        nodes: u32,
    }

    impl InjectionPolicy for Chatty {
        fn name(&self) -> &'static str {
            "chatty"
        }
        fn push(&mut self, n: usize, m: Queued, now: u64) {
            self.inner.push(n, m, now);
        }
        fn pop(&mut self, n: usize, now: u64) -> Option<Injected> {
            if self.owe[n] {
                self.owe[n] = false;
                return Some(Injected::Dummy { dest: (n as u32 + 1) % self.nodes, flits: 2 });
            }
            let r = self.inner.pop(n, now);
            self.owe[n] = r.is_some();
            r
        }
        fn pending(&self) -> usize {
            self.inner.pending() + self.owe.iter().filter(|&&x| x).count()
        }
    }

    #[test]
    fn first_touch_pages_fill_frames_in_order_until_capacity() {
        let mut s = MemSystem::new(&MemSysConfig::default()).unwrap();
        s.pages = Some(HashMap::new());
        s.map.capacity = 2 * PAGE;
        assert_eq!(s.physical(0x7fff_0000_1040, 0).unwrap(), 0x40);
        assert_eq!(s.physical(0x5555_0000_0008, 0).unwrap(), PAGE + 8);
        assert_eq!(s.physical(0x7fff_0000_1fc0, 0).unwrap(), 0xfc0, "same page, same frame");
        match s.physical(0x1234_5000, 3) {
            Err(SimError::Config(e)) => assert!(e.0.contains("thread 3 touches more than the modules' capacity"), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_policy_can_add_dummy_packets() {
        let mut c = MemSysConfig::default();
        c.workload.requests_per_cpu = 100;
        c.encryption.uarch = "source_otp".into();
        let base = MemSystem::new(&c).unwrap().run().unwrap();
        let mut s = MemSystem::new(&c).unwrap();
        let nodes = s.engine.topo.nodes;
        s.policy = Box::new(Chatty { inner: Box::new(injection::minimal::Minimal::new(nodes)), owe: vec![false; nodes], nodes: nodes as u32 });
        let r = s.run().unwrap();
        // One dummy per real packet (requests and responses), every request still answered.
        assert_eq!(r.dummies, 2 * (r.reads + r.writes));
        assert_eq!(r.responses, base.responses);
        assert!(r.runtime_cycles >= base.runtime_cycles);
        assert_eq!(s.live, 0);
    }
}
