//! The timing of counters kept in memory under a Bonsai-Merkle counter tree (a nonzero
//! `counter_cache_entries`; 0 keeps every counter on chip, the default): a fill or writeback
//! needs its line's counter block. A counter-cache hit costs nothing; a miss reads the block from the SDRAM and then the
//! tree's node lines (`tree_arity` digests of 8 bytes each, one line per node) up to the first
//! node already cached (cached nodes are verified), one MAC operation per fetched block or node
//! once it arrives. The counter is used as soon as its block arrives (offsets, pads and
//! speculation start then); the data is usable only once the path is verified. Writebacks bump
//! the counter: the block is made dirty in the cache; a dirty victim is written back and its
//! parent's digest recomputed (one MAC operation).

use super::Sim;
use crate::bitmap::Lookup;

/// Counter blocks and tree nodes sit above data, bitmap and MAC lines: level L's node i at
/// `CTR_REGION + (L << 56) + i`.
const CTR_REGION: u64 = 1 << 60;

impl Sim {
    /// The counter of `line` needed at `t` (`write`: a writeback bumps it): returns when its
    /// value is known and when it is verified.
    pub(super) fn counter_fetch(&mut self, t: f64, line: u64, write: bool) -> (f64, f64) {
        let Some(cache) = self.ctr_cache.as_mut() else {
            return (t, t);
        };
        let mut idx = line / crate::tree::COUNTERS_PER_BLOCK;
        match cache.access(idx, write) {
            Lookup::Hit { ready, .. } => return (ready.max(t), ready.max(t)),
            Lookup::Miss => {}
        }
        self.r.counter_misses += 1;
        let known = self.dram.access(t, CTR_REGION + idx);
        let mut last = known;
        let mut fetched = 1u64;
        let mut victims = Vec::new();
        for level in 1..=self.tree_levels {
            idx /= self.tree_arity;
            let key = ((level as u64) << 56) | idx;
            let cache = self.ctr_cache.as_mut().expect("counter cache");
            if level == self.tree_levels || matches!(cache.access(key, false), Lookup::Hit { .. }) {
                break; // the root is on chip; a cached node is verified
            }
            self.r.tree_fetches += 1;
            last = last.max(self.dram.access(t, CTR_REGION + key));
            fetched += 1;
            victims.push(key);
        }
        let verified = self.eng.demand(last, fetched);
        let cache = self.ctr_cache.as_mut().expect("counter cache");
        let mut dirty = Vec::new();
        dirty.extend(cache.fill(line / crate::tree::COUNTERS_PER_BLOCK, verified, write, false));
        for key in victims {
            dirty.extend(cache.fill(key, verified, false, false));
        }
        for v in dirty {
            self.dram.access(t, CTR_REGION + v);
            self.eng.demand(t, 1);
        }
        (known, verified)
    }

    /// [`Self::counter_fetch`] untimed (functional warm-up): the counter block and the tree
    /// nodes a miss would fetch enter the counter cache, in the same order.
    pub(super) fn warm_counter(&mut self, line: u64, write: bool) {
        let Some(cache) = self.ctr_cache.as_mut() else {
            return;
        };
        let mut idx = line / crate::tree::COUNTERS_PER_BLOCK;
        if matches!(cache.access(idx, write), Lookup::Hit { .. }) {
            return;
        }
        let mut nodes = Vec::new();
        for level in 1..=self.tree_levels {
            idx /= self.tree_arity;
            let key = ((level as u64) << 56) | idx;
            if level == self.tree_levels || matches!(cache.access(key, false), Lookup::Hit { .. }) {
                break;
            }
            nodes.push(key);
        }
        cache.fill(line / crate::tree::COUNTERS_PER_BLOCK, 0.0, write, false);
        for key in nodes {
            cache.fill(key, 0.0, false, false);
        }
    }
}
