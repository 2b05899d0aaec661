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
//! dummies per real packet (docs/memnet-memsys.md derives D for uniform traffic).

use super::{Batching, DestQueues, InjectionPolicy, Injected, Net, Packet, PermStream, Queued, Rounds};

/// Ghost injection over any slot list: a permutation of the modules (ghost_minimal) or of a
/// public multiset of them (adaptive_ghost).
pub struct Ghost {
    name: &'static str,
    q: Vec<DestQueues>,
    perm: Vec<PermStream<u32>>,
    batching: Batching,
    pending: usize,
    rounds: Rounds,
}

impl Ghost {
    pub fn with_slots(name: &'static str, net: &Net, slots: Vec<u32>) -> Self {
        Self {
            name,
            q: (0..net.nodes).map(|_| DestQueues::default()).collect(),
            perm: (0..net.nodes).map(|n| PermStream::new(slots.clone(), net.rng(name, n))).collect(),
            batching: Batching::from(&net.secure),
            pending: 0,
            rounds: Rounds { on: net.secure.finish_rounds, ..Default::default() },
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
        let d = self.rounds.draw(self.q[n].count, &mut self.perm[n])?;
        let mut msgs = Vec::new();
        self.q[n].take(d, self.batching, &mut msgs, &mut (0, 0));
        self.pending -= msgs.len();
        Some(Injected::Packet(Packet { msgs, route: vec![d], turn: true, tree: false }))
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn busy(&self) -> bool {
        self.pending > 0 || self.rounds.busy()
    }
}

pub type GhostMinimal = Ghost;

impl GhostMinimal {
    pub fn new(net: &Net) -> Self {
        Ghost::with_slots("ghost_minimal", net, net.module_nodes())
    }
}

/// Expected dummies per real packet of ghost routing over a permutation of `slots` entries
/// when a CPU has one message at a time with a uniformly random destination (docs/memnet-memsys.md
/// derives it): a Markov chain over s, the entries of the current permutation already used
/// when a message arrives. From s the destination is still ahead with probability (N-s)/N,
/// at a uniform place among the N-s entries left (t dummies first, t in 0..N-s, next state
/// s+t+1); otherwise the rest of the permutation goes as dummies and the destination is at a
/// uniform place j in the next one (N-s+j dummies, next state j+1). State N is state 0 (a
/// fresh permutation is drawn when the next slot is needed).
pub fn expected_dummies_one_at_a_time(slots: usize) -> f64 {
    let n = slots;
    let nf = n as f64;
    // Transition matrix P[s][u].
    let mut p = vec![vec![0.0; n]; n];
    for (s, row) in p.iter_mut().enumerate() {
        for t in 0..n - s {
            row[(s + t + 1) % n] += 1.0 / nf;
        }
        for j in 0..n {
            row[(j + 1) % n] += s as f64 / nf / nf;
        }
    }
    // Stationary distribution by power iteration (the chain is aperiodic: s -> s+1 and
    // s -> 1 both have positive probability).
    let mut pi = vec![1.0 / nf; n];
    for _ in 0..100_000 {
        let mut next = vec![0.0; n];
        for s in 0..n {
            for u in 0..n {
                next[u] += pi[s] * p[s][u];
            }
        }
        let diff: f64 = next.iter().zip(&pi).map(|(a, b)| (a - b).abs()).sum();
        pi = next;
        if diff < 1e-15 {
            break;
        }
    }
    (0..n)
        .map(|s| {
            let sf = s as f64;
            let ahead = (nf - sf) / nf * (nf - sf - 1.0) / 2.0;
            let behind = sf / nf * (nf - sf + (nf - 1.0) / 2.0);
            pi[s] * (ahead + behind)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small cases by hand: one module never needs a dummy; with two, a message finds its
    /// module next half the time.
    #[test]
    fn analytic_dummies_small_cases() {
        assert!(expected_dummies_one_at_a_time(1).abs() < 1e-12);
        // N = 2: from s = 0, 0 or 1 dummies (mean 1/2), next state 1 or 0; from s = 1, ahead
        // with probability 1/2 (no dummy, next 0), else 1 + j dummies (mean 3/2), next j + 1.
        // P(0->1) = 1/2, P(1->1) = 1/4, so pi = (3/5, 2/5) and the mean is 3/10 + 3/10.
        let d2 = expected_dummies_one_at_a_time(2);
        assert!((d2 - 0.6).abs() < 1e-9, "{d2}");
        // Grows about linearly with N (between N/2 and N).
        let d64 = expected_dummies_one_at_a_time(64);
        assert!(d64 > 32.0 && d64 < 64.0, "{d64}");
    }
}
