//! Dragonfly routing.
//!
//! min (BookSim2 `min_dragonflynew`): local hop to the router holding the global link to the
//! destination group, the global hop, a local hop to the destination router. Class 0 until
//! the global hop, class 1 from the global channel on. Deadlock-free: class-0 channels are
//! at most one local hop followed by a global hop (no local->local dependency), class-1
//! channels are one global hop then at most one local hop; dependencies only go 0 -> 1.
//!
//! valiant: minimal to a random intermediate *group*, then minimal to the destination
//! (L G L G L at most). The class of a channel is the number of global hops completed
//! before it (global channels: before their own hop), 3 classes. Within a class a packet
//! takes at most one local hop and then leaves the class on a global hop (or ejects), so no
//! class has a cycle and classes only increase. (A random intermediate *router* would allow
//! two local hops in one group and class, which can deadlock.)
//!
//! ugal (UGAL-L, BookSim2's `ugal_dragonflynew`): at the source router draw a random
//! intermediate node; go minimally (phase 1) if the destination is in the source group (phase
//! 2), if the intermediate is, or if occupancy(minimal output) <= 2 x occupancy(Valiant output)
//! + 30; otherwise route to the intermediate *router* first (phase 0), then minimally (phase
//! 1), and phase 2 from the second global hop on. VC = phase (3 classes). Class 0 is local,
//! global, then at most one local hop in the intermediate group, after which the packet is in
//! class 1; class 1 is at most one local hop then a global hop into class 2; class 2 is at most
//! one local hop. No class has a local -> global -> local -> global chain, and classes only
//! increase, so the dependency graph is acyclic.

use super::{Draw, OccupancyView, PacketRoute, RoutingFunction};
use crate::topology::dragonfly::global_link;

/// BookSim2's bias of UGAL towards minimal routing (flits).
const UGAL_THRESHOLD: i64 = 30;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Min,
    Valiant,
    Ugal,
}

pub struct DragonflyRouting {
    p: usize,
    a: usize,
    h: usize,
    g: usize,
    lpp: usize,
    mode: Mode,
}

impl DragonflyRouting {
    pub fn new(p: usize, a: usize, h: usize, g: usize, lpp: usize, mode: Mode) -> Self {
        Self { p, a, h, g, lpp, mode }
    }

    /// Port at router `r` on the minimal path towards router `dr` (not equal to r), and
    /// whether it is a global port.
    #[inline]
    fn port_to_router(&self, r: usize, dr: usize, sel: usize) -> (usize, bool) {
        let (a, p) = (self.a, self.p);
        let (grp, i) = (r / a, r % a);
        let dgrp = dr / a;
        let target = if dgrp == grp {
            dr
        } else {
            let q = global_link(a, self.h, self.g, self.lpp, grp, dgrp, sel % self.lpp);
            let owner = grp * a + q / self.h;
            if owner == r {
                return (p + a - 1 + q % self.h, true);
            }
            owner
        };
        let ti = target % a;
        (p + if ti < i { ti } else { ti - 1 }, false)
    }

}

impl RoutingFunction for DragonflyRouting {
    fn classes(&self) -> usize {
        match self.mode {
            Mode::Min => 2,
            _ => 3,
        }
    }

    fn random_injection_vc(&self) -> bool {
        self.mode != Mode::Valiant
    }

    fn at_source(&self, r: usize, pkt: &mut PacketRoute, rng: &mut dyn Draw, view: &dyn OccupancyView) {
        pkt.inter = u32::MAX;
        pkt.ph = 0;
        pkt.count = 0;
        let (a, p) = (self.a, self.p);
        let sg = r / a;
        let dr = pkt.dest as usize / p;
        let dg = dr / a;
        match self.mode {
            Mode::Min => {}
            Mode::Valiant => {
                if self.g < 3 || sg == dg {
                    return;
                }
                let mut ig = rng.int((self.g - 2) as u32) as usize;
                if ig >= sg {
                    ig += 1;
                }
                if ig != dg {
                    pkt.inter = ig as u32;
                }
            }
            Mode::Ugal => {
                // BookSim2's ugal_dragonflynew: phase 2 = minimal inside the group; otherwise a
                // random intermediate node; phase 1 (minimal) unless the minimal output's queue
                // exceeds twice the Valiant output's plus a bias of 30 flits, else phase 0.
                if sg == dg {
                    pkt.ph = 2;
                    return;
                }
                let intm = rng.int((self.g * a * p - 1) as u32) as usize;
                pkt.inter = intm as u32;
                let ir = intm / p;
                if ir / a == sg {
                    pkt.ph = 1;
                    return;
                }
                let sel = pkt.src as usize + pkt.dest as usize;
                let (pm, _) = self.port_to_router(r, dr, sel);
                let (pn, _) = self.port_to_router(r, ir, sel);
                let qm = view.used(r, pm) as i64;
                let qn = view.used(r, pn) as i64;
                pkt.ph = if qm <= 2 * qn + UGAL_THRESHOLD { 1 } else { 0 };
            }
        }
    }

    fn route(&self, r: usize, in_port: usize, pkt: &mut PacketRoute, _rng: &mut dyn Draw) -> (usize, usize) {
        let (a, p) = (self.a, self.p);
        let dest = pkt.dest as usize;
        let dr = dest / p;
        let sel = pkt.src as usize + dest;
        if self.mode == Mode::Min {
            // BookSim: phase resets to 0 on the injection port, becomes 1 at the global hop.
            if in_port < p {
                pkt.ph = 0;
            }
            if r == dr {
                return (dest % p, pkt.ph as usize);
            }
            let (port, global) = self.port_to_router(r, dr, sel);
            if global {
                pkt.ph = 1;
            }
            return (port, pkt.ph as usize);
        }
        if self.mode == Mode::Ugal {
            if pkt.ph == 0 && r == pkt.inter as usize / p {
                pkt.ph = 1;
            }
            let target = if pkt.ph == 0 { pkt.inter as usize / p } else { dr };
            if r == target {
                debug_assert!(r == dr);
                return (dest % p, pkt.ph as usize);
            }
            let (port, global) = self.port_to_router(r, target, sel);
            if pkt.ph == 1 && global {
                pkt.ph = 2;
            }
            return (port, pkt.ph as usize);
        }
        if in_port < p {
            pkt.count = 0;
            pkt.ph = 0;
        }
        if pkt.inter != u32::MAX && pkt.ph == 0 && r / a == pkt.inter as usize {
            pkt.ph = 1;
        }
        if r == dr {
            return (dest % p, pkt.count as usize);
        }
        let target = if pkt.inter != u32::MAX && pkt.ph == 0 {
            // Any router of the intermediate group: aim at its first router; the minimal
            // route only uses it to pick the global link.
            pkt.inter as usize * a + (r % a)
        } else {
            dr
        };
        let (port, global) = self.port_to_router(r, target, sel);
        let class = pkt.count as usize;
        if global {
            pkt.count += 1;
        }
        (port, class)
    }
}
