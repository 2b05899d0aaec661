//! Injection policies, chosen by name: what a node sends next. The memory system hands
//! every message ready to leave a node to the policy and asks it for the next packet when
//! the node's injection port is free. `direct` sends real messages in arrival order; secure
//! routing policies (dummy packets, ghost packets, batching by destination) plug in here
//! by returning `Dummy` packets or reordering.

use std::collections::VecDeque;

use crate::error::ConfigError;

pub const INJECTION_NAMES: &[(&str, &str)] = &[("direct", "real messages in order, no dummies (non-secure baseline)")];

/// What a node injects next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// A queued message (memory-system message id).
    Real(u32),
    /// A dummy packet of `flits` flits to `dest` (dropped there).
    Dummy { dest: u32, flits: u16 },
}

/// What a policy may know about a queued message.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    pub id: u32,
    pub dest: u32,
    pub flits: u16,
    /// Request (0) or reply (1).
    pub class: u8,
}

pub trait InjectionPolicy: Send {
    fn name(&self) -> &'static str;
    /// A message is ready to leave node `n` at cycle `now`.
    fn push(&mut self, n: usize, m: Queued, now: u64);
    /// Node `n`'s injection port is free at `now`: the next packet, if any.
    fn pop(&mut self, n: usize, now: u64) -> Option<Injected>;
    /// Messages held by the policy (all nodes).
    fn pending(&self) -> usize;
}

/// `direct`: one FIFO per node.
pub struct Direct {
    q: Vec<VecDeque<u32>>,
    pending: usize,
}

impl InjectionPolicy for Direct {
    fn name(&self) -> &'static str {
        "direct"
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
}

pub fn build(name: &str, nodes: usize) -> Result<Box<dyn InjectionPolicy>, ConfigError> {
    match name {
        "direct" => Ok(Box::new(Direct { q: (0..nodes).map(|_| VecDeque::new()).collect(), pending: 0 })),
        other => {
            let names: Vec<&str> = INJECTION_NAMES.iter().map(|x| x.0).collect();
            Err(ConfigError(format!("injection: unknown policy '{other}' ({})", names.join(", "))))
        }
    }
}
