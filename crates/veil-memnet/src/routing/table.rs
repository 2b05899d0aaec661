//! Minimal routing on an arbitrary topology by shortest-path tables (BFS on router hops;
//! ties go to the lowest port).
//!
//! Deadlock freedom by hop-indexed VC classes: a packet that has taken i network hops uses
//! class i on its next channel. Every dependency goes from class i to class i+1, so the
//! dependency graph is acyclic; the number of classes is the network diameter, and
//! `router.num_vcs` must be at least that (checked, with a clear error).

use super::{Draw, PacketRoute, RoutingFunction};
use crate::error::ConfigError;
use crate::topology::{End, Shape, Topology};

pub struct TableRouting {
    routers: usize,
    terminals: usize,
    /// next_port[r * routers + dest_router]
    next_port: Vec<u16>,
    diameter: usize,
}

impl TableRouting {
    pub fn new(topo: &Topology) -> Result<Self, ConfigError> {
        let Shape::Graph { terminals_per_router } = topo.shape else {
            return Err(ConfigError("routing: table routing needs a file topology".into()));
        };
        let n = topo.routers;
        if n > 4096 {
            return Err(ConfigError(format!("topology file: at most 4096 routers for table routing (got {n})")));
        }
        let mut next_port = vec![u16::MAX; n * n];
        let mut diameter = 1;
        // BFS backwards from each destination over reversed links.
        let mut rev: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
        for r in 0..n {
            for (port, l) in topo.out[r].iter().enumerate() {
                if let End::Router { r: b, .. } = l.to {
                    rev[b as usize].push((r, port));
                }
            }
        }
        let mut dist = vec![usize::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        for d in 0..n {
            dist.iter_mut().for_each(|x| *x = usize::MAX);
            dist[d] = 0;
            queue.clear();
            queue.push_back(d);
            while let Some(v) = queue.pop_front() {
                for &(u, port) in &rev[v] {
                    let cand = dist[v] + 1;
                    if dist[u] == usize::MAX {
                        dist[u] = cand;
                        next_port[u * n + d] = port as u16;
                        queue.push_back(u);
                    } else if dist[u] == cand && (port as u16) < next_port[u * n + d] {
                        next_port[u * n + d] = port as u16;
                    }
                }
            }
            if let Some(u) = (0..n).find(|&u| dist[u] == usize::MAX) {
                return Err(ConfigError(format!("topology file: router {d} cannot be reached from router {u}")));
            }
            diameter = diameter.max(dist.iter().copied().max().unwrap_or(0));
        }
        Ok(Self { routers: n, terminals: terminals_per_router, next_port, diameter })
    }

    pub fn diameter(&self) -> usize {
        self.diameter
    }
}

impl RoutingFunction for TableRouting {
    fn classes(&self) -> usize {
        self.diameter
    }

    fn route(&self, r: usize, in_port: usize, pkt: &mut PacketRoute, _rng: &mut dyn Draw) -> (usize, usize) {
        if in_port < self.terminals {
            pkt.count = 0;
        }
        let dest = pkt.dest as usize;
        let dr = dest / self.terminals;
        if r == dr {
            return (dest % self.terminals, (pkt.count as usize).min(self.diameter - 1));
        }
        let class = pkt.count as usize;
        pkt.count = pkt.count.saturating_add(1);
        (self.next_port[r * self.routers + dr] as usize, class)
    }
}
