//! `minimal_dummy`: the paper's naive secure minimal routing. Each real packet a CPU sends is
//! accompanied by dummy packets to every other module: the CPU sends one full-size packet to
//! every module, in the order of a fresh uniform random permutation, the real one in its
//! destination's slot. Every packet is answered by one full-size packet from the module it
//! reached (real data or a dummy reply), so the modules' return traffic is the mirror image.
//!
//! Oblivious: per real packet the adversary sees one packet to each module in a uniformly
//! random order (and one back from each); that is the same whichever module was meant.
//! Cost (Table II): N packets injected per real packet (N-1 dummies), N x h_avg hops.

use std::collections::VecDeque;

use super::{Batching, Fifo, InjectionPolicy, Injected, Net, Packet, PermStream};

struct Round {
    real: u32,
    msgs: Vec<u32>,
    left: usize,
}

pub struct MinimalDummy {
    fifo: Vec<Fifo>,
    perm: Vec<PermStream<u32>>,
    round: Vec<Option<Round>>,
    order: Vec<VecDeque<u32>>,
    batching: Batching,
    pending: usize,
    rounds: usize,
}

impl MinimalDummy {
    pub fn new(net: &Net) -> Self {
        let modules = net.module_nodes();
        Self {
            fifo: (0..net.nodes).map(|_| Fifo::default()).collect(),
            perm: (0..net.nodes).map(|n| PermStream::new(modules.clone(), net.rng("minimal_dummy", n))).collect(),
            round: (0..net.nodes).map(|_| None).collect(),
            order: (0..net.nodes).map(|_| VecDeque::new()).collect(),
            batching: Batching::from(&net.secure),
            pending: 0,
            rounds: 0,
        }
    }
}

impl InjectionPolicy for MinimalDummy {
    fn name(&self) -> &'static str {
        "minimal_dummy"
    }
    fn push(&mut self, n: usize, m: super::Queued, _now: u64) {
        self.fifo[n].push(m);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, _now: u64) -> Option<Injected> {
        if self.round[n].is_none() {
            let (dest, msgs) = self.fifo[n].take(self.batching, true)?;
            self.pending -= msgs.len();
            // A whole fresh permutation per round: every module exactly once.
            let p = &mut self.perm[n];
            let order: VecDeque<u32> = (0..p.len()).map(|_| p.next_item()).collect();
            self.order[n] = order;
            self.round[n] = Some(Round { real: dest, msgs, left: self.order[n].len() });
            self.rounds += 1;
        }
        let r = self.round[n].as_mut().unwrap();
        let d = self.order[n].pop_front().expect("round has slots left");
        r.left -= 1;
        let msgs = if d == r.real { std::mem::take(&mut r.msgs) } else { Vec::new() };
        if r.left == 0 {
            self.round[n] = None;
            self.rounds -= 1;
        }
        Some(Injected::Packet(Packet { msgs, route: vec![d], turn: true, tree: false }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn busy(&self) -> bool {
        self.pending > 0 || self.rounds > 0
    }
}
