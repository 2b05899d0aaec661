//! The simulator: cycle loop, channels (a timing wheel), endpoints (source queues,
//! injection, ejection), run control (warm-up, measurement, drain), watchdog and the
//! conservation check (run control in `sim/run.rs`).
//!
//! Channel timing (BookSim2's): a flit or credit put on a channel of latency d in cycle t is
//! seen by the receiver in cycle t+d+1; a router uses a received credit credit_delay cycles
//! later. The source queue is infinite but lazy (BookSim's `qtime`): a node draws its
//! Bernoulli trials for past cycles only when it has no packet left to inject, so memory does
//! not grow with offered load or time.

use std::collections::VecDeque;

use rand::Rng;
use veil_core::{Accumulator, Histogram, RngStreams, StreamRng};

use crate::config::SimConfig;
use crate::error::{ConfigError, SimError};
use crate::knuth::BookSimRng;
use crate::packet::{Flit, Packet, PacketSlab, RouteSet};
use crate::results::{ChannelStat, ChannelUse, SimResult};
use crate::router::{Ctx, Routers};
use crate::routing::{self, OccupancyView, PacketRoute, RoutingFunction, VcMap};
use crate::topology::{ChannelClass, End, Topology};
use crate::traffic::Pattern;

mod par;
mod run;

const EV_FLIT: u8 = 0;
const EV_CREDIT: u8 = 1;
const EV_EJECT: u8 = 2;
const EV_INJ_CREDIT: u8 = 3;

#[derive(Clone, Copy, Debug)]
struct Ev {
    kind: u8,
    vc: u8,
    idx: u32,
    flit: Flit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    WarmingUp,
    Running,
    Draining,
}

const NONE: u32 = u32::MAX;

/// A packet an outside driver (the memory system) hands to a node's source queue.
#[derive(Clone, Copy, Debug)]
pub struct Offer {
    /// Creation time (enters the source queue); packet latency counts from here.
    pub at: u64,
    pub dest: u32,
    pub len: u16,
    /// Message class: 0 request, 1 reply (separate VCs, no protocol deadlock).
    pub msg: u8,
    pub tag: u32,
}

/// A packet whose tail reached its destination node (external mode).
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    pub node: u32,
    pub src: u32,
    pub tag: u32,
    pub msg: u8,
    pub ctime: u64,
    pub itime: u64,
    /// Cycle the tail was ejected.
    pub at: u64,
    pub hops: u16,
}

struct Node {
    cur: u32,
    sent: u16,
    vc: i16,
    last_vc: u8,
    qtime: u64,
    qdrained: bool,
    /// request-reply: replies owed (time the request arrived, requester, record flag).
    replies: VecDeque<(u64, u32, bool)>,
    outstanding: u32,
    batch_left: u64,
    rng: StreamRng,
    route_rng: StreamRng,
}

impl OccupancyView for Routers {
    fn used(&self, router: usize, port: usize) -> u32 {
        self.list[router].out_used[port]
    }
}

