//! Routing and injection algorithms, chosen by name (`injection`): what a node sends next and
//! along which route. The memory system hands every message ready to leave a node to the
//! algorithm and asks it for the next packet when the node's injection port is free.
//!
//! `minimal` (alias `direct`) is the non-secure baseline: real messages in order, each its
//! own HMC-sized packet, replies queued at the module like any other message. The secure
//! algorithms (ghost routing paper §V, and beyond it) answer with [`Packet`]s: full-size
//! padded packets that carry up to `secure.batch` real messages (or none: a dummy) along a
//! route of waypoint nodes. A packet may *turn* at its final module and come back along the
//! reversed route as the reply (so every packet a CPU sends, dummy or not, is answered by
//! one packet: the paper's "a dummy request generates a dummy reply"), or spread along a
//! spanning tree (broadcast). The memory system moves packets leg by leg, starts the vault
//! accesses of the messages addressed to each waypoint, and holds a packet at a waypoint
//! only while responses it must carry away from there are outstanding.

pub mod adaptive_ghost;
pub mod broadcast;
pub mod constant_rate;
pub mod ghost_minimal;
pub mod ghost_nonminimal;
pub mod minimal;
pub mod minimal_dummy;
pub mod sequential;

use std::collections::{HashMap, VecDeque};

use rand::seq::SliceRandom;
use veil_core::{RngStreams, StreamRng};

use super::config::SecureConfig;
use crate::error::ConfigError;

/// (name, what it does). `direct` is the old name of `minimal`.
pub const INJECTION_NAMES: &[(&str, &str)] = &[
    ("minimal", "non-secure baseline: real messages in order over minimal routes, no dummies, HMC packet sizes"),
    ("direct", "alias of minimal (its former name)"),
    ("minimal_dummy", "every real packet is sent in a round of full-size packets to every module in random order, dummies to all but its own"),
    ("sequential", "every request packet visits all modules in a fixed cyclic order and comes back to its CPU with the reply"),
    ("broadcast", "every request is broadcast along a spanning tree of the modules; replies converge back up the tree"),
    ("ghost_minimal", "each CPU injects towards a fresh uniform random permutation of the modules; queued real messages replace the dummy (ghost packets)"),
    ("ghost_nonminimal", "Valiant-style ghost routing: permutation of (intermediate, final) module pairs; a message fits a slot naming it as either"),
    ("constant_rate", "every node injects one full-size packet per slot towards a permutation stream, real if one is queued for that destination, else dummy"),
    ("adaptive_ghost", "ghost_minimal over a public multiset: declared hot modules get hot_weight slots per round (oblivious for a fixed public profile)"),
];

/// The `[secure]` parameters each algorithm reads (`veil list` shows them under the name).
pub const INJECTION_PARAMS: &[(&str, &[&str])] = &[
    ("minimal", &[]),
    ("direct", &[]),
    ("minimal_dummy", &["batch", "packet_flits", "dwell_cycles"]),
    ("sequential", &["batch", "packet_flits", "dwell_cycles"]),
    ("broadcast", &["batch", "packet_flits", "dwell_cycles"]),
    ("ghost_minimal", &["batch", "packet_flits", "dwell_cycles", "finish_rounds"]),
    ("ghost_nonminimal", &["batch", "packet_flits", "dwell_cycles", "finish_rounds"]),
    ("constant_rate", &["batch", "packet_flits", "slot_cycles"]),
    ("adaptive_ghost", &["batch", "packet_flits", "hot_modules", "hot_weight", "dwell_cycles", "finish_rounds"]),
];

/// What a node injects next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injected {
    /// A queued message as its own HMC-sized packet (memory-system message id).
    Real(u32),
    /// A dummy packet of `flits` flits to `dest` (dropped there).
    Dummy { dest: u32, flits: u16 },
    /// A full-size secure packet.
    Packet(Packet),
}

/// A full-size (`secure.packet_flits`) packet of a secure algorithm.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Packet {
    /// Real messages it carries (memory-system ids); empty: a dummy.
    pub msgs: Vec<u32>,
    /// Waypoint nodes after the source, the last being the final destination.
    pub route: Vec<u32>,
    /// At the final module, return to the source along the reversed route as the reply.
    pub turn: bool,
    /// Broadcast: `route` is the tree's root; the packet spreads along [`InjectionPolicy::tree`].
    pub tree: bool,
}

/// What a policy may know about a queued message.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    pub id: u32,
    pub dest: u32,
    pub flits: u16,
    /// Flits of the reply it will get (0 for a reply).
    pub reply_flits: u16,
    /// Request (0) or reply (1).
    pub class: u8,
}

/// A spanning tree of the routers (broadcast).
#[derive(Clone, Debug, Default)]
pub struct Tree {
    /// Parent router of each router (`u32::MAX` at the root).
    pub parent: Vec<u32>,
    pub children: Vec<Vec<u32>>,
}

