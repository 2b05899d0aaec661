//! `ghost_minimal`: ghost routing over minimal routes (paper §V, Algorithm 1). Each CPU keeps
//! its real messages in per-destination queues and, while it has any, injects one full-size
//! packet per free slot towards the next module of a uniform random permutation of the
//! modules, a fresh permutation being drawn when one is used up. If messages are queued for
//! that module they ride in the packet (a "ghost" of the dummy, batched up to `secure.batch`
//! per packet), otherwise it is a dummy. Every packet is answered by one packet from the
//! module (the real data or a dummy reply), so return traffic mirrors the requests.
//!
//! Oblivious: the destinations a CPU sends to are, by construction, a concatenation of
//! uniform random permutations drawn from the CPU's own random stream; the program only
//! decides *whether* a slot is used now (when it has something queued) and what is inside
//! the encrypted, equal-sized packet, never where the next packet goes. The replies go back
//! along the same pairs. What it does not hide: when and how much a CPU sends (timing and
//! volume), which the paper's threat model leaves out.
//! Cost (Table II): (1 + D) packets per real packet, (1 + D) x h_avg hops, with D the
//! dummies per real packet (docs/memnet.md derives D for uniform traffic).

use super::{Batching, DestQueues, InjectionPolicy, Injected, Net, Packet, PermStream, Queued};

/// Ghost injection over any slot list: a permutation of the modules (ghost_minimal) or of a
/// public multiset of them (adaptive_ghost).
pub struct Ghost {
    name: &'static str,
    q: Vec<DestQueues>,
    perm: Vec<PermStream<u32>>,
    batching: Batching,
    pending: usize,
}

impl Ghost {
    pub fn with_slots(name: &'static str, net: &Net, slots: Vec<u32>) -> Self {
        Self {
            name,
            q: (0..net.nodes).map(|_| DestQueues::default()).collect(),
            perm: (0..net.nodes).map(|n| PermStream::new(slots.clone(), net.rng(name, n))).collect(),
            batching: Batching::from(&net.secure),
            pending: 0,
        }
    }
}

impl InjectionPolicy for Ghost {
    fn name(&self) -> &'static str {
        self.name
    }
    fn push(&mut self, n: usize, m: Queued, _now: u64) {
        self.q[n].push(m);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, _now: u64) -> Option<Injected> {
        if self.q[n].count == 0 {
            return None;
        }
        let d = self.perm[n].next_item();
        let mut msgs = Vec::new();
        self.q[n].take(d, self.batching, &mut msgs, &mut (0, 0));
        self.pending -= msgs.len();
        Some(Injected::Packet(Packet { msgs, route: vec![d], turn: true, tree: false }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
}

pub type GhostMinimal = Ghost;

impl GhostMinimal {
    pub fn new(net: &Net) -> Self {
        Ghost::with_slots("ghost_minimal", net, net.module_nodes())
    }
}