pub struct Engine {
    cfg: SimConfig,
    pub topo: Topology,
    routing: Box<dyn RoutingFunction>,
    vcmap: VcMap,
    pub routers: Routers,
    packets: PacketSlab,
    wheel: Vec<Vec<Ev>>,
    wmask: u64,
    port_router: Vec<u32>,
    nodes: Vec<Node>,
    node_occ: Vec<u16>,
    node_in_use: Vec<bool>,
    node_tail_sent: Vec<bool>,
    pattern: Pattern,
    /// BookSim2's global generators (rng = "booksim"); None = per-node streams.
    bs: Option<BookSimRng>,
    sort_arrivals: bool,
    /// Credit and ejection events of this cycle, handled after injection.
    later: Vec<Ev>,
    /// Draws routing makes inside routers when `bs` is None.
    route_stream: StreamRng,
    inj_p: f64,
    pub now: u64,
    phase: Phase,
    drain_time: u64,
    empty_network: bool,
    speedup_acc: f64,
    // statistics since the last reset
    plat: Histogram,
    nlat: Histogram,
    hops: Accumulator,
    accepted_flits: u64,
    sent_flits: u64,
    reset_time: u64,
    chan_flits: Vec<u64>,
    inj_flits: Vec<u64>,
    // in flight
    inflight_flits: u64,
    inflight_ctime_sum: u128,
    measured_inflight: u64,
    credit_events: u64,
    last_progress: u64,
    // conservation
    created_packets: u64,
    retired_packets: u64,
    created_flits: u64,
    ejected_flits: u64,
    misrouted: u64,
    batch_done_time: u64,
    /// External mode: packets come from `offer` instead of the traffic generator and
    /// deliveries are reported in `delivered` instead of answered.
    ext: bool,
    ext_q: Vec<VecDeque<Offer>>,
    pub delivered: Vec<Delivery>,
    /// What a channel-probing adversary sees (None = not recorded; the hooks cost a branch).
    obs: Option<Box<dyn Observer>>,
    /// External mode: bit n set when node n has a packet queued or under way.
    src_active: Vec<u64>,
    /// Per-thread buffers when routers step on the pool (`sim/par.rs`); empty = serial.
    shares: Vec<par::Share>,
    /// Routers per share.
    share_len: usize,
}

/// Whoever watches the channels (the adversary's record, `crate::observe`): the engine calls
/// it for each packet entering the network and each packet crossing a channel. The engine
/// owns this contract so it depends on no observer.
pub trait Observer: std::any::Any + Send {
    /// A packet's head entered node `src`'s injection channel toward `dst`.
    fn inject(&mut self, t: u64, src: u32, dst: u32, flits: u16);
    /// A packet's head left on channel `ch` (ids as in `crate::observe::channel_table`).
    fn channel(&mut self, t: u64, ch: u32, flits: u16);
}

impl Engine {
    pub fn new(cfg: &SimConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let topo = Topology::build(&cfg.topology, cfg.router.terminal_latency)?;
        Self::with_topology(cfg, topo)
    }

    /// An engine whose packets come from an outside driver ([`Engine::offer`]) and whose
    /// deliveries are collected in `delivered`: the memory system drives the network this
    /// way. `topo` may have been edited (per-link latencies) after [`Topology::build`].
    /// Two message classes (requests and replies) are always separated.
    pub fn external(cfg: &SimConfig, topo: Topology) -> Result<Self, ConfigError> {
        let mut cfg = cfg.clone();
        cfg.traffic.request_reply = true;
        cfg.validate()?;
        let mut e = Self::with_topology(&cfg, topo)?;
        e.ext = true;
        e.ext_q = (0..e.topo.nodes).map(|_| VecDeque::new()).collect();
        e.routers.track_active();
        e.phase = Phase::Running;
        Ok(e)
    }

    /// Steps routers on `threads` threads whatever the network's size (before the first
    /// step; tests use it to check that results do not depend on the thread count).
    pub fn force_threads(&mut self, threads: usize) {
        assert!(self.now == 0, "threads are chosen before the run starts");
        self.routers = Routers::with_threshold(&self.topo, &self.cfg.router, threads, 0);
        if self.ext {
            self.routers.track_active();
        }
        self.shares = self.make_shares();
        self.share_len = self.routers.share_len();
    }

    /// Threads the routers step on.
    pub fn threads(&self) -> usize {
        self.routers.threads()
    }

    /// External mode: queues a packet at node `n`'s source.
    pub fn offer(&mut self, n: usize, o: Offer) {
        self.ext_q[n].push_back(o);
        self.src_active[n / 64] |= 1 << (n % 64);
    }

