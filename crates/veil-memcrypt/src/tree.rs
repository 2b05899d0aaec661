//! A Bonsai-Merkle-style counter tree (Rogers, Chhabra, Solihin and Prvulovic, MICRO 2007): the
//! per-line counters (nonces) live in memory in 64-byte counter blocks, and a tree of keyed
//! 64-bit digests of arity `arity` covers the blocks; only the root is kept on chip. A counter is
//! trusted once the digests from its block up to the root recompute to the on-chip root, so
//! replaying an old record together with its old counter block (and any old tree nodes) is
//! detected. The data lines themselves need no tree: their MACs bind them to their counter.
//!
//! **Block organisation** (`counter_block`, the same as the timing model's, sim/counters.rs):
//! `monolithic` blocks hold eight 64-bit counters; `split` blocks (Yan, Rogers, Englender,
//! Solihin and Prvulovic, ISCA 2006) hold a 64-bit major counter and 64 minor counters of
//! `minor_counter_bits` bits, one block per 4 KB page, packed into the block's 64 bytes as
//! memory holds them. A split line's nonce is `major << bits | minor`: unique per line as long as
//! the minor never wraps in place, so the write that would wrap it instead bumps the major
//! counter and starts every minor of the block at zero ([`CounterTree::bump`] returns that
//! overflow): the caller re-encrypts every other line of the block under its new nonce. Lines at
//! and above `split_below` (the functional model's bitmap lines, whose counters the timing model
//! does not charge) keep 64-bit counters, eight to a block, in either organisation.
//!
//! Memory is sparse: a block or subtree that was never written has the all-zero digest, a fixed
//! value the keyed digests of real nodes equal only by chance (2^-64).

use std::collections::HashMap;

use aes::Aes128;
use cmac::{Cmac, Mac};

use crate::error::{Error, Result};

/// Counters per 64-byte monolithic counter block.
pub const COUNTERS_PER_BLOCK: u64 = 8;
/// Minor counters per split counter block (one per line of a 4 KB page).
pub const MINORS_PER_BLOCK: u64 = 64;
/// Counter blocks the tree covers: every data and bitmap line index (below 2^59) has one.
const BLOCK_SPACE: u128 = 1 << 56;
/// Block indices of the lines at and above `split_below` start here (below it: at most 2^53
/// split or 2^55 monolithic blocks of data lines).
const UPPER_BLOCKS: u64 = 1 << 55;

type Digest = [u8; 8];

/// How a 64-byte counter block holds its counters (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockOrg {
    Monolithic,
    Split { minor_bits: u32 },
}

impl BlockOrg {
    /// `counter_block` ("split" or "monolithic") with `minor_counter_bits` (split only).
    pub fn parse(name: &str, minor_bits: u32) -> Result<Self> {
        match name {
            "monolithic" => Ok(BlockOrg::Monolithic),
            "split" if (1..=7).contains(&minor_bits) => Ok(BlockOrg::Split { minor_bits }),
            "split" => Err(Error::config(format!(
                "minor_counter_bits: a split counter block holds a 64-bit major and 64 minors in 64 bytes, so 1..7 bits, got {minor_bits}"
            ))),
            _ => Err(Error::config(format!("counter_block: unknown counter block '{name}' (known: split, monolithic)"))),
        }
    }

    /// Lines whose counters share one block.
    pub fn per_block(self) -> u64 {
        match self {
            BlockOrg::Monolithic => COUNTERS_PER_BLOCK,
            BlockOrg::Split { .. } => MINORS_PER_BLOCK,
        }
    }

    /// Writebacks of one line after which its minor counter would wrap (None: 64-bit counters).
    pub fn minor_wrap(self) -> Option<u64> {
        match self {
            BlockOrg::Monolithic => None,
            BlockOrg::Split { minor_bits } => Some(1 << minor_bits),
        }
    }

    /// The nonce of the `i`th line of a block as memory holds it.
    fn get(self, b: &[u8; 64], i: usize) -> u64 {
        match self {
            BlockOrg::Monolithic => u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes")),
            BlockOrg::Split { minor_bits } => (major(b) << minor_bits) | minor(b, i, minor_bits),
        }
    }
}

