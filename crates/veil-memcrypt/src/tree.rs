//! A Bonsai-Merkle-style counter tree (Rogers, Chhabra, Solihin and Prvulovic, MICRO 2007): the
//! per-line counters (nonces) live in memory, eight to a 64-byte counter block, and a tree of
//! keyed 64-bit digests of arity `arity` covers the blocks; only the root is kept on chip. A
//! counter is trusted once the digests from its block up to the root recompute to the on-chip
//! root, so replaying an old record together with its old counter block (and any old tree nodes)
//! is detected. The data lines themselves need no tree: their MACs bind them to their counter.
//!
//! Memory is sparse: a block or subtree that was never written has the all-zero digest, a fixed
//! value the keyed digests of real nodes equal only by chance (2^-64).

use std::collections::HashMap;

use aes::Aes128;
use cmac::{Cmac, Mac};

use crate::error::{Error, Result};

/// Counters per 64-byte counter block.
pub const COUNTERS_PER_BLOCK: u64 = 8;
/// Counter blocks the tree covers: every data and bitmap line index (below 2^59) has one.
const BLOCK_SPACE: u128 = 1 << 56;

type Digest = [u8; 8];

/// Levels of digests from the counter blocks (level 0) up to the root, at `arity` >= 2.
pub fn levels(arity: u32) -> u8 {
    let mut levels = 0u8;
    let mut span: u128 = 1;
    while span < BLOCK_SPACE {
        span *= arity.max(2) as u128;
        levels += 1;
    }
    levels
}

/// The tree's state: what memory holds (counter blocks, digests of every level below the root,
/// all attacker-writable) and the on-chip root.
#[derive(Clone)]
pub struct CounterTree {
    arity: u64,
    levels: u8,
    mac: Cmac<Aes128>,
    /// In memory: counter blocks, and the digests of levels 0 (blocks) .. levels - 1.
    pub blocks: HashMap<u64, [u64; 8]>,
    pub nodes: HashMap<(u8, u64), Digest>,
    /// On chip.
    root: Digest,
}

impl CounterTree {
    pub fn new(arity: u32, key: &[u8]) -> Result<Self> {
        if arity < 2 {
            return Err(Error::config(format!("tree_arity: must be >= 2, got {arity}")));
        }
        let levels = levels(arity);
        let mac = <Cmac<Aes128> as cmac::digest::KeyInit>::new_from_slice(key).map_err(|_| Error::config("tree key: 16 bytes"))?;
        Ok(CounterTree { arity: arity as u64, levels, mac, blocks: HashMap::new(), nodes: HashMap::new(), root: [0; 8] })
    }

    /// Levels of digests from the counter blocks up to the root (the root's level).
    pub fn levels(&self) -> u8 {
        self.levels
    }

    fn digest(&self, level: u8, index: u64, bytes: &[u8]) -> Digest {
        let mut m = self.mac.clone();
        m.update(&[level]);
        m.update(&index.to_le_bytes());
        m.update(bytes);
        let full = m.finalize().into_bytes();
        let mut d = [0u8; 8];
        d.copy_from_slice(&full[..8]);
        d
    }

    fn block_digest(&self, b: u64, block: &[u64; 8]) -> Digest {
        let mut bytes = [0u8; 64];
        for (i, c) in block.iter().enumerate() {
            bytes[8 * i..8 * i + 8].copy_from_slice(&c.to_le_bytes());
        }
        self.digest(0, b, &bytes)
    }

    /// The digest of node `index` at `level` (>= 1) from its children's digests, with the one
    /// on the path (`child`, `child_digest`) given and the others read from memory.
    fn parent(&self, level: u8, index: u64, child: u64, child_digest: Digest) -> Digest {
        let mut bytes = Vec::with_capacity(8 * self.arity as usize);
        for c in index * self.arity..(index + 1) * self.arity {
            let d = if c == child { child_digest } else { self.nodes.get(&(level - 1, c)).copied().unwrap_or([0; 8]) };
            bytes.extend_from_slice(&d);
        }
        // A subtree nothing was written to keeps the all-zero digest, so that unwritten blocks
        // verify without storing their paths.
        if bytes.iter().all(|&x| x == 0) {
            return [0; 8];
        }
        self.digest(level, index, &bytes)
    }

    /// The counter of `line` as memory holds it, verified against the on-chip root.
    pub fn counter(&self, line: u64) -> Result<u64> {
        let b = line / COUNTERS_PER_BLOCK;
        let block = self.blocks.get(&b).copied().unwrap_or([0; 8]);
        let written = self.blocks.contains_key(&b);
        let mut d = if written { self.block_digest(b, &block) } else { [0; 8] };
        let mut idx = b;
        for level in 1..=self.levels {
            d = self.parent(level, idx / self.arity, idx, d);
            idx /= self.arity;
        }
        if d != self.root {
            return Err(Error::Integrity(format!("counter of line {line:#x}: counter tree does not verify")));
        }
        Ok(block[(line % COUNTERS_PER_BLOCK) as usize])
    }

    /// Sets the counter of `line` (after verifying the block it sits in) and updates the path of
    /// digests up to the on-chip root.
    pub fn set(&mut self, line: u64, value: u64) -> Result<()> {
        self.counter(line)?;
        let b = line / COUNTERS_PER_BLOCK;
        let mut block = self.blocks.get(&b).copied().unwrap_or([0; 8]);
        block[(line % COUNTERS_PER_BLOCK) as usize] = value;
        self.blocks.insert(b, block);
        let mut d = self.block_digest(b, &block);
        self.nodes.insert((0, b), d);
        let mut idx = b;
        for level in 1..=self.levels {
            d = self.parent(level, idx / self.arity, idx, d);
            idx /= self.arity;
            if level < self.levels {
                self.nodes.insert((level, idx), d);
            }
        }
        self.root = d;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_verify_and_old_blocks_or_nodes_do_not() {
        let mut t = CounterTree::new(8, &[7; 16]).unwrap();
        assert_eq!(t.levels(), 19);
        assert_eq!(t.counter(1000).unwrap(), 0);
        t.set(1000, 1).unwrap();
        t.set(5, 3).unwrap();
        let (old_blocks, old_nodes) = (t.blocks.clone(), t.nodes.clone());
        t.set(1000, 2).unwrap();
        assert_eq!((t.counter(1000).unwrap(), t.counter(5).unwrap(), t.counter(1001).unwrap()), (2, 3, 0));
        // Rolling the counter block back (and every tree node with it) fails at the root.
        let now = (t.blocks.clone(), t.nodes.clone());
        t.blocks = old_blocks.clone();
        assert!(t.counter(1000).is_err());
        t.nodes = old_nodes;
        assert!(t.counter(1000).is_err());
        (t.blocks, t.nodes) = now;
        assert_eq!(t.counter(1000).unwrap(), 2);
        // A flipped counter bit elsewhere in the block is caught too.
        t.blocks.get_mut(&(1000 / 8)).unwrap()[1] ^= 1;
        assert!(t.counter(1000).is_err());
        assert!(CounterTree::new(1, &[7; 16]).err().is_some_and(|e| e.to_string().starts_with("tree_arity")));
        assert_eq!(CounterTree::new(2, &[7; 16]).unwrap().levels(), 56);
    }
}
