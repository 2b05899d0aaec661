//! A cycle's router work on the thread pool: each share of routers takes the flits and
//! credits that arrive at it, steps its routers and writes their output channels, all in
//! router order, into buffers of its own; the engine then appends the shares' new channel
//! events to the wheel in share order. Every wheel slot therefore holds the same events in
//! the same order as a serial run (which writes router 0's, then router 1's, ...), and the
//! results are identical for any thread count. Sources, ejection and the lookahead routes
//! (everything that draws a random number) stay serial.

use super::*;
use crate::router::{Params, Router, Scratch};

/// One share's inputs and outputs for a cycle.
#[derive(Default)]
pub(super) struct Share {
    /// Flits arriving at this share's routers this cycle, in wheel order.
    pub flits: Vec<Ev>,
    /// Credits due at this share's routers this cycle, in wheel order.
    pub credits: Vec<Ev>,
    /// Channel events the share's routers scheduled, per wheel slot.
    out: Vec<Vec<Ev>>,
    /// Slots of `out` that hold events.
    touched: Vec<u32>,
    credit_events: u64,
    progress: bool,
}

impl Share {
    pub fn new(wsize: usize) -> Self {
        Self {
            out: (0..wsize).map(|_| Vec::new()).collect(),
            ..Self::default()
        }
    }
}

/// What every share reads during a cycle.
struct Env<'a> {
    p: Params,
    t: u64,
    steps: usize,
    wmask: u64,
    credit_delay: u64,
    counting: bool,
    topo: &'a Topology,
    base: &'a [usize],
    port_router: &'a [u32],
    packets: &'a PacketSlab,
}

impl Engine {
    /// Shares for a pool of `n` threads (none when routers step serially).
    pub(super) fn make_shares(&self) -> Vec<Share> {
        if self.routers.parallel() {
            (0..self.routers.threads())
                .map(|_| Share::new(self.wheel.len()))
                .collect()
        } else {
            Vec::new()
        }
    }

    /// The share that steps router `r`.
    #[inline]
    pub(super) fn share_of(&self, r: usize) -> usize {
        r / self.share_len
    }

    /// Steps every router on the pool, then merges the shares' events in share order.
    pub(super) fn step_shares(&mut self, steps: usize) {
        let t = self.now;
        let mut shares = std::mem::take(&mut self.shares);
        let len = self.share_len;
        let Self {
            routers,
            topo,
            packets,
            port_router,
            chan_flits,
            wmask,
            cfg,
            phase,
            ..
        } = self;
        // The port bases are read by every share while the routers are lent out mutably.
        let base = std::mem::take(&mut routers.base);
        {
            let env = Env {
                p: routers.p,
                t,
                steps,
                wmask: *wmask,
                credit_delay: cfg.router.credit_delay as u64,
                counting: *phase != Phase::Draining,
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
                let k = base[((i + 1) * len).min(n)] - base[(i * len).min(n)];
                let (mine, tail) = rest.split_at_mut(k);
                rest = tail;
                ctxs.push((sh, mine));
            }
            let f = |first: usize,
                     rs: &mut [Router],
                     s: &mut Scratch,
                     c: &mut (&mut Share, &mut [u64])| {
                share_cycle(&env, first, rs, s, c.0, c.1);
            };
            routers.for_each_share(&mut ctxs, &f);
        }
        routers.base = base;
        for sh in shares.iter_mut() {
            self.credit_events += sh.credit_events;
            sh.credit_events = 0;
            if sh.progress {
                self.last_progress = t;
                sh.progress = false;
            }
            for &slot in &sh.touched {
                let evs = &mut sh.out[slot as usize];
                self.wheel[slot as usize].extend_from_slice(evs);
                evs.clear();
            }
            sh.touched.clear();
        }
        self.shares = shares;
    }
}

/// One share's cycle: arriving flits and credits, internal steps, output channels.
fn share_cycle(
    env: &Env,
    first: usize,
    rs: &mut [Router],
    s: &mut Scratch,
    sh: &mut Share,
    chan: &mut [u64],
) {
    let p = env.p;
    for ev in sh.flits.drain(..) {
        let gp = ev.idx as usize;
        let r = env.port_router[gp] as usize;
        rs[r - first].receive_flit(&p, gp - env.base[r], ev.flit, ev.vc as usize, env.packets);
    }
    for ev in sh.credits.drain(..) {
        let gp = ev.idx as usize;
        let r = env.port_router[gp] as usize;
        rs[r - first].receive_credit(&p, gp - env.base[r], ev.vc as usize);
    }
    for (j, rt) in rs.iter_mut().enumerate() {
        rt.step_n(first + j, &p, s, env.t, env.steps, env.packets);
    }
    let chan_base = env.base[first];
    for (j, rt) in rs.iter_mut().enumerate() {
        if rt.pending_out > 0 {
            write_share_outputs(
                env,
                first + j,
                rt,
                sh,
                &mut chan[env.base[first + j] - chan_base..],
            );
        }
    }
}

/// As `Engine::write_outputs`, into the share's own slots (no observer: a run with one
/// steps serially, so that it sees channels in cycle and router order).
fn write_share_outputs(env: &Env, r: usize, rt: &mut Router, sh: &mut Share, chan: &mut [u64]) {
    let t = env.t;
    let (outs, inps) = (&env.topo.out[r][..], &env.topo.inp[r][..]);
    let Share {
        out,
        touched,
        credit_events,
        progress,
        ..
    } = sh;
    let mut schedule = |at: u64, ev: Ev| {
        debug_assert!(at > t && at - t <= env.wmask);
        let slot = (at & env.wmask) as usize;
        if out[slot].is_empty() {
            touched.push(slot as u32);
        }
        out[slot].push(ev);
    };
    for p in 0..rt.radix {
        if rt.pending_out == 0 {
            break;
        }
        if t >= rt.out_busy_until[p] {
            if let Some((f, vc)) = rt.out_q[p].pop_front() {
                rt.pending_out -= 1;
                let link = outs[p];
                rt.out_busy_until[p] = t + link.flit_cycles as u64;
                let at = t + link.latency as u64 + 1;
                match link.to {
                    End::Router { r: nr, port } => {
                        let ngp = env.base[nr as usize] + port as usize;
                        schedule(
                            at,
                            Ev {
                                kind: EV_FLIT,
                                vc,
                                idx: ngp as u32,
                                flit: f,
                            },
                        );
                    }
                    End::Node(n) => schedule(
                        at,
                        Ev {
                            kind: EV_EJECT,
                            vc,
                            idx: n,
                            flit: f,
                        },
                    ),
                    End::None => unreachable!("routing chose an unconnected port"),
                }
                if env.counting {
                    chan[p] += 1;
                }
                *progress = true;
            }
        }
        if let Some(vc) = rt.cred_q[p].pop_front() {
            rt.pending_out -= 1;
            let (src, lat) = inps[p];
            let at = t + lat as u64 + 1;
            let f = Flit::default();
            match src {
                End::Router { r: sr, port } => {
                    let sgp = env.base[sr as usize] + port as usize;
                    schedule(
                        at + env.credit_delay,
                        Ev {
                            kind: EV_CREDIT,
                            vc,
                            idx: sgp as u32,
                            flit: f,
                        },
                    );
                }
                End::Node(n) => schedule(
                    at,
                    Ev {
                        kind: EV_INJ_CREDIT,
                        vc,
                        idx: n,
                        flit: f,
                    },
                ),
                End::None => unreachable!(),
            }
            *credit_events += 1;
        }
    }
}
