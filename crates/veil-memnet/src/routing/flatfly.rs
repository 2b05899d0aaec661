//! Flattened-butterfly routing (2D, k x k routers, c terminals per router).
//!
//! min: dimension order, row (x) first then column (y): at most one hop per dimension. One
//! class suffices: a packet only moves from x channels to y channels, so dependencies are
//! acyclic.
//!
//! valiant: dimension order to a random intermediate router, then dimension order to the
//! destination; class = phase (0 before the intermediate, 1 after). Each phase alone is
//! acyclic and phases only increase: 2 classes.
//!
//! ugal (UGAL-L): at the source, minimal unless (occupancy of the Valiant first port) x
//! (Valiant hops) is smaller than (occupancy of the minimal first port) x (minimal hops);
//! same 2 classes.

use super::{Draw, OccupancyView, PacketRoute, RoutingFunction};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Min,
    Valiant,
    Ugal,
}

pub struct FlatflyRouting {
    k: usize,
    c: usize,
    mode: Mode,
}

impl FlatflyRouting {
    pub fn new(k: usize, c: usize, mode: Mode) -> Self {
        Self { k, c, mode }
    }

    #[inline]
    fn dor_port(&self, r: usize, to: usize) -> usize {
        let (k, c) = (self.k, self.c);
        let (x, y, tx, ty) = (r % k, r / k, to % k, to / k);
        if x != tx {
            c + if tx < x { tx } else { tx - 1 }
        } else {
            debug_assert!(y != ty);
            c + (k - 1) + if ty < y { ty } else { ty - 1 }
        }
    }

    fn hops(&self, r: usize, to: usize) -> u32 {
        let k = self.k;
        (r % k != to % k) as u32 + (r / k != to / k) as u32
    }
}

impl RoutingFunction for FlatflyRouting {
    fn classes(&self) -> usize {
        if self.mode == Mode::Min { 1 } else { 2 }
    }

    fn at_source(&self, r: usize, pkt: &mut PacketRoute, rng: &mut dyn Draw, view: &dyn OccupancyView) {
        pkt.inter = u32::MAX;
        if self.mode == Mode::Min {
            return;
        }
        let dr = pkt.dest as usize / self.c;
        let ir = rng.int((self.k * self.k - 1) as u32) as usize;
        if ir == r || ir == dr || r == dr {
            return;
        }
        if self.mode == Mode::Ugal {
            let qm = view.used(r, self.dor_port(r, dr)) as u64 * self.hops(r, dr) as u64;
            let qn = view.used(r, self.dor_port(r, ir)) as u64 * (self.hops(r, ir) + self.hops(ir, dr)) as u64;
            if qm <= qn {
                return;
            }
        }
        pkt.inter = ir as u32;
    }

    fn route(&self, r: usize, in_port: usize, pkt: &mut PacketRoute, _rng: &mut dyn Draw) -> (usize, usize) {
        if in_port < self.c {
            pkt.ph = 0;
        }
        if pkt.inter != u32::MAX && r == pkt.inter as usize {
            pkt.ph = 1;
        }
        let dest = pkt.dest as usize;
        let dr = dest / self.c;
        let class = if pkt.inter == u32::MAX { 0 } else { pkt.ph as usize };
        if r == dr && (pkt.inter == u32::MAX || pkt.ph == 1) {
            return (dest % self.c, class);
        }
        let target = if pkt.inter != u32::MAX && pkt.ph == 0 { pkt.inter as usize } else { dr };
        (self.dor_port(r, target), class)
    }
}
