//! Dimension-order routing on k-ary n-cubes.
//!
//! Mesh: resolve dimension 0 first, then 1, ... Deadlock-free with one VC class: a packet
//! only turns from a lower to a higher dimension, so the channel dependency graph is acyclic
//! (Dally & Seitz). All VCs of a port are interchangeable.
//!
//! Torus: same order, shortest direction per dimension (ties go +). Inside a dimension the
//! ring has a cycle, broken by a dateline on the wrap-around link: a packet uses class 0
//! until it has crossed the wrap-around link of its current dimension and class 1 after; it
//! returns to class 0 when it changes dimension. Class-0 channels never depend on the wrap
//! link's class-0 buffer cyclically and class 1 is a chain that ends before the dateline is
//! reached again, so each ring's dependency graph is acyclic; dimensions are ordered as in
//! the mesh. Needs 2 VC classes.

use super::{PacketRoute, RoutingFunction};

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

    fn route(&self, r: usize, _in_port: usize, pkt: &mut PacketRoute) -> (usize, usize) {
        let (k, dest) = (self.k, pkt.dest as usize);
        let (mut cur, mut dst, mut src) = (r, dest, pkt.src as usize);
        for d in 0..self.n {
            let (x, dx, sx) = (cur % k, dst % k, src % k);
            if x != dx {
                if !self.torus {
                    return (if x < dx { 2 * d } else { 2 * d + 1 }, 0);
                }
                let plus = (dx + k - sx) % k <= k / 2;
                // Crossed the wrap link of this dimension already?
                let crossed = if plus { x < sx } else { x > sx };
                return (if plus { 2 * d } else { 2 * d + 1 }, crossed as usize);
            }
            cur /= k;
            dst /= k;
            src /= k;
        }
        (2 * self.n, 0)
    }
}
