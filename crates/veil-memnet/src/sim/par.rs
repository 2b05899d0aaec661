//! A cycle's router work on the thread pool. Each share of routers (one per thread) has a
//! wheel of its own for the flits and credits due at its routers; in a cycle it takes that
//! slot's events, steps its routers and writes their output channels into buffers of its
//! own, one per destination (each share's wheel, and the engine's wheel for ejections and
//! injection credits). The engine then appends those buffers in share order (= router
//! order). Every slot of every wheel therefore holds the events a serial run would put
//! there, in the same order, and results are identical for any thread count. Sources,
//! ejection and the lookahead routes (everything that draws a random number) stay serial.
//! Serial stepping's output channels (`Engine::write_outputs`) live here too: both it and the
//! shares run one loop, `drain_outputs`, each through its own `Sink`.

use super::*;
use crate::router::{Params, Router, Scratch};
use crate::topology::Link;

/// One share's wheel and its outputs for a cycle.
pub(super) struct Share {
    /// Flits and credits due at this share's routers, per wheel slot.
    inbox: Vec<Vec<Ev>>,
    /// Events the share's routers scheduled this cycle, per (destination, slot):
    /// destination d < shares is share d's wheel, d = shares the engine's.
    out: Vec<Vec<Ev>>,
    /// Indices of `out` that hold events.
    touched: Vec<u32>,
    /// Heads that left the share's routers with their next route, computed on the share
    /// when routing draws nothing there: (packet, route state after, lookahead route).
    heads: Vec<(u32, PacketRoute, RouteSet)>,
    /// Credits scheduled minus credits received this cycle.
    credit_delta: i64,
    progress: bool,
}

impl Share {
    fn new(wsize: usize, shares: usize) -> Self {
        Self {
            inbox: (0..wsize).map(|_| Vec::new()).collect(),
            out: (0..wsize * (shares + 1)).map(|_| Vec::new()).collect(),
            touched: Vec::new(),
            heads: Vec::new(),
            credit_delta: 0,
            progress: false,
        }
    }
}

/// What every share reads during a cycle.
struct Env<'a> {
    p: Params,
    t: u64,
    steps: usize,
    wmask: u64,
    wsize: usize,
    credit_delay: u64,
    counting: bool,
    sort: bool,
    share_len: usize,
    shares: usize,
    /// Lookahead routes computed on the shares (the routing function draws nothing there).
    la_here: bool,
    routing: &'a dyn RoutingFunction,
    vcmap: VcMap,
    topo: &'a Topology,
    base: &'a [usize],
    port_router: &'a [u32],
    packets: &'a PacketSlab,
}

impl Engine {
    /// Shares for the pool's threads (none when routers step serially).
    pub(super) fn make_shares(&self) -> Vec<Share> {
        if self.routers.parallel() {
            let n = self.routers.shares();
            (0..n).map(|_| Share::new(self.wheel.len(), n)).collect()
        } else {
            Vec::new()
        }
    }

    /// Back to serial stepping: the shares' pending events join the engine's wheel (their
    /// order relative to other routers' events does not matter; each router's stays).
    pub(super) fn unshare(&mut self) {
        self.routers.mark_all();
        for sh in std::mem::take(&mut self.shares) {
            for (slot, evs) in sh.inbox.into_iter().enumerate() {
                self.wheel[slot].extend(evs);
            }
        }
    }

    /// Puts an event on the wheel of whoever handles it.
    #[inline(always)]
    pub(super) fn schedule(&mut self, at: u64, ev: Ev) {
        debug_assert!(at > self.now && at - self.now <= self.wmask);
        let slot = (at & self.wmask) as usize;
        if !self.shares.is_empty() && (ev.kind == EV_FLIT || ev.kind == EV_CREDIT) {
            let s = self.port_router[ev.idx as usize] as usize / self.share_len;
            self.shares[s].inbox[slot].push(ev);
        } else {
            self.wheel[slot].push(ev);
        }
    }

