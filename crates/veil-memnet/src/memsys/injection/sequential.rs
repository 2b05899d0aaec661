//! `sequential`: every request packet visits all modules in one fixed cyclic order and comes
//! back to its CPU (paper §V). The order is a nearest-neighbour tour of the routers (from
//! router 0, the closest unvisited router next, ties to the lowest number); a CPU enters it
//! at its own router. The full-size packet carries up to `secure.batch` messages for any
//! modules; at each module it is received, the messages for that module are served there
//! (the packet waits for their data, which it then carries on), and it is sent on to the
//! next module. After the last module it returns to its CPU with the replies.
//!
//! Oblivious: every request takes the same route, whatever module it is for, and no
//! dummies are needed. Not hidden: how long the packet stays at each module (the one that
//! reads DRAM holds it longer), a timing channel outside the paper's threat model.
//! Cost (Table II): 1 packet injected by the CPU, but about N module-to-module legs (the
//! tour's length in hops, about N on the dragonfly) instead of 2 x h_avg per request.

use super::{Batching, Fifo, InjectionPolicy, Injected, Net, Packet, Queued};

pub struct Sequential {
    fifo: Vec<Fifo>,
    /// Route of each CPU node: the tour from its router, then back to it.
    routes: Vec<Vec<u32>>,
    batching: Batching,
    pending: usize,
}

/// The nearest-neighbour tour of the routers from router 0.
pub fn tour(net: &Net) -> Vec<u32> {
    let dist: Vec<Vec<u32>> = (0..net.modules).map(|r| net.distances_from(r)).collect();
    let mut seen = vec![false; net.modules];
    let mut order = vec![0u32];
    seen[0] = true;
    let mut at = 0usize;
    for _ in 1..net.modules {
        let next = (0..net.modules).filter(|&r| !seen[r]).min_by_key(|&r| (dist[at][r], r)).expect("unvisited router");
        seen[next] = true;
        order.push(next as u32);
        at = next;
    }
    order
}

impl Sequential {
    pub fn new(net: &Net) -> Self {
        let order = tour(net);
        let mut routes = vec![Vec::new(); net.nodes];
        for &c in &net.cpu_nodes {
            let r = net.router_of(c) as u32;
            let start = order.iter().position(|&x| x == r).expect("router in tour");
            let mut route: Vec<u32> = (0..order.len()).map(|k| net.module_node(order[(start + k) % order.len()] as usize)).collect();
            route.push(c);
            routes[c as usize] = route;
        }
        Self { fifo: (0..net.nodes).map(|_| Fifo::default()).collect(), routes, batching: Batching::from(&net.secure), pending: 0 }
    }
}

impl InjectionPolicy for Sequential {
    fn name(&self) -> &'static str {
        "sequential"
    }
    fn push(&mut self, n: usize, m: Queued, _now: u64) {
        self.fifo[n].push(m);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, _now: u64) -> Option<Injected> {
        let (_, msgs) = self.fifo[n].take(self.batching, false)?;
        self.pending -= msgs.len();
        Some(Injected::Packet(Packet { msgs, route: self.routes[n].clone(), turn: false, tree: false }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
}
