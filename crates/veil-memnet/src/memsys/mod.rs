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
mod build;
mod carriers;
mod cores;
mod modules;
mod network;
mod nodeset;
mod stats;
pub mod config;
pub mod cpu;
pub mod encryption;
pub mod functional;
pub mod injection;
pub mod observed;
pub mod otp;
pub mod readahead;
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
pub use stats::{DramStats, MemSysResult};
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
    /// Nodes whose injection port has work (a head, a forwarded carrier, a queued message);
    /// kept only for a policy that pops only what was pushed.
    inj_nodes: nodeset::NodeSet,
    /// First cycle whose core polls have not happened yet (a response before it finds its
    /// core's skipped polls accounted up to here).
    polled_to: u64,
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

    /// Functional mode's engines (their boot keys and captured packets); None otherwise.
    pub fn functional_mut(&mut self) -> Option<&mut Functional> {
        self.functional.as_mut()
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
        self.inj_nodes.insert(src);
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
        // A core waiting for a response moves only at an event or a delivery (the network is
        // quiescent here, so none comes before the next event): it does not hold the jump, and
        // its stall cycles are counted over the jump when it is next polled (`Core::catch_up`).
        for c in &self.cores {
            if let Some(t) = c.next_time() {
                next = next.min(t);
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
            self.polled_to = now + 1;
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
                self.polled_to = t;
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
