//! `broadcast`: every request is broadcast along a spanning tree of the modules (paper §V).
//! The tree is the breadth-first tree of the router graph rooted at the CPU's router (lowest
//! router number first, so it is fixed and public). The CPU sends one full-size packet to
//! its root module; each module that receives a copy serves the messages addressed to it and
//! passes a copy to each of its children. Replies converge: a module answers its parent
//! (the root answers the CPU) with one full-size packet once all its children have answered
//! and its own data is ready, carrying the real data found in its subtree, or nothing.
//!
//! Oblivious: every request produces the same packets on the same tree edges, whatever
//! module it is for. Not hidden: timing (the reply of the subtree that read DRAM comes
//! later), outside the paper's threat model.
//! Cost (Table II): 1 packet injected by the CPU; 2 (N - 1) tree edges plus the CPU's link
//! per request, but only the tree's depth in latency (about the diameter) instead of
//! sequential's N legs.

use super::{Batching, Fifo, InjectionPolicy, Injected, Net, Packet, Queued, Tree};

pub struct Broadcast {
    fifo: Vec<Fifo>,
    trees: Vec<Option<Tree>>,
    roots: Vec<u32>,
    batching: Batching,
    pending: usize,
}

/// The breadth-first spanning tree of the routers from `root`.
pub fn bfs_tree(net: &Net, root: usize) -> Tree {
    let mut parent = vec![u32::MAX; net.modules];
    let mut children = vec![Vec::new(); net.modules];
    let mut seen = vec![false; net.modules];
    let mut q = std::collections::VecDeque::from([root]);
    seen[root] = true;
    while let Some(x) = q.pop_front() {
        let mut nb = net.adjacency[x].clone();
        nb.sort_unstable();
        for y in nb {
            if !seen[y as usize] {
                seen[y as usize] = true;
                parent[y as usize] = x as u32;
                children[x].push(y);
                q.push_back(y as usize);
            }
        }
    }
    Tree { parent, children }
}

impl Broadcast {
    pub fn new(net: &Net) -> Self {
        let mut trees = vec![None; net.modules];
        let mut roots = vec![0; net.nodes];
        for &c in &net.cpu_nodes {
            let r = net.router_of(c);
            roots[c as usize] = net.module_node(r);
            if trees[r].is_none() {
                trees[r] = Some(bfs_tree(net, r));
            }
        }
        Self { fifo: (0..net.nodes).map(|_| Fifo::default()).collect(), trees, roots, batching: Batching::from(&net.secure), pending: 0 }
    }
}

impl InjectionPolicy for Broadcast {
    fn name(&self) -> &'static str {
        "broadcast"
    }
    fn push(&mut self, n: usize, m: Queued, _now: u64) {
        self.fifo[n].push(m);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, _now: u64) -> Option<Injected> {
        let (_, msgs) = self.fifo[n].take(self.batching, false)?;
        self.pending -= msgs.len();
        Some(Injected::Packet(Packet { msgs, route: vec![self.roots[n]], turn: false, tree: true }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn tree(&self, root: usize) -> Option<&Tree> {
        self.trees.get(root)?.as_ref()
    }
}