pub trait InjectionPolicy: Send {
    fn name(&self) -> &'static str;
    /// A message is ready to leave node `n` at cycle `now`.
    fn push(&mut self, n: usize, m: Queued, now: u64);
    /// Node `n`'s injection port is free at `now`: the next packet, if any.
    fn pop(&mut self, n: usize, now: u64) -> Option<Injected>;
    /// Messages held by the policy (all nodes).
    fn pending(&self) -> usize;
    /// Whether `pop(n)` returns something only while a message pushed at `n` is held (no
    /// dummies, rounds or slots of its own): the memory system then visits only nodes with work.
    fn pops_only_pushed(&self) -> bool {
        false
    }
    /// With `pops_only_pushed`: whether a message pushed at `n` is still held.
    fn queued_at(&self, _n: usize) -> bool {
        true
    }
    /// Whether the policy may inject something without a new message (rounds in progress,
    /// constant-rate slots): the memory system must keep asking and may not fast-forward.
    fn busy(&self) -> bool {
        self.pending() > 0
    }
    /// Every core has finished and every request is answered: stop sending dummies.
    fn finish(&mut self) {}
    /// Broadcast: the spanning tree rooted at router `root`.
    fn tree(&self, _root: usize) -> Option<&Tree> {
        None
    }
}

/// What an algorithm needs to know about the network it runs on.
#[derive(Clone, Debug)]
pub struct Net {
    pub nodes: usize,
    /// Terminals per router; node `m * tpr` is module m's vault port.
    pub tpr: usize,
    pub modules: usize,
    pub cpu_nodes: Vec<u32>,
    /// Router-to-router links (out-neighbours of each router).
    pub adjacency: Vec<Vec<u32>>,
    pub seed: u64,
    pub secure: SecureConfig,
}

impl Net {
    pub fn module_node(&self, m: usize) -> u32 {
        (m * self.tpr) as u32
    }
    pub fn router_of(&self, node: u32) -> usize {
        node as usize / self.tpr
    }
    pub fn module_nodes(&self) -> Vec<u32> {
        (0..self.modules).map(|m| self.module_node(m)).collect()
    }
    /// A node's own random stream for algorithm `name`.
    pub fn rng(&self, name: &str, node: usize) -> StreamRng {
        RngStreams::new(self.seed).named(&format!("memnet.injection.{name}"), node as u64)
    }
    /// Hop distances between routers (BFS over the links), `u32::MAX` if unreachable.
    pub fn distances_from(&self, r: usize) -> Vec<u32> {
        let mut d = vec![u32::MAX; self.modules];
        let mut q = VecDeque::from([r]);
        d[r] = 0;
        while let Some(x) = q.pop_front() {
            for &y in &self.adjacency[x] {
                if d[y as usize] == u32::MAX {
                    d[y as usize] = d[x] + 1;
                    q.push_back(y as usize);
                }
            }
        }
        d
    }
}

/// A stream of uniform random permutations of `items`, a fresh one drawn each time one is
/// used up: the destination order of ghost routing.
pub struct PermStream<T: Copy> {
    items: Vec<T>,
    pos: usize,
    rng: StreamRng,
}

