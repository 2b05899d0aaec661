//! The timing of counters kept in memory under a Bonsai-Merkle counter tree (`counters =
//! "tree"`, the default; `"on_chip"` keeps every counter on chip and charges nothing).
//!
//! **Organisation.** Counter blocks are 64-byte lines: `split` (Yan et al., ISCA 2006) holds a
//! 64-bit major counter and 64 7-bit minor counters, one block per 4 KB page; `monolithic` holds
//! eight 64-bit counters. The tree over the blocks of `protected_mb` of memory has arity
//! `tree_arity` (eight 8-byte digests per 64-byte node) and its root on chip, so a path has
//! ceil(log_arity(blocks)) - 1 node lines below the root. One counter cache of
//! `counter_cache_entries` lines holds counter blocks and tree nodes alike.
//!
//! **A fill or writeback** needs its line's counter block. A hit costs nothing. A miss reads
//! the block and the node lines of its path up to the first node already cached (a cached node
//! is verified) in parallel, their addresses being known; one MAC operation per fetched line
//! once the last arrives. The counter is known when its block arrives (offsets, pads and
//! speculation start then); the data is usable only once the path is verified.
//!
//! **Writebacks** bump the counter: its block is dirty in the cache. A dirty line evicted from
//! the counter cache is written to memory and its parent's digest recomputed (one MAC
//! operation): the parent becomes dirty in the cache, fetched first if absent (a tree fetch),
//! which may evict another dirty line in turn (lazy update up to the on-chip root).
//!
//! **Split counters overflow**: the 2^bits-th writeback of a line since its page was last
//! re-encrypted would wrap its minor counter (`minor_counter_bits`, 7: the 128th); the major
//! counter is bumped and every other line of the page is read, re-encrypted under the new major
//! counter and written back (63 reads, 63 writes, decryption and encryption with MACs of each),
//! booked on memory and engines; the written line itself goes out under the new counter as its
//! writeback. The functional model does the same with real ciphers (`crate::tree`,
//! `SecureMemory::write_line`), and its count of overflows equals this one on the same records.

use super::{LineMap, Sim};
use crate::bitmap::{BitmapCache, Lookup};
use crate::config::Config;
use crate::error::Result;
use crate::tree::BlockOrg;

/// Counter blocks and tree nodes sit above data, bitmap and MAC lines: level L's node i at
/// `CTR_REGION + (L << 56) + i`.
const CTR_REGION: u64 = 1 << 60;

/// The counter organisation's state and constants.
#[derive(Clone)]
pub struct CounterOrg {
    cache: BitmapCache,
    arity: u64,
    /// Tree levels above the counter blocks, the root's level included (the root is on chip).
    levels: u8,
    per_block: u64,
    /// Split counters: writebacks of a line after which its minor counter wraps (None: 64-bit
    /// counters, which never do).
    minor_wrap: Option<u64>,
    /// Writebacks per line since its page's last re-encryption (split counters only).
    minors: LineMap<u64>,
}

/// Tree levels above `blocks` counter blocks at arity `arity`, the root's level included.
pub fn tree_levels(blocks: u64, arity: u64) -> u8 {
    let mut levels = 1u8;
    let mut span = arity;
    while span < blocks {
        span = span.saturating_mul(arity);
        levels += 1;
    }
    levels
}

impl CounterOrg {
    /// None when counters are on chip (or nothing is encrypted).
    pub fn new(cfg: &Config) -> Result<Option<Self>> {
        if !cfg.encryption || cfg.counters == "on_chip" {
            return Ok(None);
        }
        let org = BlockOrg::parse(&cfg.counter_block, cfg.minor_counter_bits)?;
        let (per_block, minor_wrap) = (org.per_block(), org.minor_wrap());
        let lines = cfg.protected_mb * (1 << 20) / 64;
        let blocks = lines.div_ceil(per_block).max(1);
        let arity = cfg.tree_arity as u64;
        Ok(Some(CounterOrg {
            cache: BitmapCache::new(cfg.counter_cache_entries, cfg.counter_cache_ways),
            arity,
            levels: tree_levels(blocks, arity),
            per_block,
            minor_wrap,
            minors: LineMap::default(),
        }))
    }

    /// The node keys of `line`'s path below the root (level 1 up), and its block.
    fn path(&self, line: u64) -> (u64, impl Iterator<Item = u64>) {
        let block = line / self.per_block;
        let (arity, levels) = (self.arity, self.levels);
        let nodes = (1..levels).scan(block, move |idx, level| {
            *idx /= arity;
            Some(((level as u64) << 56) | *idx)
        });
        (block, nodes)
    }

    /// A writeback of `line` bumps its counter: whether its split minor counter wrapped (every
    /// minor of its page then starts again under a new major counter).
    fn bump(&mut self, line: u64) -> bool {
        let Some(wrap) = self.minor_wrap else {
            return false;
        };
        let m = self.minors.entry(line).or_insert(0);
        *m += 1;
        if *m < wrap {
            return false;
        }
        let first = line / self.per_block * self.per_block;
        for l in first..first + self.per_block {
            self.minors.remove(&l);
        }
        true
    }

    /// The tree node above `key` (a counter block or a node), None when it is the on-chip root.
    fn parent(&self, key: u64) -> Option<u64> {
        let level = key >> 56;
        let idx = key & ((1 << 56) - 1);
        (level + 1 < self.levels as u64).then(|| ((level + 1) << 56) | idx / self.arity)
    }

