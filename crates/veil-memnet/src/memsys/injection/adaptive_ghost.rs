//! `adaptive_ghost` (beyond the paper, which names hotspot-aware ghost routing as the way
//! forward): ghost routing whose rounds are uniform random permutations of a *multiset* of
//! modules, every module once and each module of `secure.hot_modules` `secure.hot_weight`
//! times. Under hotspot traffic, messages for a hot module find a slot hot_weight times as
//! often, so fewer dummies are sent while they wait and they wait less.
//!
//! Why it stays oblivious: the multiset is part of the configuration, fixed for the whole
//! run and public (the adversary is assumed to know it, as it knows the algorithm). Each
//! round is a uniform shuffle of that fixed multiset drawn from the CPU's own random stream;
//! the program decides only whether a slot is used now and what the encrypted, equal-sized
//! packet carries. So the observable (source, destination) stream has the same distribution
//! for every program run under the same configuration: biased, but not by the program's
//! accesses. It does not adapt at run time on purpose: a composition chosen from the queues
//! would leak the access distribution. The profile may be derived from a program's expected
//! hotspots before it runs; then that profile (and only it) is public.
//! Cost: as ghost_minimal, with rounds of N + (w - 1) x |hot| slots.

use super::ghost_minimal::Ghost;
use super::Net;
use crate::error::ConfigError;

pub fn new(net: &Net) -> Result<Ghost, ConfigError> {
    let s = &net.secure;
    if s.hot_weight == 0 {
        return Err(ConfigError("secure.hot_weight: must be >= 1 (slots per round of a hot module)".into()));
    }
    let mut slots = net.module_nodes();
    let mut seen = Vec::new();
    for &m in &s.hot_modules {
        if m as usize >= net.modules {
            return Err(ConfigError(format!(
                "secure.hot_modules: module {m} does not exist (the network has {} modules, 0..{})",
                net.modules,
                net.modules - 1
            )));
        }
        if seen.contains(&m) {
            return Err(ConfigError(format!("secure.hot_modules: module {m} is listed twice")));
        }
        seen.push(m);
        for _ in 1..s.hot_weight {
            slots.push(net.module_node(m as usize));
        }
    }
    Ok(Ghost::with_slots("adaptive_ghost", net, slots))
}