impl<T: Copy> PermStream<T> {
    pub fn new(items: Vec<T>, rng: StreamRng) -> Self {
        let pos = items.len();
        Self { items, pos, rng }
    }
    pub fn next_item(&mut self) -> T {
        if self.pos == self.items.len() {
            self.items.shuffle(&mut self.rng);
            self.pos = 0;
        }
        self.pos += 1;
        self.items[self.pos - 1]
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Between two permutations (none started, or the last one used up).
    pub fn at_boundary(&self) -> bool {
        self.pos == self.items.len()
    }
}

/// `secure.finish_rounds`: a node that runs out of messages keeps sending dummies until its
/// current permutation is used up, so its bursts are whole permutations (the last one too,
/// after the program ends). Tracks how many nodes are in the middle of one.
#[derive(Default)]
pub struct Rounds {
    pub on: bool,
    pub open: usize,
}

impl Rounds {
    /// Whether node `n` (with `queued` messages) sends now, and the bookkeeping around the
    /// draw `next` makes from `perm`.
    pub fn draw<T: Copy>(&mut self, queued: usize, perm: &mut PermStream<T>) -> Option<T> {
        let mid = !perm.at_boundary();
        if queued == 0 && !(self.on && mid) {
            return None;
        }
        let x = perm.next_item();
        match (mid, !perm.at_boundary()) {
            (false, true) => self.open += 1,
            (true, false) => self.open -= 1,
            _ => {}
        }
        Some(x)
    }
    /// Nodes that must keep sending although nothing is queued.
    pub fn busy(&self) -> bool {
        self.on && self.open > 0
    }
}

/// The batching rule: messages share a packet while there are at most `batch` of them and
/// both they and their replies fit in `packet_flits` flits.
#[derive(Clone, Copy, Debug)]
pub struct Batching {
    pub batch: usize,
    pub packet_flits: u16,
}

impl Batching {
    pub fn from(s: &SecureConfig) -> Self {
        Self { batch: s.batch as usize, packet_flits: s.packet_flits }
    }
    /// Takes messages from `q` (front first) into `out` while they fit.
    pub fn fill(&self, q: &mut VecDeque<Queued>, out: &mut Vec<u32>, used: &mut (u16, u16)) -> usize {
        let mut taken = 0;
        while out.len() < self.batch {
            let Some(m) = q.front() else { break };
            if used.0 + m.flits > self.packet_flits || used.1 + m.reply_flits > self.packet_flits {
                break;
            }
            used.0 += m.flits;
            used.1 += m.reply_flits;
            out.push(m.id);
            q.pop_front();
            taken += 1;
        }
        taken
    }
}

/// Per-destination queues of one node.
#[derive(Default)]
pub struct DestQueues {
    q: HashMap<u32, VecDeque<Queued>>,
    pub count: usize,
}

impl DestQueues {
    pub fn push(&mut self, m: Queued) {
        self.q.entry(m.dest).or_default().push_back(m);
        self.count += 1;
    }
    /// Messages for `dest` that fit one packet (with what `used` already holds).
    pub fn take(&mut self, dest: u32, b: Batching, out: &mut Vec<u32>, used: &mut (u16, u16)) {
        if let Some(q) = self.q.get_mut(&dest) {
            self.count -= b.fill(q, out, used);
        }
    }
}

/// A FIFO of one node's messages, batched by the front message's destination or by any.
#[derive(Default)]
pub struct Fifo {
    q: VecDeque<Queued>,
}

impl Fifo {
    pub fn push(&mut self, m: Queued) {
        self.q.push_back(m);
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// The front message and the following ones that fit with it; `same_dest`: only those
    /// for the front's destination. Returns the front's destination.
    pub fn take(&mut self, b: Batching, same_dest: bool) -> Option<(u32, Vec<u32>)> {
        let front = *self.q.front()?;
        let mut out = Vec::new();
        let mut used = (0u16, 0u16);
        let mut i = 0;
        while i < self.q.len() && out.len() < b.batch {
            let m = self.q[i];
            let fits = used.0 + m.flits <= b.packet_flits && used.1 + m.reply_flits <= b.packet_flits;
            if fits && (!same_dest || m.dest == front.dest) {
                used.0 += m.flits;
                used.1 += m.reply_flits;
                out.push(m.id);
                self.q.remove(i);
            } else {
                i += 1;
            }
        }
        Some((front.dest, out))
    }
}

/// Builds the named algorithm for a network.
pub fn build(name: &str, net: &Net) -> Result<Box<dyn InjectionPolicy>, ConfigError> {
    let s = &net.secure;
    if s.batch == 0 {
        return Err(ConfigError("secure.batch: must be >= 1 (messages per packet)".into()));
    }
    if s.packet_flits < 5 {
        return Err(ConfigError(format!(
            "secure.packet_flits: must be >= 5, the largest HMC packet (a 64-byte line and its header), got {}",
            s.packet_flits
        )));
    }
    if name == "constant_rate" && s.slot_cycles != 0 && s.slot_cycles < s.packet_flits as u32 {
        return Err(ConfigError(format!(
            "secure.slot_cycles: {} is shorter than a packet ({} flits, one flit per cycle on an injection channel)",
            s.slot_cycles, s.packet_flits
        )));
    }
    if name == "ghost_nonminimal" && net.modules < 2 {
        return Err(ConfigError("injection: 'ghost_nonminimal' needs at least 2 modules (an intermediate besides the destination)".into()));
    }
    Ok(match name {
        "minimal" | "direct" => Box::new(minimal::Minimal::new(net.nodes)),
        "minimal_dummy" => Box::new(minimal_dummy::MinimalDummy::new(net)),
        "sequential" => Box::new(sequential::Sequential::new(net)),
        "broadcast" => Box::new(broadcast::Broadcast::new(net)),
        "ghost_minimal" => Box::new(ghost_minimal::GhostMinimal::new(net)),
        "ghost_nonminimal" => Box::new(ghost_nonminimal::GhostNonminimal::new(net)),
        "constant_rate" => Box::new(constant_rate::ConstantRate::new(net)),
        "adaptive_ghost" => Box::new(adaptive_ghost::new(net)?),
        other => {
            let names: Vec<&str> = INJECTION_NAMES.iter().map(|x| x.0).collect();
            return Err(ConfigError(format!("injection: unknown algorithm '{other}' (known: {})", names.join(", "))));
        }
    })
}
