//! Input-queued virtual-channel router with credit-based flow control (the timing of
//! BookSim2's `iq` router, re-implemented).
//!
//! Per internal step, in this order: route computation (when routing_delay > 0), VC
//! allocation, switch allocation and crossbar are *evaluated*, then their results *update*
//! the state. An entry queued during an update is only evaluated in the next step; that
//! ordering is what gives the pipeline its cycle counts (lookahead routing, 1-cycle VA, 1-cycle
//! SA, 1-cycle ST: a head flit arriving in cycle T leaves on the output channel at the end of
//! T+2). Allocators are separable input-first with round-robin arbiters; the switch
//! allocator picks one VC per (input, output) pair by a per-input round-robin offset.
//! Wormhole switching: a VC holds its output VC from head to tail; with
//! `wait_for_tail_credit` off the output VC is free again as soon as the tail is sent.
//!
//! All state is in flat arrays indexed by global port / VC numbers; the steady state
//! allocates nothing.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::config::RouterConfig;
use crate::fifo::Fifo;

mod alloc;
use crate::packet::{Flit, PacketSlab, RouteSet};
use crate::routing::{Draw, RoutingFunction, VcMap};
use crate::spin_pool::SpinPool;
use crate::topology::{End, Topology};

pub const IDLE: u8 = 0;
pub const ROUTING: u8 = 1;
pub const VC_ALLOC: u8 = 2;
pub const ACTIVE: u8 = 3;

const STALL_BUSY: i32 = -2;
const STALL_CONFLICT: i32 = -3;
const STALL_FULL: i32 = -4;

/// A pipeline entry: input VC waiting in a stage; `time` -1 = not yet evaluated.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: i64,
    input: u16,
    vc: u8,
    res: i32,
}

/// Entries not yet evaluated this stage carry a negative time and sit at the front of the
/// queue: their count.
#[inline]
fn unevaluated_prefix(qs: &[Entry]) -> usize {
    qs.iter().position(|e| e.time >= 0).unwrap_or(qs.len())
}

#[derive(Clone, Copy, Debug)]
struct XEntry {
    time: i64,
    flit: Flit,
    vc: u8,
    out: u16,
}

/// Timing and flow-control settings shared by every router.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub v: usize,
    pub buf: usize,
    routing_delay: i64,
    vc_alloc_delay: i64,
    sw_alloc_delay: i64,
    st_delay: i64,
    wait_for_tail_credit: bool,
    /// Every stage takes one step and routes are looked ahead, so that a step leaves no
    /// entry half way and a step that grants nothing changes nothing (see `Router::quiet`).
    quiet_ok: bool,
}

/// One router. Its state lives in arrays of its own, indexed by local port / VC numbers, so
/// that a router's working set sits together in memory and routers can step on different
/// threads without sharing anything they write.
pub struct Router {
    pub radix: usize,
    // Per input VC (port * v + vc).
    q_data: Vec<Flit>,
    q_head: Vec<u16>,
    pub q_len: Vec<u16>,
    pub state: Vec<u8>,
    route: Vec<RouteSet>,
    out_port: Vec<u16>,
    out_vc: Vec<u8>,
    vc_in_ptr: Vec<u16>,
    // Per output VC.
    ovc_in_use: Vec<bool>,
    ovc_tail_sent: Vec<bool>,
    pub ovc_occ: Vec<u16>,
    vc_out_ptr: Vec<u16>,
    // Per output port.
    pub out_q: Vec<VecDeque<(Flit, u8)>>,
    pub out_used: Vec<u32>,
    pub out_busy_until: Vec<u64>,
    sw_out_ptr: Vec<u16>,
    // Per input port.
    pub cred_q: Vec<VecDeque<u8>>,
    sw_in_ptr: Vec<u16>,
    sw_rr_offset: Vec<u8>,
    route_q: Fifo<Entry>,
    vc_q: Fifo<Entry>,
    sw_q: Fifo<Entry>,
    xbar_q: Fifo<XEntry>,
    /// Items waiting in out_q / cred_q (to skip idle routers cheaply).
    pub pending_out: u32,
    /// Bit p set when out_q[p] or cred_q[p] may hold something: the output stage visits only
    /// those ports (cleared there once both are empty).
    pub pend_ports: Vec<u64>,
    /// Head flits that left this step, (packet, output port): their hop count and lookahead
    /// route are computed afterwards, serially in router order, so that routing's random
    /// draws keep BookSim2's order whichever thread stepped the router.
    pub sent_heads: Vec<(u32, u16)>,
    /// The last internal step granted nothing and found the crossbar empty, and no flit or
    /// credit has arrived since: the next step would do exactly what that one did (evaluate
    /// the same requests against the same state, lose them all, queue them again in the same
    /// order), so it is skipped. Only with one-cycle stages and lookahead routing (`quiet_ok`).
    quiet: bool,
}