    /// External mode's sources: only nodes with a packet queued or under way, in node
    /// order (a serial run's order), generate and then inject.
    fn ext_sources(&mut self) {
        for w in 0..self.src_active.len() {
            let mut b = self.src_active[w];
            while b != 0 {
                let n = w * 64 + b.trailing_zeros() as usize;
                b &= b - 1;
                if self.nodes[n].cur == NONE {
                    self.generate(n);
                }
            }
        }
        for w in 0..self.src_active.len() {
            let mut b = self.src_active[w];
            while b != 0 {
                let n = w * 64 + b.trailing_zeros() as usize;
                b &= b - 1;
                self.inject(n);
                if self.nodes[n].cur == NONE && self.ext_q[n].is_empty() {
                    self.src_active[w] &= !(1 << (n % 64));
                }
            }
        }
    }

    /// Reports every injection and channel traversal to `o` from now on.
    pub fn observe(&mut self, o: Box<dyn Observer>) {
        self.obs = Some(o);
        // The observer sees channels in cycle and router order: step serially from now on.
        self.unshare();
    }

    /// The observer, if any (reporting stops).
    pub fn take_observer(&mut self) -> Option<Box<dyn Observer>> {
        self.obs.take()
    }

    /// External mode: packets queued at node `n` not yet started into the network.
    pub fn queued(&self, n: usize) -> usize {
        self.ext_q[n].len() + (self.nodes[n].cur != NONE) as usize
    }

    /// Flits created but not yet ejected.
    pub fn flits_in_flight(&self) -> u64 {
        self.inflight_flits
    }

    /// External mode: nothing queued, in flight or owed (flits, credits): stepping would
    /// only advance the clock.
    pub fn quiescent(&self) -> bool {
        self.inflight_flits == 0
            && self.credit_events == 0
            && if self.ext {
                self.src_active.iter().all(|&w| w == 0)
            } else {
                self.nodes.iter().all(|n| n.cur == NONE) && self.ext_q.iter().all(|q| q.is_empty())
            }
            && (self.routers.none_active() || !self.routers.any_pending_out())
    }

    /// External mode: jumps a quiescent network to cycle `t`, as stepping would (the
    /// internal-speedup phase advances with it).
    pub fn skip_to(&mut self, t: u64) {
        debug_assert!(self.quiescent() && t >= self.now);
        let n = t - self.now;
        self.speedup_acc = (self.speedup_acc + n as f64 * self.cfg.router.internal_speedup).fract();
        self.now = t;
    }

    fn with_topology(cfg: &SimConfig, topo: Topology) -> Result<Self, ConfigError> {
        let routing = routing::build(&cfg.routing, &topo)?;
        let sort_arrivals = cfg.rng == "booksim" && routing.draws_while_routing();
        let msg_classes = if cfg.traffic.request_reply { 2 } else { 1 };
        let route_classes = if cfg.vc_classes { routing.classes() } else { 1 };
        let vcmap = VcMap::new(cfg.router.num_vcs, route_classes, msg_classes, &cfg.routing)?;
        let streams = RngStreams::new(cfg.seed);
        let pattern = Pattern::new(&cfg.traffic, topo.nodes, &mut streams.named("memnet.perm", 0))?;
        let routers = Routers::new(&topo, &cfg.router, cfg.threads());
        let max_delay = topo.max_latency().max(cfg.router.terminal_latency) as u64 + 2 + cfg.router.credit_delay as u64;
        let wsize = (max_delay + 1).next_power_of_two();
        let mut port_router = Vec::with_capacity(*routers.base.last().unwrap());
        for r in 0..topo.routers {
            for _ in 0..topo.radix(r) {
                port_router.push(r as u32);
            }
        }
        let batch = cfg.traffic.injection == "batch";
        let nodes = (0..topo.nodes)
            .map(|n| Node {
                cur: NONE,
                sent: 0,
                vc: -1,
                last_vc: u8::MAX,
                qtime: 0,
                qdrained: false,
                replies: VecDeque::new(),
                outstanding: 0,
                batch_left: if batch { cfg.traffic.batch_size as u64 } else { 0 },
                rng: streams.named("memnet.inject", n as u64),
                route_rng: streams.named("memnet.route", n as u64),
            })
            .collect();
        let v = cfg.router.num_vcs;
        let ports = *routers.base.last().unwrap();
        let mut e = Self {
            inj_p: cfg.traffic.rate / cfg.traffic.packet_size as f64,
            cfg: cfg.clone(),
            routing,
            vcmap,
            packets: PacketSlab::default(),
            wheel: (0..wsize).map(|_| Vec::new()).collect(),
            wmask: wsize - 1,
            port_router,
            node_occ: vec![0; topo.nodes * v],
            node_in_use: vec![false; topo.nodes * v],
            node_tail_sent: vec![false; topo.nodes * v],
            nodes,
            pattern,
            bs: if cfg.rng == "booksim" { Some(BookSimRng::new(cfg.seed)) } else { None },
            route_stream: streams.named("memnet.route.network", 0),
            sort_arrivals,
            later: Vec::new(),
            now: 0,
            phase: Phase::WarmingUp,
            drain_time: 0,
            empty_network: false,
            speedup_acc: 0.0,
            plat: Histogram::new(),
            nlat: Histogram::new(),
            hops: Accumulator::new(),
            accepted_flits: 0,
            sent_flits: 0,
            reset_time: 0,
            chan_flits: vec![0; ports],
            inj_flits: vec![0; topo.nodes],
            inflight_flits: 0,
            inflight_ctime_sum: 0,
            measured_inflight: 0,
            credit_events: 0,
            last_progress: 0,
            created_packets: 0,
            retired_packets: 0,
            created_flits: 0,
            ejected_flits: 0,
            misrouted: 0,
            batch_done_time: 0,
            ext: false,
            ext_q: Vec::new(),
            delivered: Vec::new(),
            obs: None,
            shares: Vec::new(),
            src_active: vec![0; topo.nodes.div_ceil(64)],
            share_len: routers.share_len(),
            routers,
            topo,
        };
        e.shares = e.make_shares();
        Ok(e)
    }

