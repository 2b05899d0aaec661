//! `minimal`: the non-secure baseline. Real messages leave each node in arrival order, each as
//! its own HMC-sized packet over the network's minimal routes; modules queue their replies
//! like any other message. Nothing is hidden: every packet's destination is the module the
//! program touches. Cost (Table II): one packet per message, h_avg hops each.

use std::collections::VecDeque;

use super::{InjectionPolicy, Injected, Queued};

pub struct Minimal {
    q: Vec<VecDeque<u32>>,
    pending: usize,
}

impl Minimal {
    pub fn new(nodes: usize) -> Self {
        Self { q: (0..nodes).map(|_| VecDeque::new()).collect(), pending: 0 }
    }
}

impl InjectionPolicy for Minimal {
    fn name(&self) -> &'static str {
        "minimal"
    }
    fn push(&mut self, n: usize, m: Queued, _now: u64) {
        self.q[n].push_back(m.id);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, _now: u64) -> Option<Injected> {
        let id = self.q[n].pop_front()?;
        self.pending -= 1;
        Some(Injected::Real(id))
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn pops_only_pushed(&self) -> bool {
        true
    }
    fn queued_at(&self, n: usize) -> bool {
        !self.q[n].is_empty()
    }
}