    /// Steps every router on the pool, then merges the shares' events in share order.
    pub(super) fn step_shares(&mut self, steps: usize) {
        let t = self.now;
        let mut shares = std::mem::take(&mut self.shares);
        let share_len = self.share_len;
        let Self { routers, topo, packets, port_router, chan_flits, wmask, cfg, phase, sort_arrivals, wheel, routing, vcmap, bs, .. } = self;
        // The port bases are read by every share while the routers are lent out mutably.
        let base = std::mem::take(&mut routers.base);
        {
            let env = Env {
                p: routers.p,
                t,
                steps,
                wmask: *wmask,
                wsize: wheel.len(),
                credit_delay: cfg.router.credit_delay as u64,
                counting: *phase != Phase::Draining,
                sort: *sort_arrivals,
                share_len,
                shares: shares.len(),
                la_here: !routing.draws_while_routing(),
                routing: &**routing,
                vcmap: *vcmap,
                topo,
                base: &base,
                port_router,
                packets,
            };
            // Each share's channel counters: the ports of its routers, contiguous.
            let n = routers.n();
            let mut rest = &mut chan_flits[..];
            let mut ctxs = Vec::with_capacity(shares.len());
            for (i, sh) in shares.iter_mut().enumerate() {
                let k = base[((i + 1) * share_len).min(n)] - base[(i * share_len).min(n)];
                let (mine, tail) = rest.split_at_mut(k);
                rest = tail;
                ctxs.push((sh, mine));
            }
            let f = |first: usize, rs: &mut [Router], s: &mut Scratch, c: &mut (&mut Share, &mut [u64])| {
                share_cycle(&env, first, rs, s, c.0, c.1);
            };
            // BookSim2's generators compute their next batches here, beside the routers,
            // instead of in the serial sources (about a tenth of a cycle's serial work at 1056
            // nodes: each 1009-number batch yields 100 numbers); the sequence is unchanged.
            let ahead = 2 * topo.nodes;
            let mut prefill = bs.as_mut().map(|g| {
                move || {
                    g.float.prefill(ahead);
                    g.int.prefill(ahead);
                }
            });
            let extra = prefill.as_mut().map(|p| p as &mut (dyn FnMut() + Send));
            routers.for_each_share(&mut ctxs, &f, extra);
        }
        routers.base = base;
        let wsize = wheel.len();
        let ns = shares.len();
        for i in 0..ns {
            let mut out = std::mem::take(&mut shares[i].out);
            let mut touched = std::mem::take(&mut shares[i].touched);
            for &k in &touched {
                let (d, slot) = (k as usize / wsize, k as usize % wsize);
                let evs = &mut out[k as usize];
                let target = if d == ns { &mut wheel[slot] } else { &mut shares[d].inbox[slot] };
                target.extend_from_slice(evs);
                evs.clear();
            }
            touched.clear();
            let sh = &mut shares[i];
            sh.out = out;
            sh.touched = touched;
            for &(pkt, route, la) in &sh.heads {
                let p = self.packets.get_mut(pkt);
                p.hops += 1;
                p.route = route;
                p.la = la;
            }
            sh.heads.clear();
            self.credit_events = (self.credit_events as i64 + sh.credit_delta) as u64;
            sh.credit_delta = 0;
            if sh.progress {
                self.last_progress = t;
                sh.progress = false;
            }
        }
        self.shares = shares;
    }
}

impl Engine {
    /// Serial stepping's output channels of router `r` (the shares' go through `ShareSink`).
    pub(super) fn write_outputs(&mut self, r: usize) {
        let t = self.now;
        let credit_delay = self.cfg.router.credit_delay as u64;
        let counting = self.counting();
        // Borrow the router, its links and the wheel once: this runs for every busy router
        // every cycle, and re-indexing through `self` cost a bounds check per field.
        let Self { routers, topo, wheel, wmask, chan_flits, obs, packets, last_progress, credit_events, .. } = self;
        let bases = &routers.base[..];
        let mut sink = WheelSink {
            t,
            wmask: *wmask,
            wheel,
            counting,
            chan: &mut chan_flits[bases[r]..],
            gp: bases[r] as u32,
            obs: obs.as_mut(),
            packets,
            last_progress,
            credit_events,
        };
        let (outs, inps) = (&topo.out[r][..], &topo.inp[r][..]);
        drain_outputs(t, credit_delay, &mut routers.list[r], outs, inps, bases, &mut sink);
    }
}

/// Where a router's output channels put what they send: the engine's wheel when routers step
/// serially, a share's buffers on the pool. One loop (`drain_outputs`) serves both, so that the
/// two cannot drift apart; each sink is a separate instance of it, as fast as a loop of its own.
trait Sink {
    /// An event due at `at`, handled by router `to` (None: by the engine: an ejection or an
    /// injection credit).
    fn put(&mut self, to: Option<usize>, at: u64, ev: Ev);
    /// Flit `f` left on output port `p`.
    fn sent(&mut self, p: usize, f: Flit);
    /// A credit left.
    fn credit(&mut self);
}

