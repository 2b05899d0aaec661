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
//! ugal (UGAL-L): at the source router compare, for the minimal and for one random Valiant
//! path, (occupancy of the first output port) x (hops); take the smaller (ties: minimal).
//! Same 3 classes as Valiant.

use veil_core::StreamRng;
use rand::Rng;

use super::{Draw, OccupancyView, PacketRoute, RoutingFunction};
use crate::topology::dragonfly::global_link;

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

    /// Hops (router to router) of the minimal path r -> group/router target.
    fn min_hops(&self, r: usize, dr: usize, sel: usize) -> u32 {
        let a = self.a;
        if r / a == dr / a {
            return (r != dr) as u32;
        }
        let q = global_link(a, self.h, self.g, self.lpp, r / a, dr / a, sel % self.lpp);
        let owner = (r / a) * a + q / self.h;
        (owner != r) as u32 + 1 + 1
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
        self.mode == Mode::Min
    }

    fn at_source(&self, r: usize, pkt: &mut PacketRoute, rng: &mut StreamRng, view: &dyn OccupancyView) {
        pkt.inter = u32::MAX;
        if self.mode == Mode::Min || self.g < 3 {
            return;
        }
        let (a, p) = (self.a, self.p);
        let sg = r / a;
        let dr = pkt.dest as usize / p;
        let dg = dr / a;
        let mut ig = rng.gen_range(0..self.g - 1);
        if ig >= sg {
            ig += 1;
        }
        if ig == dg || sg == dg {
            return;
        }
        if self.mode == Mode::Ugal {
            let sel = pkt.src as usize + pkt.dest as usize;
            let (pm, _) = self.port_to_router(r, dr, sel);
            let (pn, _) = self.port_to_router(r, ig * a, sel);
            let hm = self.min_hops(r, dr, sel);
            // Valiant: to the intermediate group's entry router, then on to the destination.
            let hn = self.min_hops(r, ig * a, sel) + 3;
            let qm = view.used(r, pm) as u64 * hm as u64;
            let qn = view.used(r, pn) as u64 * hn as u64;
            if qm <= qn {
                return;
            }
        }
        pkt.inter = ig as u32;
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
