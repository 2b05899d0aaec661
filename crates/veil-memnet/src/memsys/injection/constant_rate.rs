//! `constant_rate`: every node (CPU and module) injects one full-size packet every slot
//! (`secure.slot_cycles`, 0 = back to back) for as long as the program runs, towards the next
//! destination of a per-node stream of uniform random permutations of the nodes it talks to
//! (a CPU: the modules; a module: the CPUs; a node hosting both: both). The packet carries
//! the messages queued for that destination (up to `secure.batch`), else it is a dummy.
//! Modules queue their replies and send them in their own slots.
//!
//! Oblivious in space and time: every injection channel sends one packet per slot whatever
//! the program does, to a destination drawn independently of it; only the encrypted contents
//! differ. The price is the full injection bandwidth all the time (Table II: injection and
//! network bandwidth at their maximum, whatever the load).

use super::{Batching, DestQueues, InjectionPolicy, Injected, Net, Packet, PermStream, Queued};

pub struct ConstantRate {
    q: Vec<DestQueues>,
    perm: Vec<Option<PermStream<u32>>>,
    next_slot: Vec<u64>,
    slot: u64,
    batching: Batching,
    pending: usize,
    finished: bool,
}

impl ConstantRate {
    pub fn new(net: &Net) -> Self {
        let mut dests: Vec<Vec<u32>> = vec![Vec::new(); net.nodes];
        let mods = net.module_nodes();
        for &c in &net.cpu_nodes {
            dests[c as usize].extend(&mods);
            for &m in &mods {
                dests[m as usize].push(c);
            }
        }
        let perm = dests
            .into_iter()
            .enumerate()
            .map(|(n, mut d)| {
                d.sort_unstable();
                d.dedup();
                (!d.is_empty()).then(|| PermStream::new(d, net.rng("constant_rate", n)))
            })
            .collect();
        let s = &net.secure;
        Self {
            q: (0..net.nodes).map(|_| DestQueues::default()).collect(),
            perm,
            next_slot: vec![0; net.nodes],
            slot: if s.slot_cycles == 0 { s.packet_flits as u64 } else { s.slot_cycles as u64 },
            batching: Batching::from(s),
            pending: 0,
            finished: false,
        }
    }
}

impl InjectionPolicy for ConstantRate {
    fn name(&self) -> &'static str {
        "constant_rate"
    }
    fn push(&mut self, n: usize, m: Queued, _now: u64) {
        self.q[n].push(m);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, now: u64) -> Option<Injected> {
        if (self.finished && self.q[n].count == 0) || now < self.next_slot[n] {
            return None;
        }
        let d = self.perm[n].as_mut()?.next_item();
        self.next_slot[n] = now + self.slot;
        let mut msgs = Vec::new();
        self.q[n].take(d, self.batching, &mut msgs, &mut (0, 0));
        self.pending -= msgs.len();
        Some(Injected::Packet(Packet { msgs, route: vec![d], turn: false, tree: false }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn busy(&self) -> bool {
        !self.finished || self.pending > 0
    }
    fn finish(&mut self) {
        self.finished = true;
    }
}