/// Allocation scratch, sized for the largest router: one per thread.
#[derive(Clone)]
pub struct Scratch {
    s_chosen: Vec<i32>,
    s_best: Vec<i32>,
    s_best_dist: Vec<u32>,
    s_touched: Vec<u32>,
    s_req: Vec<i16>,
    s_req_touched: Vec<u32>,
    s_in_choice: Vec<i32>,
    s_out_best: Vec<i32>,
    s_out_dist: Vec<u32>,
}

impl Scratch {
    pub fn new(max_radix: usize, v: usize) -> Self {
        Self {
            s_chosen: vec![0; max_radix * v],
            s_best: vec![-1; max_radix * v],
            s_best_dist: vec![0; max_radix * v],
            s_touched: Vec::with_capacity(max_radix * v),
            s_req: vec![-1; max_radix * max_radix],
            s_req_touched: Vec::with_capacity(max_radix * max_radix),
            s_in_choice: vec![-1; max_radix],
            s_out_best: vec![-1; max_radix],
            s_out_dist: vec![0; max_radix],
        }
    }
}

/// Where a head's route comes from inside a router step: the lookahead route its packet
/// carries (routing_delay 0; read only, so routers may step in parallel), or a route
/// computation stage that calls the routing function (routing_delay > 0; serial only).
pub enum Src<'a, 'b> {
    Lookahead(&'a PacketSlab),
    Route(&'a mut Ctx<'b>),
}

impl Src<'_, '_> {
    #[inline]
    fn packets(&self) -> &PacketSlab {
        match self {
            Src::Lookahead(p) => p,
            Src::Route(c) => c.packets,
        }
    }
}

/// `x mod n` for `x < 2n` without a division (arbitration pointers and ring indices).
#[inline(always)]
fn wrap(x: usize, n: usize) -> usize {
    if x >= n { x - n } else { x }
}

/// What a router step needs from the rest of the simulator.
pub struct Ctx<'a> {
    pub topo: &'a Topology,
    pub routing: &'a dyn RoutingFunction,
    pub vcmap: VcMap,
    pub packets: &'a mut PacketSlab,
    /// Draws made while routing (BookSim2's global generator, or a network stream).
    pub rng: &'a mut dyn Draw,
}

impl Params {
    pub fn new(cfg: &RouterConfig) -> Self {
        Self {
            v: cfg.num_vcs,
            buf: cfg.vc_buf_size,
            routing_delay: cfg.routing_delay as i64,
            vc_alloc_delay: cfg.vc_alloc_delay as i64,
            sw_alloc_delay: cfg.sw_alloc_delay as i64,
            st_delay: cfg.st_delay as i64,
            wait_for_tail_credit: cfg.wait_for_tail_credit,
            quiet_ok: cfg.routing_delay == 0 && cfg.vc_alloc_delay == 1 && cfg.sw_alloc_delay == 1 && cfg.st_delay == 1,
        }
    }

    /// Routers may step in parallel only when no route computation stage draws inside them.
    pub fn lookahead(&self) -> bool {
        self.routing_delay == 0
    }
}