    fn clear_stats(&mut self) {
        self.plat = Histogram::new();
        self.nlat = Histogram::new();
        self.hops = Accumulator::new();
        self.accepted_flits = 0;
        self.sent_flits = 0;
        self.chan_flits.iter_mut().for_each(|x| *x = 0);
        self.inj_flits.iter_mut().for_each(|x| *x = 0);
        self.reset_time = self.now;
    }

    #[inline]
    fn counting(&self) -> bool {
        self.phase != Phase::Draining
    }

    fn new_packet(&mut self, n: usize, dest: u32, ctime: u64, len: usize, msg: u8, record: bool) -> u32 {
        let p = Packet {
            route: PacketRoute { src: n as u32, dest, ph: 0, count: 0, inter: u32::MAX },
            la: RouteSet::default(),
            ctime,
            itime: 0,
            hops: 0,
            len: len as u16,
            remaining: len as u16,
            record,
            msg,
            tag: 0,
        };
        self.created_packets += 1;
        self.created_flits += len as u64;
        self.inflight_flits += len as u64;
        self.inflight_ctime_sum += len as u128 * ctime as u128;
        if record {
            self.measured_inflight += len as u64;
        }
        self.packets.alloc(p)
    }

    /// Source queue: generate the next packet of node n if it has none (BookSim's _Inject).
    /// Inlined into the per-node loop (a call per node and cycle costs 4% of a mesh run).
    #[inline(always)]
    fn generate(&mut self, n: usize) {
        if self.ext {
            if let Some(o) = self.ext_q[n].pop_front() {
                let id = self.new_packet(n, o.dest, o.at, o.len as usize, o.msg, true);
                self.packets.get_mut(id).tag = o.tag;
                self.nodes[n].cur = id;
            }
            return;
        }
        let t = self.now;
        let rr = self.cfg.traffic.request_reply;
        let batch = self.cfg.traffic.injection == "batch";
        let max_out = self.cfg.traffic.max_outstanding as u32;
        while self.nodes[n].qtime <= t {
            let node = &mut self.nodes[n];
            if rr {
                if let Some(&(rt, src, rec)) = node.replies.front() {
                    if rt <= t {
                        node.replies.pop_front();
                        let len = self.cfg.traffic.reply_size;
                        let record = rec || self.records(rt);
                        let id = self.new_packet(n, src, rt, len, 1, record);
                        self.nodes[n].cur = id;
                        return;
                    }
                    node.qtime += 1;
                    continue;
                }
            }
            let fire = if batch {
                node.batch_left > 0 && (max_out == 0 || node.outstanding < max_out)
            } else if let Some(bs) = self.bs.as_mut() {
                bs.float.next() < self.inj_p
            } else {
                node.rng.gen::<f64>() < self.inj_p
            };
            let q = node.qtime;
            node.qtime += 1;
            if fire {
                if batch {
                    node.batch_left -= 1;
                }
                if rr || batch {
                    node.outstanding += 1;
                }
                let dest = match (self.bs.as_mut(), &self.pattern) {
                    (Some(bs), pat) => {
                        let d = match pat {
                            Pattern::Uniform { nodes, include_self: true } => bs.int.int(nodes - 1),
                            // Deterministic patterns draw nothing; the rest use the node stream.
                            _ => self.pattern.dest(n as u32, &mut self.nodes[n].rng),
                        };
                        // BookSim draws a subnetwork for every packet, even with one subnet.
                        bs.int.next();
                        d
                    }
                    (None, _) => self.pattern.dest(n as u32, &mut self.nodes[n].rng),
                };
                let record = self.records(q);
                let id = self.new_packet(n, dest, q, self.cfg.traffic.packet_size, 0, record);
                self.nodes[n].cur = id;
                break;
            }
        }
        if self.phase == Phase::Draining && self.nodes[n].qtime > self.drain_time {
            self.nodes[n].qdrained = true;
        }
    }

