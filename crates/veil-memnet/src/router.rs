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

use crate::config::RouterConfig;
use crate::packet::{Flit, PacketSlab, RouteSet};
use crate::routing::{Draw, RoutingFunction, VcMap};
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

pub struct Routers {
    pub v: usize,
    pub buf: usize,
    pub n: usize,
    routing_delay: i64,
    vc_alloc_delay: i64,
    sw_alloc_delay: i64,
    st_delay: i64,
    wait_for_tail_credit: bool,
    /// Global port base per router; ports of r are base[r]..base[r+1].
    pub base: Vec<usize>,
    // Per input VC (global port * v + vc).
    q_data: Vec<Flit>,
    q_head: Vec<u16>,
    pub q_len: Vec<u16>,
    pub state: Vec<u8>,
    route: Vec<RouteSet>,
    out_port: Vec<u16>,
    out_vc: Vec<u8>,
    vc_in_ptr: Vec<u32>,
    // Per output VC.
    ovc_in_use: Vec<bool>,
    ovc_tail_sent: Vec<bool>,
    pub ovc_occ: Vec<u16>,
    vc_out_ptr: Vec<u32>,
    // Per output port.
    pub out_q: Vec<VecDeque<(Flit, u8)>>,
    pub out_used: Vec<u32>,
    pub out_busy_until: Vec<u64>,
    sw_out_ptr: Vec<u32>,
    // Per input port.
    pub cred_q: Vec<VecDeque<u8>>,
    sw_in_ptr: Vec<u32>,
    sw_rr_offset: Vec<u8>,
    // Per router.
    route_q: Vec<VecDeque<Entry>>,
    vc_q: Vec<VecDeque<Entry>>,
    sw_q: Vec<VecDeque<Entry>>,
    xbar_q: Vec<VecDeque<XEntry>>,
    /// Items waiting in out_q / cred_q of each router (to skip idle routers cheaply).
    pub pending_out: Vec<u32>,
    // Scratch, sized for the largest router.
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

impl Routers {
    pub fn new(topo: &Topology, cfg: &RouterConfig) -> Self {
        let v = cfg.num_vcs;
        let buf = cfg.vc_buf_size;
        let mut base = Vec::with_capacity(topo.routers + 1);
        let mut acc = 0;
        let mut max_radix = 0;
        for r in 0..topo.routers {
            base.push(acc);
            acc += topo.radix(r);
            max_radix = max_radix.max(topo.radix(r));
        }
        base.push(acc);
        let ports = acc;
        let ivcs = ports * v;
        Self {
            v,
            buf,
            n: topo.routers,
            routing_delay: cfg.routing_delay as i64,
            vc_alloc_delay: cfg.vc_alloc_delay as i64,
            sw_alloc_delay: cfg.sw_alloc_delay as i64,
            st_delay: cfg.st_delay as i64,
            wait_for_tail_credit: cfg.wait_for_tail_credit,
            base,
            q_data: vec![Flit::default(); ivcs * buf],
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
            out_q: (0..ports).map(|_| VecDeque::new()).collect(),
            out_used: vec![0; ports],
            out_busy_until: vec![0; ports],
            sw_out_ptr: vec![0; ports],
            cred_q: (0..ports).map(|_| VecDeque::new()).collect(),
            sw_in_ptr: vec![0; ports],
            sw_rr_offset: vec![0; ports],
            route_q: (0..topo.routers).map(|_| VecDeque::new()).collect(),
            vc_q: (0..topo.routers).map(|_| VecDeque::new()).collect(),
            sw_q: (0..topo.routers).map(|_| VecDeque::new()).collect(),
            xbar_q: (0..topo.routers).map(|_| VecDeque::new()).collect(),
            pending_out: vec![0; topo.routers],
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

    #[inline]
    pub fn radix(&self, r: usize) -> usize {
        self.base[r + 1] - self.base[r]
    }

    /// True when the router has nothing to evaluate in an internal step.
    #[inline]
    pub fn idle(&self, r: usize) -> bool {
        self.vc_q[r].is_empty() && self.sw_q[r].is_empty() && self.xbar_q[r].is_empty() && self.route_q[r].is_empty()
    }

    /// Flits buffered anywhere inside routers (conservation check).
    pub fn buffered_flits(&self) -> u64 {
        let inq: u64 = self.q_len.iter().map(|&x| x as u64).sum();
        let outq: u64 = self.out_q.iter().map(|q| q.len() as u64).sum();
        let xb: u64 = self.xbar_q.iter().map(|q| q.len() as u64).sum();
        inq + outq + xb
    }

    pub fn credits_outstanding(&self) -> u64 {
        self.ovc_occ.iter().map(|&x| x as u64).sum::<u64>() + self.cred_q.iter().map(|q| q.len() as u64).sum::<u64>()
    }

    /// A flit arrives on global input port `gp` (BookSim's input queuing).
    pub fn receive_flit(&mut self, r: usize, gp: usize, flit: Flit, vc: usize, packets: &PacketSlab) {
        let ivc = gp * self.v + vc;
        let len = self.q_len[ivc] as usize;
        debug_assert!(len < self.buf, "input buffer overflow: credits broken");
        let slot = wrap(self.q_head[ivc] as usize + len, self.buf);
        self.q_data[ivc * self.buf + slot] = flit;
        self.q_len[ivc] += 1;
        let input = (gp - self.base[r]) as u16;
        match self.state[ivc] {
            IDLE => {
                debug_assert!(flit.head());
                self.start_head(r, ivc, input, vc as u8, flit, packets);
            }
            ACTIVE if len == 0 => {
                self.sw_q[r].push_back(Entry { time: -1, input, vc: vc as u8, res: -1 });
            }
            _ => {}
        }
    }

    fn start_head(&mut self, r: usize, ivc: usize, input: u16, vc: u8, flit: Flit, packets: &PacketSlab) {
        if self.routing_delay > 0 {
            self.state[ivc] = ROUTING;
            self.route_q[r].push_back(Entry { time: -1, input, vc, res: -1 });
        } else {
            self.route[ivc] = packets.get(flit.pkt()).la;
            self.state[ivc] = VC_ALLOC;
            self.vc_q[r].push_back(Entry { time: -1, input, vc, res: -1 });
        }
    }

    /// A credit for output VC `vc` of global output port `gp` is processed.
    #[inline]
    pub fn receive_credit(&mut self, gp: usize, vc: usize) {
        let ovc = gp * self.v + vc;
        debug_assert!(self.ovc_occ[ovc] > 0);
        self.ovc_occ[ovc] -= 1;
        self.out_used[gp] -= 1;
        if self.wait_for_tail_credit && self.ovc_occ[ovc] == 0 && self.ovc_tail_sent[ovc] {
            self.ovc_in_use[ovc] = false;
        }
    }

    #[inline]
    fn front(&self, ivc: usize) -> Flit {
        self.q_data[ivc * self.buf + self.q_head[ivc] as usize]
    }

    fn lookahead(&self, ctx: &mut Ctx, r: usize, out: usize, pkt: u32) {
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

    /// One internal step of router `r` at cycle `now`.
    pub fn step(&mut self, r: usize, now: u64, ctx: &mut Ctx) {
        let now = now as i64;
        let v = self.v;
        let base = self.base[r];
        let radix = self.radix(r);
        let nvc = radix * v;

        // ---- route computation (only with routing_delay > 0) ----
        if self.routing_delay > 0 {
            for e in self.route_q[r].iter_mut() {
                if e.time >= 0 {
                    break;
                }
                e.time = now + self.routing_delay - 1;
            }
        }

        // ---- VC allocation: evaluate ----
        // Work on a contiguous slice of the queue (put back below): no per-access wrapping.
        let mut q = std::mem::take(&mut self.vc_q[r]);
        let qs = q.make_contiguous();
        let n_new = unevaluated_prefix(qs);
        if n_new > 0 {
            self.s_touched.clear();
            for i in 0..n_new {
                let e = qs[i];
                let ivc_l = e.input as usize * v + e.vc as usize;
                let ivc = base * v + ivc_l;
                let rs = self.route[ivc];
                let ptr = self.vc_in_ptr[ivc];
                let mut best = -1i32;
                let mut best_d = u32::MAX;
                for ov in rs.vc_lo..=rs.vc_hi {
                    let o_l = rs.port as usize * v + ov as usize;
                    if self.ovc_in_use[base * v + o_l] {
                        continue;
                    }
                    let d = wrap(o_l + nvc - ptr as usize, nvc) as u32;
                    if d < best_d {
                        best_d = d;
                        best = o_l as i32;
                    }
                }
                self.s_chosen[i] = best;
                if best < 0 {
                    qs[i].res = STALL_BUSY;
                    continue;
                }
                let o_l = best as usize;
                let d = wrap(ivc_l + nvc - self.vc_out_ptr[base * v + o_l] as usize, nvc) as u32;
                if self.s_best[o_l] < 0 {
                    self.s_touched.push(o_l as u32);
                    self.s_best[o_l] = ivc_l as i32;
                    self.s_best_dist[o_l] = d;
                } else if d < self.s_best_dist[o_l] {
                    self.s_best[o_l] = ivc_l as i32;
                    self.s_best_dist[o_l] = d;
                }
            }
            for &o_l in &self.s_touched {
                let w = self.s_best[o_l as usize] as usize;
                self.vc_out_ptr[base * v + o_l as usize] = wrap(w + 1, nvc) as u32;
                self.vc_in_ptr[base * v + w] = wrap(o_l as usize + 1, nvc) as u32;
            }
            for i in 0..n_new {
                let e = &mut qs[i];
                e.time = now + self.vc_alloc_delay - 1;
                if e.res < -1 {
                    continue;
                }
                let ivc_l = e.input as usize * v + e.vc as usize;
                let c = self.s_chosen[i];
                e.res = if self.s_best[c as usize] == ivc_l as i32 { c } else { STALL_CONFLICT };
            }
            for &o_l in &self.s_touched {
                self.s_best[o_l as usize] = -1;
            }
            if self.vc_alloc_delay > 1 {
                for i in 0..qs.len() {
                    let e = qs[i];
                    if now < e.time {
                        break;
                    }
                    if e.res >= 0 && self.ovc_in_use[base * v + e.res as usize] {
                        qs[i].res = STALL_BUSY;
                    }
                }
            }
        }

        self.vc_q[r] = q;

        // ---- switch allocation: evaluate ----
        let mut q = std::mem::take(&mut self.sw_q[r]);
        let qs = q.make_contiguous();
        let n_new = unevaluated_prefix(qs);
        if n_new > 0 {
            self.s_req_touched.clear();
            for i in 0..n_new {
                let e = qs[i];
                let ivc = (base + e.input as usize) * v + e.vc as usize;
                debug_assert_eq!(self.state[ivc], ACTIVE);
                let o = self.out_port[ivc] as usize;
                let ovc = (base + o) * v + self.out_vc[ivc] as usize;
                if self.ovc_occ[ovc] as usize >= self.buf {
                    qs[i].res = STALL_FULL;
                    continue;
                }
                let k = e.input as usize * radix + o;
                let cur = self.s_req[k];
                if cur < 0 {
                    self.s_req[k] = e.vc as i16;
                    self.s_req_touched.push(((e.input as u32) << 16) | o as u32);
                } else {
                    let off = self.sw_rr_offset[base + e.input as usize] as usize;
                    let dn = wrap(e.vc as usize + v - off, v);
                    let dc = wrap(cur as usize + v - off, v);
                    if dn < dc {
                        self.s_req[k] = e.vc as i16;
                    }
                }
            }
            // Input arbiters: each input picks one requested output (round robin over ports).
            for &k in &self.s_req_touched {
                let (inp, o) = ((k >> 16) as usize, (k & 0xffff) as usize);
                let ptr = self.sw_in_ptr[base + inp] as usize;
                let d = wrap(o + radix - ptr, radix);
                let cur = self.s_in_choice[inp];
                if cur < 0 || d < wrap(cur as usize + radix - ptr, radix) {
                    self.s_in_choice[inp] = o as i32;
                }
            }
            // Output arbiters over the inputs that chose them.
            for &k in &self.s_req_touched {
                let inp = (k >> 16) as usize;
                let o = self.s_in_choice[inp];
                if o < 0 || o as usize != (k & 0xffff) as usize {
                    continue;
                }
                let o = o as usize;
                let d = wrap(inp + radix - self.sw_out_ptr[base + o] as usize, radix) as u32;
                if self.s_out_best[o] < 0 || d < self.s_out_dist[o] {
                    self.s_out_best[o] = inp as i32;
                    self.s_out_dist[o] = d;
                }
            }
            for i in 0..n_new {
                let e = qs[i];
                let mut res = e.res;
                if res >= -1 {
                    let inp = e.input as usize;
                    let o = self.s_in_choice[inp];
                    res = STALL_CONFLICT;
                    if o >= 0 && self.s_out_best[o as usize] == inp as i32 && self.s_req[inp * radix + o as usize] == e.vc as i16 {
                        res = o;
                    }
                }
                let e = &mut qs[i];
                e.time = now + self.sw_alloc_delay - 1;
                e.res = res;
            }
            // Grants move the round-robin pointers; then clear scratch.
            for &k in &self.s_req_touched {
                let (inp, o) = ((k >> 16) as usize, (k & 0xffff) as usize);
                if self.s_in_choice[inp] == o as i32 && self.s_out_best[o] == inp as i32 {
                    self.sw_in_ptr[base + inp] = wrap(o + 1, radix) as u32;
                    self.sw_out_ptr[base + o] = wrap(inp + 1, radix) as u32;
                    let vc = self.s_req[inp * radix + o] as usize;
                    self.sw_rr_offset[base + inp] = wrap(vc + 1, v) as u8;
                }
            }
            for &k in &self.s_req_touched {
                let (inp, o) = ((k >> 16) as usize, (k & 0xffff) as usize);
                self.s_req[inp * radix + o] = -1;
                self.s_in_choice[inp] = -1;
                self.s_out_best[o] = -1;
            }
            if self.sw_alloc_delay > 1 {
                for i in 0..qs.len() {
                    let e = qs[i];
                    if now < e.time {
                        break;
                    }
                    if e.res >= 0 {
                        let ivc = (base + e.input as usize) * v + e.vc as usize;
                        let ovc = (base + e.res as usize) * v + self.out_vc[ivc] as usize;
                        if self.ovc_occ[ovc] as usize >= self.buf {
                            qs[i].res = STALL_FULL;
                        }
                    }
                }
            }
        }

        self.sw_q[r] = q;

        // ---- crossbar: evaluate ----
        for x in self.xbar_q[r].iter_mut() {
            if x.time >= 0 {
                break;
            }
            x.time = now + self.st_delay - 1;
        }

        // ---- route computation: update ----
        if self.routing_delay > 0 {
            while let Some(&e) = self.route_q[r].front() {
                if e.time < 0 || now < e.time {
                    break;
                }
                self.route_q[r].pop_front();
                let ivc = (base + e.input as usize) * v + e.vc as usize;
                let f = self.front(ivc);
                let p = ctx.packets.get_mut(f.pkt());
                let (port, class) = ctx.routing.route(r, e.input as usize, &mut p.route, ctx.rng);
                let (lo, hi) = ctx.vcmap.range(p.msg as usize, class);
                self.route[ivc] = RouteSet { port: port as u16, vc_lo: lo, vc_hi: hi };
                self.state[ivc] = VC_ALLOC;
                self.vc_q[r].push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            }
        }

        // ---- VC allocation: update ----
        while let Some(&e) = self.vc_q[r].front() {
            if e.time < 0 || now < e.time {
                break;
            }
            self.vc_q[r].pop_front();
            if e.res >= 0 {
                let ivc = (base + e.input as usize) * v + e.vc as usize;
                let o_l = e.res as usize;
                let ovc = base * v + o_l;
                debug_assert!(!self.ovc_in_use[ovc]);
                self.ovc_in_use[ovc] = true;
                self.ovc_tail_sent[ovc] = false;
                self.out_port[ivc] = (o_l / v) as u16;
                self.out_vc[ivc] = (o_l % v) as u8;
                self.state[ivc] = ACTIVE;
                self.sw_q[r].push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            } else {
                self.vc_q[r].push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            }
        }

        // ---- switch allocation: update ----
        while let Some(&e) = self.sw_q[r].front() {
            if e.time < 0 || now < e.time {
                break;
            }
            self.sw_q[r].pop_front();
            if e.res < 0 {
                self.sw_q[r].push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
                continue;
            }
            let input = e.input as usize;
            let gin = base + input;
            let ivc = gin * v + e.vc as usize;
            let out = e.res as usize;
            let ov = self.out_vc[ivc];
            let f = self.front(ivc);
            self.q_len[ivc] -= 1;
            // An empty ring restarts at slot 0: deep buffers then touch only the few cache
            // lines they actually use instead of cycling through all of their memory.
            self.q_head[ivc] = if self.q_len[ivc] == 0 { 0 } else { wrap(self.q_head[ivc] as usize + 1, self.buf) as u16 };
            if f.head() {
                ctx.packets.get_mut(f.pkt()).hops += 1;
                if self.routing_delay == 0 {
                    self.lookahead(ctx, r, out, f.pkt());
                }
            }
            let ovc = (base + out) * v + ov as usize;
            self.ovc_occ[ovc] += 1;
            self.out_used[base + out] += 1;
            if f.tail() {
                self.ovc_tail_sent[ovc] = true;
                if !self.wait_for_tail_credit {
                    self.ovc_in_use[ovc] = false;
                }
            }
            self.xbar_q[r].push_back(XEntry { time: -1, flit: f, vc: ov, out: out as u16 });
            self.cred_q[gin].push_back(e.vc);
            self.pending_out[r] += 1;
            if self.q_len[ivc] == 0 {
                if f.tail() {
                    self.state[ivc] = IDLE;
                }
            } else if f.tail() {
                let nf = self.front(ivc);
                self.start_head(r, ivc, e.input, e.vc, nf, ctx.packets);
            } else {
                self.sw_q[r].push_back(Entry { time: -1, input: e.input, vc: e.vc, res: -1 });
            }
        }

        // ---- crossbar: update ----
        while let Some(&x) = self.xbar_q[r].front() {
            if x.time < 0 || now < x.time {
                break;
            }
            self.xbar_q[r].pop_front();
            self.out_q[base + x.out as usize].push_back((x.flit, x.vc));
            self.pending_out[r] += 1;
        }
    }
}