/// The serial sink: the engine's wheel, its channel counts, observer and progress.
struct WheelSink<'a> {
    t: u64,
    wmask: u64,
    wheel: &'a mut [Vec<Ev>],
    counting: bool,
    /// the channel counts from the router's first port on
    chan: &'a mut [u64],
    /// the router's first global port
    gp: u32,
    obs: Option<&'a mut Box<dyn Observer>>,
    packets: &'a PacketSlab,
    last_progress: &'a mut u64,
    credit_events: &'a mut u64,
}

impl Sink for WheelSink<'_> {
    #[inline(always)]
    fn put(&mut self, _to: Option<usize>, at: u64, ev: Ev) {
        debug_assert!(at > self.t && at - self.t <= self.wmask);
        self.wheel[(at & self.wmask) as usize].push(ev);
    }
    #[inline(always)]
    fn sent(&mut self, p: usize, f: Flit) {
        if self.counting {
            self.chan[p] += 1;
        }
        if f.head() {
            if let Some(o) = self.obs.as_mut() {
                o.channel(self.t, self.gp + p as u32, self.packets.get(f.pkt()).len);
            }
        }
        *self.last_progress = self.t;
    }
    #[inline(always)]
    fn credit(&mut self) {
        *self.credit_events += 1;
    }
}

/// A share's sink: its own buffers per destination, channel counts and progress (no observer:
/// a run with one steps serially, so that it sees channels in cycle and router order).
struct ShareSink<'a, 'e> {
    env: &'a Env<'e>,
    out: &'a mut [Vec<Ev>],
    touched: &'a mut Vec<u32>,
    /// the router's channel counts
    chan: &'a mut [u64],
    credit_delta: &'a mut i64,
    progress: &'a mut bool,
}

impl Sink for ShareSink<'_, '_> {
    #[inline(always)]
    fn put(&mut self, to: Option<usize>, at: u64, ev: Ev) {
        let d = to.map_or(self.env.shares, |r| r / self.env.share_len);
        put(self.env, self.out, self.touched, d, at, ev);
    }
    #[inline(always)]
    fn sent(&mut self, p: usize, _f: Flit) {
        if self.env.counting {
            self.chan[p] += 1;
        }
        *self.progress = true;
    }
    #[inline(always)]
    fn credit(&mut self) {
        *self.credit_delta += 1;
    }
}

/// Router `rt`'s output channels at cycle `t`: each free output port sends the flit at its
/// queue's head, and each port returns one credit upstream, into `sink`.
#[inline(always)]
fn drain_outputs<S: Sink>(t: u64, credit_delay: u64, rt: &mut Router, outs: &[Link], inps: &[(End, u32)], bases: &[usize], sink: &mut S) {
    // Only ports with a flit or a credit queued, in port order as a walk over every port.
    for w in 0..rt.pend_ports.len() {
        let mut bits = rt.pend_ports[w];
        while bits != 0 {
            let p = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            drain_port(t, credit_delay, rt, p, outs, inps, bases, sink);
            if rt.out_q[p].is_empty() && rt.cred_q[p].is_empty() {
                rt.pend_ports[w] &= !(1u64 << (p % 64));
            }
        }
    }
}

/// Port `p` of router `rt` (see `drain_outputs`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn drain_port<S: Sink>(t: u64, credit_delay: u64, rt: &mut Router, p: usize, outs: &[Link], inps: &[(End, u32)], bases: &[usize], sink: &mut S) {
    if t >= rt.out_busy_until[p] {
        if let Some((f, vc)) = rt.out_q[p].pop_front() {
            rt.pending_out -= 1;
            let link = outs[p];
            rt.out_busy_until[p] = t + link.flit_cycles as u64;
            let at = t + link.latency as u64 + 1;
            match link.to {
                End::Router { r: nr, port } => {
                    let ngp = bases[nr as usize] + port as usize;
                    sink.put(Some(nr as usize), at, Ev { kind: EV_FLIT, vc, idx: ngp as u32, flit: f });
                }
                End::Node(n) => sink.put(None, at, Ev { kind: EV_EJECT, vc, idx: n, flit: f }),
                End::None => unreachable!("routing chose an unconnected port"),
            }
            sink.sent(p, f);
        }
    }
    if let Some(vc) = rt.cred_q[p].pop_front() {
        rt.pending_out -= 1;
        let (src, lat) = inps[p];
        let at = t + lat as u64 + 1;
        let f = Flit::default();
        match src {
            End::Router { r: sr, port } => {
                let sgp = bases[sr as usize] + port as usize;
                sink.put(Some(sr as usize), at + credit_delay, Ev { kind: EV_CREDIT, vc, idx: sgp as u32, flit: f });
            }
            End::Node(n) => sink.put(None, at, Ev { kind: EV_INJ_CREDIT, vc, idx: n, flit: f }),
            End::None => unreachable!(),
        }
        sink.credit();
    }
}