    #[inline]
    fn records(&self, ctime: u64) -> bool {
        match self.phase {
            Phase::Running => true,
            Phase::Draining => ctime < self.drain_time,
            Phase::WarmingUp => false,
        }
    }

    /// Sends at most one flit from node n into its router (inlined into the per-node loops,
    /// as `generate`).
    #[inline(always)]
    fn inject(&mut self, n: usize) {
        let cur = self.nodes[n].cur;
        if cur == NONE {
            return;
        }
        let v = self.routers.p.v;
        let buf = self.routers.p.buf as u16;
        let t = self.now;
        let msg = self.packets.get(cur).msg as usize;
        if self.nodes[n].sent == 0 && self.nodes[n].vc < 0 {
            let (mut lo, mut hi) = self.vcmap.msg_range(msg);
            if self.routing.random_injection_vc() {
                let x = match self.bs.as_mut() {
                    Some(bs) => lo + bs.int.int((hi - lo) as u32) as u8,
                    None => self.nodes[n].route_rng.gen_range(lo..=hi),
                };
                lo = x;
                hi = x;
            }
            let count = (hi - lo + 1) as usize;
            let lvc = self.nodes[n].last_vc;
            for i in 1..=count {
                let vc = if lvc < lo || lvc > hi { lo as usize } else { lo as usize + ((lvc - lo) as usize + i) % count };
                if self.node_in_use[n * v + vc] || self.node_occ[n * v + vc] >= buf {
                    continue;
                }
                self.nodes[n].vc = vc as i16;
                break;
            }
        }
        let vc = self.nodes[n].vc;
        if vc < 0 || self.node_occ[n * v + vc as usize] >= buf {
            return;
        }
        let vc = vc as usize;
        let (r, port) = self.topo.attach[n];
        let (r, port) = (r as usize, port as usize);
        let sent = self.nodes[n].sent;
        let len = self.packets.get(cur).len;
        let head = sent == 0;
        let tail = sent + 1 == len;
        if head {
            let node = &mut self.nodes[n];
            let p = self.packets.get_mut(cur);
            let rng: &mut dyn routing::Draw = match self.bs.as_mut() {
                Some(b) => b,
                None => &mut node.route_rng,
            };
            self.routing.at_source(r, &mut p.route, rng, &self.routers);
            let (op, class) = self.routing.route(r, port, &mut p.route, rng);
            let (lo, hi) = self.vcmap.range(msg, class);
            p.la = RouteSet { port: op as u16, vc_lo: lo, vc_hi: hi };
            p.itime = t;
            self.node_in_use[n * v + vc] = true;
            node.last_vc = vc as u8;
            if let Some(o) = self.obs.as_mut() {
                let ports = self.routers.base.last().copied().unwrap_or(0) as u32;
                o.inject(t, n as u32, p.route.dest, len);
                o.channel(t, ports + n as u32, len);
            }
        }
        self.node_occ[n * v + vc] += 1;
        if head {
            self.node_tail_sent[n * v + vc] = false;
        }
        if tail {
            // The injection channel's VC is a buffer like any other: with
            // wait_for_tail_credit it stays reserved until the tail's credit is back.
            self.node_tail_sent[n * v + vc] = true;
            if !self.cfg.router.wait_for_tail_credit {
                self.node_in_use[n * v + vc] = false;
            }
        }
        let lat = self.topo.inp[r][port].1 as u64;
        let gp = self.routers.base[r] + port;
        self.schedule(t + lat + 1, Ev { kind: EV_FLIT, vc: vc as u8, idx: gp as u32, flit: Flit::new(cur, head, tail) });
        self.last_progress = t;
        if self.counting() {
            self.sent_flits += 1;
            self.inj_flits[n] += 1;
        }
        let node = &mut self.nodes[n];
        if tail {
            node.cur = NONE;
            node.sent = 0;
            node.vc = -1;
        } else {
            node.sent += 1;
        }
    }