impl Router {
    pub fn new(radix: usize, p: &Params) -> Self {
        let ivcs = radix * p.v;
        Self {
            radix,
            q_data: vec![Flit::default(); ivcs * p.buf],
            q_head: vec![0; ivcs],
            q_len: vec![0; ivcs],
            state: vec![IDLE; ivcs],
            route: vec![RouteSet::default(); ivcs],
            out_port: vec![0; ivcs],
            out_vc: vec![0; ivcs],
            vc_in_ptr: vec![0; ivcs],
            ovc_in_use: vec![false; ivcs],
            ovc_tail_sent: vec![false; ivcs],
            ovc_occ: vec![0; ivcs],
            vc_out_ptr: vec![0; ivcs],
            out_q: (0..radix).map(|_| VecDeque::new()).collect(),
            out_used: vec![0; radix],
            out_busy_until: vec![0; radix],
            sw_out_ptr: vec![0; radix],
            cred_q: (0..radix).map(|_| VecDeque::new()).collect(),
            sw_in_ptr: vec![0; radix],
            sw_rr_offset: vec![0; radix],
            route_q: Fifo::default(),
            vc_q: Fifo::default(),
            sw_q: Fifo::default(),
            xbar_q: Fifo::default(),
            pending_out: 0,
            pend_ports: vec![0; radix.div_ceil(64)],
            sent_heads: Vec::new(),
            quiet: false,
        }
    }

    /// True when the router has nothing to evaluate in an internal step.
    #[inline]
    pub fn idle(&self) -> bool {
        self.vc_q.is_empty() && self.sw_q.is_empty() && self.xbar_q.is_empty() && self.route_q.is_empty()
    }

    /// Flits buffered anywhere inside the router (conservation check).
    pub fn buffered_flits(&self) -> u64 {
        let inq: u64 = self.q_len.iter().map(|&x| x as u64).sum();
        let outq: u64 = self.out_q.iter().map(|q| q.len() as u64).sum();
        inq + outq + self.xbar_q.len() as u64
    }

    pub fn credits_outstanding(&self) -> u64 {
        self.ovc_occ.iter().map(|&x| x as u64).sum::<u64>() + self.cred_q.iter().map(|q| q.len() as u64).sum::<u64>()
    }

    /// A flit arrives on input port `input` (BookSim's input queuing).
    pub fn receive_flit(&mut self, p: &Params, input: usize, flit: Flit, vc: usize, packets: &PacketSlab) {
        let ivc = input * p.v + vc;
        let len = self.q_len[ivc] as usize;
        debug_assert!(len < p.buf, "input buffer overflow: credits broken");
        self.quiet = false;
        let slot = wrap(self.q_head[ivc] as usize + len, p.buf);
        self.q_data[ivc * p.buf + slot] = flit;
        self.q_len[ivc] += 1;
        let input = input as u16;
        match self.state[ivc] {
            IDLE => {
                debug_assert!(flit.head());
                self.start_head(p, ivc, input, vc as u8, flit, packets);
            }
            ACTIVE if len == 0 => {
                self.sw_q.push_back(Entry { time: -1, input, vc: vc as u8, res: -1 });
            }
            _ => {}
        }
    }

    fn start_head(&mut self, p: &Params, ivc: usize, input: u16, vc: u8, flit: Flit, packets: &PacketSlab) {
        if p.routing_delay > 0 {
            self.state[ivc] = ROUTING;
            self.route_q.push_back(Entry { time: -1, input, vc, res: -1 });
        } else {
            self.route[ivc] = packets.get(flit.pkt()).la;
            self.state[ivc] = VC_ALLOC;
            self.vc_q.push_back(Entry { time: -1, input, vc, res: -1 });
        }
    }

    /// A credit for output VC `vc` of output port `port` is processed.
    #[inline]
    pub fn receive_credit(&mut self, p: &Params, port: usize, vc: usize) {
        let ovc = port * p.v + vc;
        debug_assert!(self.ovc_occ[ovc] > 0);
        self.quiet = false;
        self.ovc_occ[ovc] -= 1;
        self.out_used[port] -= 1;
        if p.wait_for_tail_credit && self.ovc_occ[ovc] == 0 && self.ovc_tail_sent[ovc] {
            self.ovc_in_use[ovc] = false;
        }
    }

    #[inline]
    fn front(&self, buf: usize, ivc: usize) -> Flit {
        self.q_data[ivc * buf + self.q_head[ivc] as usize]
    }

    /// `steps` internal steps at cycle `now`, stopping early once the router is idle.
    #[inline]
    pub fn step_n(&mut self, r: usize, pr: &Params, s: &mut Scratch, now: u64, steps: usize, packets: &PacketSlab) {
        let mut src = Src::Lookahead(packets);
        for _ in 0..steps {
            if self.idle() {
                break;
            }
            self.step(r, pr, s, now, &mut src);
        }
    }