/// One share's cycle: arriving flits and credits, internal steps, output channels.
fn share_cycle(env: &Env, first: usize, rs: &mut [Router], s: &mut Scratch, sh: &mut Share, chan: &mut [u64]) {
    let p = env.p;
    let slot = (env.t & env.wmask) as usize;
    let mut evs = std::mem::take(&mut sh.inbox[slot]);
    // As the serial cycle sorts its arrivals (BookSim2's input-port order) when routing draws.
    if env.sort && evs.len() > 1 {
        evs.sort_unstable_by_key(|e| ((e.kind as u64) << 32) | e.idx as u64);
    }
    // A router's flits and credits touch disjoint state (input side, output side), so taking
    // them in one pass leaves the same state as the serial cycle's flits-then-credits.
    for ev in evs.drain(..) {
        let gp = ev.idx as usize;
        let r = env.port_router[gp] as usize;
        if ev.kind == EV_FLIT {
            rs[r - first].receive_flit(&p, gp - env.base[r], ev.flit, ev.vc as usize, env.packets);
        } else {
            rs[r - first].receive_credit(&p, gp - env.base[r], ev.vc as usize);
            sh.credit_delta -= 1;
        }
    }
    sh.inbox[slot] = evs;
    for (j, rt) in rs.iter_mut().enumerate() {
        rt.step_n(first + j, &p, s, env.t, env.steps, env.packets);
    }
    if env.la_here {
        for (j, rt) in rs.iter_mut().enumerate() {
            for &(pkt, out) in &rt.sent_heads {
                sh.heads.push(next_route(env, first + j, out as usize, pkt));
            }
            rt.sent_heads.clear();
        }
    }
    let chan_base = env.base[first];
    for (j, rt) in rs.iter_mut().enumerate() {
        if rt.pending_out > 0 {
            write_share_outputs(env, first + j, rt, sh, &mut chan[env.base[first + j] - chan_base..]);
        }
    }
}

/// The route a head that left router `r` on port `out` takes at the next router, as
/// `router::lookahead` computes it, on a copy of the packet's route state.
fn next_route(env: &Env, r: usize, out: usize, pkt: u32) -> (u32, PacketRoute, RouteSet) {
    let p = env.packets.get(pkt);
    let mut route = p.route;
    let la = match env.topo.out[r][out].to {
        End::Router { r: nr, port } => {
            let (port_out, class) = env.routing.route(nr as usize, port as usize, &mut route, &mut NoDraw);
            let (lo, hi) = env.vcmap.range(p.msg as usize, class);
            RouteSet { port: port_out as u16, vc_lo: lo, vc_hi: hi }
        }
        _ => RouteSet::default(),
    };
    (pkt, route, la)
}

/// The generator a routing function gets where `draws_while_routing` says it draws nothing.
struct NoDraw;

impl routing::Draw for NoDraw {
    fn int(&mut self, _max: u32) -> u32 {
        unreachable!("a routing function drew a number while routing though draws_while_routing() is false")
    }
}

/// Puts an event for destination `d` (a share, or `shares` for the engine) at slot of `at`.
#[inline(always)]
fn put(env: &Env, out: &mut [Vec<Ev>], touched: &mut Vec<u32>, d: usize, at: u64, ev: Ev) {
    debug_assert!(at > env.t && at - env.t <= env.wmask);
    let k = d * env.wsize + (at & env.wmask) as usize;
    if out[k].is_empty() {
        touched.push(k as u32);
    }
    out[k].push(ev);
}

/// As `Engine::write_outputs`, into the share's own buffers.
fn write_share_outputs(env: &Env, r: usize, rt: &mut Router, sh: &mut Share, chan: &mut [u64]) {
    let Share { out, touched, credit_delta, progress, .. } = sh;
    let mut sink = ShareSink { env, out, touched, chan, credit_delta, progress };
    drain_outputs(env.t, env.credit_delay, rt, &env.topo.out[r], &env.topo.inp[r], env.base, &mut sink);
}