    /// Dirty lines a fill of `key` (dirty if `write`) evicts and the lazy parent updates they
    /// cause: each evicted key in order, with whether its parent had to be fetched.
    fn fill_dirty(&mut self, key: u64, ready: f64, write: bool, out: &mut Vec<(u64, bool)>) {
        let mut pending = self.cache.fill(key, ready, write, false);
        while let Some(v) = pending.take() {
            let fetched = match self.parent(v) {
                Some(p) if matches!(self.cache.access(p, true), Lookup::Miss) => {
                    pending = self.cache.fill(p, ready, true, false);
                    true
                }
                _ => false,
            };
            out.push((v, fetched));
        }
    }
}

impl Sim {
    /// The counter of `line` needed at `t` (`write`: a writeback bumps it): returns when its
    /// value is known and when it is verified.
    pub(super) fn counter_fetch(&mut self, t: f64, line: u64, write: bool) -> (f64, f64) {
        let Some(org) = self.ctr.as_mut() else {
            return (t, t);
        };
        let (block, path) = org.path(line);
        if let Lookup::Hit { ready, .. } = org.cache.access(block, write) {
            return (ready.max(t), ready.max(t));
        }
        let mut nodes = [0u64; 64];
        let mut n = 0;
        for key in path {
            if matches!(org.cache.access(key, false), Lookup::Hit { .. }) {
                break; // a cached node is verified
            }
            nodes[n] = key;
            n += 1;
        }
        self.r.counter_misses += 1;
        self.r.tree_fetches += n as u64;
        let known = self.dram.access(t, CTR_REGION + block);
        let mut last = known;
        for &key in &nodes[..n] {
            last = last.max(self.dram.access(t, CTR_REGION + key));
        }
        self.r.counter_ops += 1 + n as u64;
        let verified = self.eng.demand(last, 1 + n as u64);
        let mut evicted = Vec::new();
        let org = self.ctr.as_mut().expect("counter organisation");
        org.fill_dirty(block, verified, write, &mut evicted);
        for &key in &nodes[..n] {
            org.fill_dirty(key, verified, false, &mut evicted);
        }
        self.counter_evictions(t, &evicted);
        (known, verified)
    }

    /// Dirty counter blocks and nodes evicted at `t`: each written to memory with its parent's
    /// digest recomputed, the parent fetched first where it was not cached.
    fn counter_evictions(&mut self, t: f64, evicted: &[(u64, bool)]) {
        for &(key, parent_fetched) in evicted {
            self.r.counter_writebacks += 1;
            self.r.counter_ops += 1;
            self.dram.access(t, CTR_REGION + key);
            if parent_fetched {
                self.r.tree_fetches += 1;
                self.r.counter_ops += 1;
                let parent = self.ctr.as_ref().and_then(|org| org.parent(key)).expect("a fetched parent");
                let at = self.dram.access(t, CTR_REGION + parent);
                self.eng.demand(at, 1);
            }
            self.eng.demand(t, 1);
        }
    }

    /// A writeback of `line` at `t` bumped its counter: with split counters, its minor counter
    /// may wrap, and then its page is re-encrypted (booked from `t`, off the core's path).
    pub(super) fn counter_bumped(&mut self, t: f64, line: u64) {
        let Some(org) = self.ctr.as_mut() else {
            return;
        };
        if !org.bump(line) {
            return;
        }
        let per_block = org.per_block;
        let first = line / per_block * per_block;
        self.r.counter_overflows += 1;
        self.r.overflow_lines += per_block - 1;
        self.r.overflow_ops += self.reencrypt(t, (first..first + per_block).filter(|&l| l != line));
    }

    /// Reads, decrypts and authenticates each of `lines`, then re-encrypts and re-MACs it and
    /// writes it back, booked from `t` off the core's path; returns the engine operations:
    /// cipher passes (direct) or pads (counter mode, four per line), and one MAC per chunk,
    /// each way.
    pub(super) fn reencrypt(&mut self, t: f64, lines: impl Iterator<Item = u64>) -> u64 {
        let n = self.scheme.chunks() as u64;
        let per_line = 2 * match self.scheme.mode {
            crate::secure::Mode::Direct => 2 * n,
            crate::secure::Mode::Counter => 4 + n,
        };
        let mut ops = 0;
        for l in lines {
            let arrived = self.mem(t, l);
            let sealed = self.eng.demand(arrived, per_line);
            self.mem(sealed, l);
            ops += per_line;
        }
        ops
    }

    /// [`Self::counter_fetch`] untimed (functional warm-up): the counter block and the tree
    /// nodes a miss would fetch enter the counter cache, in the same order; split counters count
    /// the writeback.
    pub(super) fn warm_counter(&mut self, line: u64, write: bool) {
        let Some(org) = self.ctr.as_mut() else {
            return;
        };
        if write {
            org.bump(line);
        }
        let (block, path) = org.path(line);
        if matches!(org.cache.access(block, write), Lookup::Hit { .. }) {
            return;
        }
        let mut nodes = [0u64; 64];
        let mut n = 0;
        for key in path {
            if matches!(org.cache.access(key, false), Lookup::Hit { .. }) {
                break;
            }
            nodes[n] = key;
            n += 1;
        }
        let mut evicted = Vec::new();
        org.fill_dirty(block, 0.0, write, &mut evicted);
        for &key in &nodes[..n] {
            org.fill_dirty(key, 0.0, false, &mut evicted);
        }
    }
}
