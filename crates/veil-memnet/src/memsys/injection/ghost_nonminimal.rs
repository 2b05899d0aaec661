//! `ghost_nonminimal`: ghost routing over Valiant-style routes (paper §V, Algorithm 2). The
//! permutation runs over (intermediate, final) pairs of modules, all N x N of them, freshly
//! shuffled each round. The packet of slot (i, f) goes CPU -> i -> f and carries the queued
//! messages for i *and* for f (up to `secure.batch`): a message may use a slot that names its
//! module as either node, so a message waits for one of about 2N slots per round of N^2
//! instead of one of N, and about half as many dummies are needed as with ghost_minimal.
//! (A slot with i = f is a minimal route.)
//!
//! Return traffic: at f the packet turns and comes back f -> i -> CPU, whether or not it
//! carried anything (a dummy reply where needed). Data for a message of f rides from f,
//! encrypted for the leg to i and again for the leg to the CPU (every leg has its own pair
//! pads); data for a message of i is put in at i, whose access started when the packet
//! passed on its way out. So a module's replies never go straight to the CPU: the
//! adversary sees the reply retrace the request's (i, f) pair, never which of them answered.
//!
//! Oblivious: the observable per-CPU stream of (intermediate, final) pairs is a
//! concatenation of uniform random permutations of all pairs, whatever the program accesses.
//! Cost (Table II): (1 + D') packets per real packet with D' about half ghost_minimal's D,
//! 2 x h_avg hops each way (Valiant).

use super::{Batching, DestQueues, InjectionPolicy, Injected, Net, Packet, PermStream, Queued, Rounds};

pub struct GhostNonminimal {
    q: Vec<DestQueues>,
    perm: Vec<PermStream<(u32, u32)>>,
    batching: Batching,
    pending: usize,
    rounds: Rounds,
}

impl GhostNonminimal {
    pub fn new(net: &Net) -> Self {
        let mods = net.module_nodes();
        let pairs: Vec<(u32, u32)> = mods.iter().flat_map(|&i| mods.iter().map(move |&f| (i, f))).collect();
        Self {
            q: (0..net.nodes).map(|_| DestQueues::default()).collect(),
            perm: (0..net.nodes).map(|n| PermStream::new(pairs.clone(), net.rng("ghost_nonminimal", n))).collect(),
            batching: Batching::from(&net.secure),
            pending: 0,
            rounds: Rounds { on: net.secure.finish_rounds, ..Default::default() },
        }
    }
}

impl InjectionPolicy for GhostNonminimal {
    fn name(&self) -> &'static str {
        "ghost_nonminimal"
    }
    fn push(&mut self, n: usize, m: Queued, _now: u64) {
        self.q[n].push(m);
        self.pending += 1;
    }
    fn pop(&mut self, n: usize, _now: u64) -> Option<Injected> {
        let (i, f) = self.rounds.draw(self.q[n].count, &mut self.perm[n])?;
        let mut msgs = Vec::new();
        let mut used = (0, 0);
        self.q[n].take(f, self.batching, &mut msgs, &mut used);
        if i != f {
            self.q[n].take(i, self.batching, &mut msgs, &mut used);
        }
        self.pending -= msgs.len();
        let route = if i == f { vec![f] } else { vec![i, f] };
        Some(Injected::Packet(Packet { msgs, route, turn: true, tree: false }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn busy(&self) -> bool {
        self.pending > 0 || self.rounds.busy()
    }
}