    /// One internal step at cycle `now`. `r` is the router's number (for routing).
    pub fn step(&mut self, r: usize, pr: &Params, s: &mut Scratch, now: u64, src: &mut Src) {
        if self.quiet {
            return;
        }
        let now = now as i64;
        // ---- route computation (only with routing_delay > 0) ----
        if pr.routing_delay > 0 {
            for e in self.route_q.iter_mut() {
                if e.time >= 0 {
                    break;
                }
                e.time = now + pr.routing_delay - 1;
            }
        }

        let xbar_empty = self.xbar_q.is_empty();
        let vc_grants = self.eval_vc_alloc(pr, s, now);
        let sw_grants = self.eval_sw_alloc(pr, s, now);
        // ---- crossbar: evaluate ----
        for x in self.xbar_q.iter_mut() {
            if x.time >= 0 {
                break;
            }
            x.time = now + pr.st_delay - 1;
        }

        self.update(r, pr, now, src);
        self.quiet = pr.quiet_ok && xbar_empty && !vc_grants && !sw_grants;
    }

    /// The stages' results update the state, in pipeline order.
    fn update(&mut self, r: usize, pr: &Params, now: i64, src: &mut Src) {
        let v = pr.v;
        // ---- route computation: update ----
        if pr.routing_delay > 0 {
            while let Some(&e) = self.route_q.front() {
                if e.time < 0 || now < e.time {
                    break;
                }
                self.route_q.pop_front();
                let ivc = e.input as usize * v + e.vc as usize;
                let f = self.front(pr.buf, ivc);
                let Src::Route(ctx) = src else { unreachable!("a route stage needs the routing function") };
                let p = ctx.packets.get_mut(f.pkt());
                let (port, class) = ctx.routing.route(r, e.input as usize, &mut p.route, ctx.rng);
                let (lo, hi) = ctx.vcmap.range(p.msg as usize, class);
                self.route[ivc] = RouteSet { port: port as u16, vc_lo: lo, vc_hi: hi };
                self.state[ivc] = VC_ALLOC;
                self.vc_q.push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            }
        }

        // ---- VC allocation: update ----
        while let Some(&e) = self.vc_q.front() {
            if e.time < 0 || now < e.time {
                break;
            }
            self.vc_q.pop_front();
            if e.res >= 0 {
                let ivc = e.input as usize * v + e.vc as usize;
                let o_l = e.res as usize;
                let ovc = o_l;
                debug_assert!(!self.ovc_in_use[ovc]);
                self.ovc_in_use[ovc] = true;
                self.ovc_tail_sent[ovc] = false;
                self.out_port[ivc] = (o_l / v) as u16;
                self.out_vc[ivc] = (o_l % v) as u8;
                self.state[ivc] = ACTIVE;
                self.sw_q.push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            } else {
                self.vc_q.push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            }
        }

        // ---- switch allocation: update ----
        while let Some(&e) = self.sw_q.front() {
            if e.time < 0 || now < e.time {
                break;
            }
            self.sw_q.pop_front();
            if e.res < 0 {
                self.sw_q.push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
                continue;
            }
            let input = e.input as usize;
            let gin = input;
            let ivc = gin * v + e.vc as usize;
            let out = e.res as usize;
            let ov = self.out_vc[ivc];
            let f = self.front(pr.buf, ivc);
            self.q_len[ivc] -= 1;
            // An empty ring restarts at slot 0: deep buffers then touch only the few cache
            // lines they actually use instead of cycling through all of their memory.
            self.q_head[ivc] = if self.q_len[ivc] == 0 { 0 } else { wrap(self.q_head[ivc] as usize + 1, pr.buf) as u16 };
            if f.head() {
                self.sent_heads.push((f.pkt(), out as u16));
            }
            let ovc = out * v + ov as usize;
            self.ovc_occ[ovc] += 1;
            self.out_used[out] += 1;
            if f.tail() {
                self.ovc_tail_sent[ovc] = true;
                if !pr.wait_for_tail_credit {
                    self.ovc_in_use[ovc] = false;
                }
            }
            self.xbar_q.push_back(XEntry { time: -1, flit: f, vc: ov, out: out as u16 });
            self.cred_q[gin].push_back(e.vc);
            self.pend_ports[gin / 64] |= 1 << (gin % 64);
            self.pending_out += 1;
            if self.q_len[ivc] == 0 {
                if f.tail() {
                    self.state[ivc] = IDLE;
                }
            } else if f.tail() {
                let nf = self.front(pr.buf, ivc);
                self.start_head(pr, ivc, e.input, e.vc, nf, src.packets());
            } else {
                self.sw_q.push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            }
        }

        // ---- crossbar: update ----
        while let Some(&x) = self.xbar_q.front() {
            if x.time < 0 || now < x.time {
                break;
            }
            self.xbar_q.pop_front();
            self.out_q[x.out as usize].push_back((x.flit, x.vc));
            self.pend_ports[x.out as usize / 64] |= 1 << (x.out % 64);
            self.pending_out += 1;
        }
    }
}