    fn eject(&mut self, n: usize, f: Flit, vc: usize) {
        let t = self.now;
        if self.counting() {
            self.accepted_flits += 1;
        }
        // Credit back to the router's ejection output.
        let (r, port) = self.topo.attach[n];
        let lat = self.topo.out[r as usize][port as usize].latency as u64;
        let gp = self.routers.base[r as usize] + port as usize;
        let at = t + lat + 1 + self.cfg.router.credit_delay as u64;
        self.schedule(at, Ev { kind: EV_CREDIT, vc: vc as u8, idx: gp as u32, flit: f });
        self.credit_events += 1;
        self.ejected_flits += 1;
        self.last_progress = t;
        let p = *self.packets.get(f.pkt());
        self.inflight_flits -= 1;
        self.inflight_ctime_sum -= p.ctime as u128;
        if p.record {
            self.measured_inflight -= 1;
        }
        self.packets.get_mut(f.pkt()).remaining -= 1;
        if f.tail() {
            debug_assert_eq!(p.remaining, 1);
            if p.route.dest != n as u32 {
                self.misrouted += 1;
            }
            if self.phase == Phase::WarmingUp || p.record {
                self.hops.add(p.hops as f64);
                self.plat.add(t - p.ctime);
                self.nlat.add(t - p.itime);
            }
            if self.ext {
                self.delivered.push(Delivery {
                    node: n as u32,
                    src: p.route.src,
                    tag: p.tag,
                    msg: p.msg,
                    ctime: p.ctime,
                    itime: p.itime,
                    at: t,
                    hops: p.hops,
                });
            } else if p.msg == 0 && self.cfg.traffic.request_reply {
                self.nodes[n].replies.push_back((t, p.route.src, p.record));
            } else if p.msg == 1 {
                self.nodes[n].outstanding -= 1;
            } else if self.cfg.traffic.injection == "batch" {
                self.nodes[p.route.src as usize].outstanding -= 1;
            }
            self.retired_packets += 1;
            self.packets.free(f.pkt());
        }
    }

