//! Dimension-order routing on k-ary n-cubes (BookSim2's `dim_order_mesh` / `dim_order_torus`).
//!
//! Mesh: resolve dimension 0 first, then 1, ... Deadlock-free with one VC class: a packet
//! only turns from a lower to a higher dimension, so the channel dependency graph is acyclic
//! (Dally & Seitz). All VCs of a port are interchangeable.
//!
//! Torus: same dimension order. When a packet turns into a dimension it picks the shorter
//! direction (a tie, k even and distance k/2, is a coin flip) and a VC class it keeps for the
//! whole dimension: moving up, class 1 if the route crosses the wrap-around link (dateline)
//! and 0 otherwise; moving down, class 1 if it does *not* cross it and 0 if it does (BookSim2's
//! convention). In each direction one class holds only routes that never use the wrap link
//! (acyclic), the other only routes that do; a wrap-crossing route of length <= k/2 starts in
//! the lower half of the ring (moving down) and ends in the upper half, so one channel of the
//! ring is never used by that class and its dependencies cannot close a cycle. Dimensions are
//! ordered as in the mesh. Ejection may use any VC. Needs 2 VC classes.

use super::{Draw, PacketRoute, RoutingFunction, ANY_CLASS};

pub struct Dor {
    k: usize,
    n: usize,
    torus: bool,
}

impl Dor {
    pub fn new(k: usize, n: usize, torus: bool) -> Self {
        Self { k, n, torus }
    }
}

impl RoutingFunction for Dor {
    fn classes(&self) -> usize {
        if self.torus { 2 } else { 1 }
    }

    fn draws_while_routing(&self) -> bool {
        self.torus
    }

    fn route(&self, r: usize, in_port: usize, pkt: &mut PacketRoute, rng: &mut dyn Draw) -> (usize, usize) {
        let (k, dest) = (self.k, pkt.dest as usize);
        let (mut cur, mut dst) = (r, dest);
        for d in 0..self.n {
            let (x, dx) = (cur % k, dst % k);
            if x != dx {
                if !self.torus {
                    return (if x < dx { 2 * d } else { 2 * d + 1 }, 0);
                }
                if in_port / 2 == d {
                    // Keep going the same way, in the class chosen at the turn.
                    return (in_port ^ 1, pkt.ph as usize);
                }
                let dist2 = k as i64 - 2 * ((dx + k - x) % k) as i64;
                let up = dist2 > 0 || (dist2 == 0 && rng.int(1) != 0);
                pkt.ph = if up { (x > dx) as u8 } else { (dx < x) as u8 };
                return (if up { 2 * d } else { 2 * d + 1 }, pkt.ph as usize);
            }
            cur /= k;
            dst /= k;
        }
        (2 * self.n, if self.torus { ANY_CLASS } else { 0 })
    }
}