/// Below this many routers a step is a few microseconds of work and the per-cycle handover to
/// a second thread costs more than it saves (measured: see docs/memnet-network.md, Speed).
pub const PARALLEL_MIN_ROUTERS: usize = 128;

/// Shares per thread (see [`Routers::shares`]).
const SHARES_PER_THREAD: usize = 4;

/// Every router of a network, stepped serially or on a fixed pool of threads.
pub struct Routers {
    pub p: Params,
    pub list: Vec<Router>,
    /// Global port base per router; ports of r are base[r]..base[r+1] (statistics and the
    /// event wheel number ports globally).
    pub base: Vec<usize>,
    scratch: Vec<Scratch>,
    pool: Option<SpinPool>,
    /// Serial stepping: bit r set when router r may have work (a flit arrived since it was
    /// last found idle), so that a lightly loaded network (the memory system's: a few
    /// packets among 64 routers) does not visit every router every cycle.
    active: Vec<u64>,
    /// This cycle's routers to visit, in router order (every router on the pool).
    pub act: Vec<u32>,
    /// Keep `active` (see [`Routers::track_active`]); otherwise every router is visited.
    track: bool,
}

impl Routers {
    /// `threads` > 1 steps routers on that many threads when the network has at least
    /// [`PARALLEL_MIN_ROUTERS`] routers and no route computation stage.
    pub fn new(topo: &Topology, cfg: &RouterConfig, threads: usize) -> Self {
        Self::with_threshold(topo, cfg, threads, PARALLEL_MIN_ROUTERS)
    }

    /// As [`Routers::new`] with another size threshold (tests step small networks in parallel).
    pub fn with_threshold(topo: &Topology, cfg: &RouterConfig, threads: usize, min_routers: usize) -> Self {
        let p = Params::new(cfg);
        let mut base = Vec::with_capacity(topo.routers + 1);
        let mut acc = 0;
        let mut max_radix = 0;
        for r in 0..topo.routers {
            base.push(acc);
            acc += topo.radix(r);
            max_radix = max_radix.max(topo.radix(r));
        }
        base.push(acc);
        let threads = if topo.routers >= min_routers && p.lookahead() { threads.clamp(1, topo.routers) } else { 1 };
        let pool = if threads > 1 { SpinPool::new(threads, "memnet-router").ok() } else { None };
        let threads = if pool.is_some() { threads } else { 1 };
        Self {
            p,
            list: (0..topo.routers).map(|r| Router::new(topo.radix(r), &p)).collect(),
            base,
            scratch: vec![Scratch::new(max_radix, p.v); threads],
            pool,
            active: vec![0; topo.routers.div_ceil(64)],
            act: Vec::new(),
            track: false,
        }
    }

    /// Visit only routers with work when stepping serially: worth it where most routers
    /// are idle most cycles (the memory system's network: 9.5 -> 3.0 G instructions on a
    /// 20,000-record trace), a few percent lost where nearly all are busy (synthetic loads).
    pub fn track_active(&mut self) {
        self.track = self.pool.is_none();
        self.mark_all();
    }

    /// Router r has work (a flit arrived).
    #[inline]
    pub fn mark(&mut self, r: usize) {
        self.active[r / 64] |= 1 << (r % 64);
    }

    /// Every router may have work (after stepping on the pool).
    pub fn mark_all(&mut self) {
        for r in 0..self.list.len() {
            self.mark(r);
        }
    }