fn major(b: &[u8; 64]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Minor `i` of a split block: `bits` bits from bit 64 + i * bits, least significant first.
fn minor(b: &[u8; 64], i: usize, bits: u32) -> u64 {
    let mut v = 0;
    for k in 0..bits as usize {
        let at = 64 + i * bits as usize + k;
        v |= ((b[at / 8] >> (at % 8) & 1) as u64) << k;
    }
    v
}

fn set_minor(b: &mut [u8; 64], i: usize, bits: u32, v: u64) {
    for k in 0..bits as usize {
        let at = 64 + i * bits as usize + k;
        b[at / 8] = (b[at / 8] & !(1 << (at % 8))) | (((v >> k) & 1) as u8) << (at % 8);
    }
}

/// What a write of one line did to its counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bump {
    /// The line's new nonce.
    pub nonce: u64,
    /// A split minor counter would have wrapped: the block's major counter went up and every
    /// line of the block has a new nonce (the written line's is `nonce`).
    pub overflow: Option<Overflow>,
}

/// A split block's overflow: every line of the block now has nonce `nonce`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overflow {
    pub first_line: u64,
    /// The lines' nonces before, in line order from `first_line`.
    pub old: Vec<u64>,
    pub nonce: u64,
}

/// The tree's state: what memory holds (counter blocks, digests of every level below the root,
/// all attacker-writable) and the on-chip root.
#[derive(Clone)]
pub struct CounterTree {
    arity: u64,
    levels: u8,
    org: BlockOrg,
    split_below: u64,
    mac: Cmac<Aes128>,
    /// In memory: counter blocks as their 64 bytes, and the digests of levels 0 (blocks) ..
    /// levels - 1.
    pub blocks: HashMap<u64, [u8; 64]>,
    pub nodes: HashMap<(u8, u64), Digest>,
    /// On chip.
    root: Digest,
}

impl CounterTree {
    /// Eight 64-bit counters per block for every line.
    pub fn new(arity: u32, key: &[u8]) -> Result<Self> {
        Self::with_org(arity, key, BlockOrg::Monolithic, u64::MAX)
    }

    /// Lines below `split_below` in blocks of `org`, the others in monolithic blocks.
    pub fn with_org(arity: u32, key: &[u8], org: BlockOrg, split_below: u64) -> Result<Self> {
        if arity < 2 {
            return Err(Error::config(format!("tree_arity: must be >= 2, got {arity}")));
        }
        let levels = levels(arity);
        let mac = <Cmac<Aes128> as cmac::digest::KeyInit>::new_from_slice(key).map_err(|_| Error::config("tree key: 16 bytes"))?;
        Ok(CounterTree {
            arity: arity as u64,
            levels,
            org,
            split_below,
            mac,
            blocks: HashMap::new(),
            nodes: HashMap::new(),
            root: [0; 8],
        })
    }

    /// Levels of digests from the counter blocks up to the root (the root's level).
    pub fn levels(&self) -> u8 {
        self.levels
    }