    /// One network cycle.
    pub fn step(&mut self) -> Result<(), SimError> {
        let t = self.now;
        if t & 1023 == 0 {
            if veil_core::interrupt::requested() {
                return Err(SimError::Interrupted);
            }
            veil_core::progress::set(t);
        }
        let slot = (t & self.wmask) as usize;
        let mut evs = std::mem::take(&mut self.wheel[slot]);
        // BookSim2 queues a router's arriving flits by input port. Allocation does not depend
        // on that order, but the order of random draws made while routing does: with BookSim's
        // generator and such a routing function, deliver in BookSim's order.
        if self.sort_arrivals && evs.len() > 1 {
            evs.sort_unstable_by_key(|e| ((e.kind as u64) << 32) | e.idx as u64);
        }
        // With routers on the pool (`par`), flits and credits for routers wait on their
        // share's wheel instead and are taken there (sim/par.rs).
        // BookSim2's order inside a cycle: flits enter router input queues and the sources
        // see their injection credits; then sources generate and inject (UGAL reads router
        // occupancy here); then ejected flits retire and routers process their due credits.
        let mut later = std::mem::take(&mut self.later);
        let par = !self.shares.is_empty();
        for ev in evs.drain(..) {
            match ev.kind {
                EV_FLIT => {
                    let gp = ev.idx as usize;
                    let r = self.port_router[gp] as usize;
                    let input = gp - self.routers.base[r];
                    let p = self.routers.p;
                    self.routers.list[r].receive_flit(&p, input, ev.flit, ev.vc as usize, &self.packets);
                    self.routers.mark(r);
                }
                EV_INJ_CREDIT => {
                    self.credit_events -= 1;
                    let i = ev.idx as usize * self.routers.p.v + ev.vc as usize;
                    self.node_occ[i] -= 1;
                    if self.cfg.router.wait_for_tail_credit && self.node_occ[i] == 0 && self.node_tail_sent[i] {
                        self.node_in_use[i] = false;
                    }
                }
                _ => later.push(ev),
            }
        }
        self.wheel[slot] = evs;

        // All sources generate, then all inject (BookSim's order of random draws).
        if self.ext {
            self.ext_sources();
        } else {
            if !self.empty_network {
                for n in 0..self.nodes.len() {
                    if self.nodes[n].cur == NONE {
                        self.generate(n);
                    }
                }
            }
            for n in 0..self.nodes.len() {
                self.inject(n);
            }
        }
        for ev in later.drain(..) {
            if ev.kind == EV_CREDIT {
                self.credit_events -= 1;
                let gp = ev.idx as usize;
                let r = self.port_router[gp] as usize;
                let p = self.routers.p;
                self.routers.list[r].receive_credit(&p, gp - self.routers.base[r], ev.vc as usize);
            } else {
                self.eject(ev.idx as usize, ev.flit, ev.vc as usize);
            }
        }
        self.later = later;

        self.speedup_acc += self.cfg.router.internal_speedup;
        let mut steps = 0;
        while self.speedup_acc >= 1.0 {
            self.speedup_acc -= 1.0;
            steps += 1;
        }
        self.routers.begin_cycle();
        if par {
            self.step_shares(steps);
            let rng: &mut dyn routing::Draw = match self.bs.as_mut() {
                Some(b) => b,
                None => &mut self.route_stream,
            };
            let mut ctx = Ctx { topo: &self.topo, routing: &*self.routing, vcmap: self.vcmap, packets: &mut self.packets, rng };
            // Heads whose next route the shares could not compute (routing that draws).
            self.routers.finish_heads(&mut ctx);
            self.now += 1;
            return self.watchdog();
        }
        {
            let rng: &mut dyn routing::Draw = match self.bs.as_mut() {
                Some(b) => b,
                None => &mut self.route_stream,
            };
            let mut ctx = Ctx { topo: &self.topo, routing: &*self.routing, vcmap: self.vcmap, packets: &mut self.packets, rng };
            self.routers.step_all(t, steps, &mut ctx);
        }
        for i in 0..self.routers.act.len() {
            let r = self.routers.act[i] as usize;
            if self.routers.list[r].pending_out > 0 {
                self.write_outputs(r);
            }
        }
        self.routers.end_cycle();
        self.now += 1;
        self.watchdog()
    }
}