    /// No router has work (serial stepping; at a cycle's end).
    pub fn none_active(&self) -> bool {
        self.track && self.active.iter().all(|&w| w == 0)
    }

    /// The routers this cycle visits, in order, into `act`.
    pub fn begin_cycle(&mut self) {
        if !self.track {
            if self.act.len() != self.list.len() {
                self.act.clear();
                self.act.extend(0..self.list.len() as u32);
            }
            return;
        }
        self.act.clear();
        for (w, &bits) in self.active.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                self.act.push((w * 64) as u32 + b.trailing_zeros());
                b &= b - 1;
            }
        }
    }

    /// Forgets the routers this cycle left with nothing to do.
    pub fn end_cycle(&mut self) {
        if !self.track {
            return;
        }
        for &r in &self.act {
            let rt = &self.list[r as usize];
            if rt.idle() && rt.pending_out == 0 {
                self.active[r as usize / 64] &= !(1 << (r % 64));
            }
        }
    }

    #[inline]
    pub fn n(&self) -> usize {
        self.list.len()
    }

    /// Threads the routers step on (1 = serial).
    pub fn threads(&self) -> usize {
        self.scratch.len()
    }

    pub fn buffered_flits(&self) -> u64 {
        self.list.iter().map(Router::buffered_flits).sum()
    }

    pub fn credits_outstanding(&self) -> u64 {
        self.list.iter().map(Router::credits_outstanding).sum()
    }

    pub fn any_pending_out(&self) -> bool {
        self.list.iter().any(|r| r.pending_out > 0)
    }

    pub fn all_vcs_idle(&self) -> bool {
        self.list.iter().all(|r| r.state.iter().all(|&s| s == IDLE))
    }

    /// `steps` internal steps of every router at cycle `now`, then the heads that left them
    /// count their hop and get their next lookahead route, serially in router order (the
    /// merge that keeps every random draw in the order a serial run makes it).
    pub fn step_all(&mut self, now: u64, steps: usize, ctx: &mut Ctx) {
        let p = self.p;
        match (&self.pool, p.lookahead()) {
            (Some(pool), true) => {
                let packets: &PacketSlab = ctx.packets;
                let chunk = self.list.len().div_ceil(self.scratch.len());
                let step_chunk = |first: usize, rs: &mut [Router], s: &mut Scratch| {
                    let mut src = Src::Lookahead(packets);
                    for (j, rt) in rs.iter_mut().enumerate() {
                        for _ in 0..steps {
                            if rt.idle() {
                                break;
                            }
                            rt.step(first + j, &p, s, now, &mut src);
                        }
                    }
                };
                // Thread k steps chunk k first, then any chunk not yet taken: a worker the
                // machine delays past the caller's chunk does not join, and the caller steps
                // its chunk too (each chunk keeps its own scratch, whoever steps it).
                // (first router, routers, scratch, done)
                type Part<'a> = Mutex<(usize, &'a mut [Router], &'a mut Scratch, bool)>;
                let parts: Vec<Part> = self
                    .list
                    .chunks_mut(chunk)
                    .zip(self.scratch.iter_mut())
                    .enumerate()
                    .map(|(i, (rs, s))| Mutex::new((i * chunk, rs, s, false)))
                    .collect();
                let n = parts.len();
                pool.run(&|k| {
                    for i in (k..n).chain(0..k.min(n)) {
                        let Ok(mut g) = parts[i].try_lock() else { continue };
                        let (first, rs, s, done) = &mut *g;
                        if !*done {
                            step_chunk(*first, rs, s);
                            *done = true;
                        }
                    }
                });
            }
            _ => {
                let s = &mut self.scratch[0];
                for &r in &self.act {
                    let r = r as usize;
                    let rt = &mut self.list[r];
                    for _ in 0..steps {
                        if rt.idle() {
                            break;
                        }
                        if p.lookahead() {
                            rt.step(r, &p, s, now, &mut Src::Lookahead(ctx.packets));
                        } else {
                            rt.step(r, &p, s, now, &mut Src::Route(ctx));
                        }
                    }
                }
            }
        }
        self.finish_heads(ctx);
    }

    /// Shares of routers a cycle is cut into on the pool: a few per thread, taken by
    /// whichever thread is free, so that a thread the machine delays (or one that finished
    /// early) does not hold the others up. Results do not depend on who steps a share.
    pub fn shares(&self) -> usize {
        (self.scratch.len() * SHARES_PER_THREAD).min(self.list.len())
    }

    /// Routers per share (share i holds routers i*len..).
    pub fn share_len(&self) -> usize {
        self.list.len().div_ceil(self.shares())
    }

    /// True when routers step on a pool (more than one thread).
    pub fn parallel(&self) -> bool {
        self.pool.is_some() && self.p.lookahead()
    }

    /// Runs `extra` and `f(first_router, routers, scratch, share)` for every share of
    /// routers on the calling thread and the pool's. Thread k takes its own run of shares
    /// first (the same routers every cycle, so their state stays in that core's cache), then
    /// any share not yet taken; pool threads take `extra` before their shares, the calling
    /// thread after. Shares write only their own routers and `C`.
    pub fn for_each_share<C: Send>(
        &mut self,
        ctxs: &mut [C],
        f: &(dyn Fn(usize, &mut [Router], &mut Scratch, &mut C) + Sync),
        extra: Option<&mut (dyn FnMut() + Send)>,
    ) {
        let chunk = self.share_len();
        let pool = self.pool.as_ref().expect("shares step on the pool");
        // (first router, routers, share context, done)
        type Cell<'a, C> = Mutex<(usize, &'a mut [Router], &'a mut C, bool)>;
        let cells: Vec<Cell<C>> = self
            .list
            .chunks_mut(chunk)
            .zip(ctxs.iter_mut())
            .enumerate()
            .map(|(i, (rs, c))| Mutex::new((i * chunk, rs, c, false)))
            .collect();
        let extra = Mutex::new(extra);
        let run_extra = || {
            if let Ok(mut g) = extra.try_lock() {
                if let Some(x) = g.take() {
                    x();
                }
            }
        };
        let threads = self.scratch.len();
        let n = cells.len();
        let work = |k: usize, s: &mut Scratch| {
            if k > 0 {
                run_extra();
            }
            let start = k * n / threads;
            for i in (start..n).chain(0..start) {
                // A share another thread holds is being stepped: skip it.
                let Ok(mut g) = cells[i].try_lock() else { continue };
                let (first, rs, c, done) = &mut *g;
                if !*done {
                    f(*first, rs, s, c);
                    *done = true;
                }
            }
            if k == 0 {
                run_extra();
            }
        };
        let scratch: Vec<Mutex<&mut Scratch>> = self.scratch.iter_mut().map(Mutex::new).collect();
        pool.run(&|k| {
            let mut s = scratch[k].lock().unwrap_or_else(|e| e.into_inner());
            work(k, &mut s);
        });
    }

    /// Heads that left routers this cycle count their hop and get their next lookahead
    /// route, serially in router order: the merge that keeps every random draw in the order
    /// a serial run makes it, whichever thread stepped the router.
    pub fn finish_heads(&mut self, ctx: &mut Ctx) {
        let p = self.p;
        for i in 0..self.act.len() {
            let r = self.act[i] as usize;
            if self.list[r].sent_heads.is_empty() {
                continue;
            }
            let mut heads = std::mem::take(&mut self.list[r].sent_heads);
            for &(pkt, out) in &heads {
                ctx.packets.get_mut(pkt).hops += 1;
                if p.lookahead() {
                    lookahead(ctx, r, out as usize, pkt);
                }
            }
            heads.clear();
            self.list[r].sent_heads = heads;
        }
    }
}

/// The route a head that left router `r` on port `out` takes at the next router.
fn lookahead(ctx: &mut Ctx, r: usize, out: usize, pkt: u32) {
    let link = ctx.topo.out[r][out];
    let p = ctx.packets.get_mut(pkt);
    match link.to {
        End::Router { r: nr, port } => {
            let (port_out, class) = ctx.routing.route(nr as usize, port as usize, &mut p.route, ctx.rng);
            let (lo, hi) = ctx.vcmap.range(p.msg as usize, class);
            p.la = RouteSet { port: port_out as u16, vc_lo: lo, vc_hi: hi };
        }
        _ => p.la = RouteSet::default(),
    }
}