    /// The organisation of `line`'s block, the block's index and the line's slot in it.
    fn locate(&self, line: u64) -> (BlockOrg, u64, usize) {
        if line < self.split_below {
            let per = self.org.per_block();
            (self.org, line / per, (line % per) as usize)
        } else {
            let l = line - self.split_below;
            (BlockOrg::Monolithic, UPPER_BLOCKS + l / COUNTERS_PER_BLOCK, (l % COUNTERS_PER_BLOCK) as usize)
        }
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

    /// Block `b` as memory holds it, verified against the on-chip root.
    fn verified_block(&self, b: u64, line: u64) -> Result<[u8; 64]> {
        let block = self.blocks.get(&b).copied();
        let mut d = match &block {
            Some(bytes) => self.digest(0, b, bytes),
            None => [0; 8],
        };
        let mut idx = b;
        for level in 1..=self.levels {
            d = self.parent(level, idx / self.arity, idx, d);
            idx /= self.arity;
        }
        if d != self.root {
            return Err(Error::Integrity(format!("counter of line {line:#x}: counter tree does not verify")));
        }
        Ok(block.unwrap_or([0; 64]))
    }

    /// The counter (nonce) of `line` as memory holds it, verified against the on-chip root.
    pub fn counter(&self, line: u64) -> Result<u64> {
        let (org, b, i) = self.locate(line);
        Ok(org.get(&self.verified_block(b, line)?, i))
    }

    /// Writes block `b` and the path of digests above it up to the on-chip root.
    fn store_block(&mut self, b: u64, block: [u8; 64]) {
        self.blocks.insert(b, block);
        let mut d = self.digest(0, b, &block);
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
    }

    /// A write of `line`: its counter goes up by one (after verifying its block), and the path
    /// of digests up to the on-chip root is updated. Where a split minor counter would wrap, the
    /// block's major counter goes up and every minor restarts at zero (module doc).
    pub fn bump(&mut self, line: u64) -> Result<Bump> {
        let (org, b, i) = self.locate(line);
        let mut block = self.verified_block(b, line)?;
        let bump = match org {
            BlockOrg::Monolithic => {
                let v = org.get(&block, i).checked_add(1).ok_or_else(|| Error::Integrity(format!("counter of line {line:#x}: 64-bit counter exhausted")))?;
                block[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
                Bump { nonce: v, overflow: None }
            }
            BlockOrg::Split { minor_bits } => {
                let m = minor(&block, i, minor_bits) + 1;
                if m < 1 << minor_bits {
                    set_minor(&mut block, i, minor_bits, m);
                    Bump { nonce: org.get(&block, i), overflow: None }
                } else {
                    let per = MINORS_PER_BLOCK as usize;
                    let old = (0..per).map(|k| org.get(&block, k)).collect();
                    let major = major(&block).checked_add(1).filter(|&v| v < 1 << (64 - minor_bits));
                    let major = major.ok_or_else(|| Error::Integrity(format!("counter of line {line:#x}: major counter exhausted")))?;
                    block = [0; 64];
                    block[..8].copy_from_slice(&major.to_le_bytes());
                    let nonce = major << minor_bits;
                    Bump { nonce, overflow: Some(Overflow { first_line: b * MINORS_PER_BLOCK, old, nonce }) }
                }
            }
        };
        self.store_block(b, block);
        Ok(bump)
    }

    /// Sets the counter of a line of a monolithic block (tests and tools; writes go through
    /// [`Self::bump`]).
    pub fn set(&mut self, line: u64, value: u64) -> Result<()> {
        let (org, b, i) = self.locate(line);
        if org != BlockOrg::Monolithic {
            return Err(Error::config("set: split counters change only by bump"));
        }
        let mut block = self.verified_block(b, line)?;
        block[8 * i..8 * i + 8].copy_from_slice(&value.to_le_bytes());
        self.store_block(b, block);
        Ok(())
    }
}

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

    #[test]
    fn split_blocks_pack_a_major_and_64_minors_and_overflow_on_the_wrap() {
        let mut t = CounterTree::with_org(8, &[7; 16], BlockOrg::Split { minor_bits: 7 }, 1 << 40).unwrap();
        assert_eq!(t.bump(3).unwrap(), Bump { nonce: 1, overflow: None });
        // Minor 3 is bits 85..92 of the block: bit 5 of byte 10.
        let b = t.blocks[&0];
        assert_eq!((b[10], b.iter().map(|x| x.count_ones()).sum::<u32>()), (0x20, 1));
        assert_eq!(t.bump(70).unwrap().nonce, 1, "line 70 is in block 1");
        for n in 2..128 {
            assert_eq!(t.bump(3).unwrap().nonce, n);
        }
        let b = t.bump(3).unwrap();
        let o = b.overflow.expect("the 128th write wraps minor 3");
        assert_eq!((b.nonce, o.first_line, o.nonce, o.old[3], o.old.iter().sum::<u64>()), (128, 0, 128, 127, 127));
        assert_eq!(t.blocks[&0][..8], 1u64.to_le_bytes());
        assert!(t.blocks[&0][8..].iter().all(|&x| x == 0));
        assert_eq!((t.counter(3).unwrap(), t.counter(63).unwrap(), t.counter(70).unwrap()), (128, 128, 1));
        // Lines at and above the split boundary keep eight 64-bit counters per block.
        assert_eq!((t.bump(1 << 40).unwrap().nonce, t.bump(1 << 40).unwrap().nonce), (1, 2));
        assert_eq!(t.blocks[&UPPER_BLOCKS][..8], 2u64.to_le_bytes());
        for (bits, ok) in [(0, false), (1, true), (7, true), (8, false)] {
            assert_eq!(BlockOrg::parse("split", bits).is_ok(), ok);
        }
    }
}