//! Path ORAM (Stefanov et al., CCS 2013) on the same storage and AES-GCM: a binary tree of
//! buckets of Z blocks, a private position map (block -> leaf) and stash. A read fetches the
//! path to the block's leaf, remaps the block to a fresh random leaf, and writes the path back
//! re-sealed, greedily filling buckets from the leaf up. It is the baseline PRO-ORAM is
//! compared with ("PathORAM + SGX" in the paper): log N buckets move per request.

use crate::crypto::{BlockKey, TAG_LEN};
use crate::error::{OramError, Result};
use crate::storage::{Actor, Storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::Arc;

const EMPTY: u64 = u64::MAX;
const NONCE: usize = 12;

pub struct PathOram {
    storage: Arc<dyn Storage>,
    n: u64,
    block_size: usize,
    z: usize,
    /// Leaves are 0..2^levels; the tree has levels + 1 levels of buckets.
    levels: u32,
    key: BlockKey,
    pos: Vec<u32>,
    stash: HashMap<u64, Vec<u8>>,
    written: Vec<bool>,
    counter: u64,
    rng: StdRng,
    /// one bucket's plaintext (the nonce and tag live only in storage)
    buf: Vec<u8>,
    pub max_stash: usize,
}

/// Tree height for N blocks: 2^L >= N/2 leaves, so Z = 4 gives ~4N slots (the usual choice).
pub fn levels_for(n: u64) -> u32 {
    let mut l = 0;
    while (1u64 << l) * 2 < n {
        l += 1;
    }
    l
}

pub fn buckets_for(n: u64) -> u64 {
    (1u64 << (levels_for(n) + 1)) - 1
}

pub fn slot_size(block_size: usize, z: usize) -> usize {
    NONCE + z * (8 + block_size) + TAG_LEN
}

impl PathOram {
    /// Builds the tree in trusted setup: each block gets a random leaf and is placed in the
    /// deepest bucket of its path with room; buckets left empty are never written and read as
    /// empty (the private `written` map says so), which keeps the setup cost to N blocks.
    pub fn create(
        storage: Arc<dyn Storage>,
        n: u64,
        block_size: usize,
        z: usize,
        seed: u64,
        fill: &(dyn Fn(u64, &mut [u8]) + Sync),
    ) -> Result<Self> {
        if n == 0 || z == 0 || block_size == 0 {
            return Err(OramError::Config("Path ORAM needs n_blocks, z and block_size > 0".into()));
        }
        let levels = levels_for(n);
        let nb = buckets_for(n);
        if storage.slot_size() != slot_size(block_size, z) || storage.region_slots(0) < nb {
            return Err(OramError::Config(format!(
                "Path ORAM needs region 0 with {nb} slots of {} bytes",
                slot_size(block_size, z)
            )));
        }
        let mut rng = StdRng::seed_from_u64(seed);
        let key = BlockKey::random(&mut rng);
        let pos: Vec<u32> = (0..n).map(|_| rng.gen_range(0..1u32 << levels)).collect();
        let mut contents: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut stash_ids = Vec::new();
        for id in 0..n {
            let leaf = pos[id as usize];
            let mut placed = false;
            for lvl in (0..=levels).rev() {
                let b = bucket_at(levels, leaf, lvl);
                let e = contents.entry(b).or_default();
                if e.len() < z {
                    e.push(id);
                    placed = true;
                    break;
                }
            }
            if !placed {
                stash_ids.push(id);
            }
        }
        let mut me = Self {
            buf: vec![0u8; storage.slot_size() - NONCE - TAG_LEN],
            storage,
            n,
            block_size,
            z,
            levels,
            key,
            pos,
            stash: HashMap::new(),
            written: vec![false; nb as usize],
            counter: 0,
            rng,
            max_stash: 0,
        };
        let mut data = vec![0u8; block_size];
        for id in stash_ids {
            fill(id, &mut data);
            me.stash.insert(id, data.clone());
        }
        let mut buckets: Vec<_> = contents.into_iter().collect();
        buckets.sort_unstable_by_key(|(b, _)| *b);
        for (b, ids) in buckets {
            let blocks: Vec<(u64, Vec<u8>)> = ids
                .into_iter()
                .map(|id| {
                    fill(id, &mut data);
                    (id, data.clone())
                })
                .collect();
            me.write_bucket(Actor::Init, b, &blocks)?;
        }
        me.storage.sync()?;
        Ok(me)
    }

    pub fn bytes_per_access(&self) -> u64 {
        2 * (self.levels as u64 + 1) * self.storage.slot_size() as u64
    }

    pub fn levels(&self) -> u32 {
        self.levels
    }

    fn write_bucket(&mut self, actor: Actor, b: u64, blocks: &[(u64, Vec<u8>)]) -> Result<()> {
        let (bs, z) = (self.block_size, self.z);
        let buf = &mut self.buf;
        buf.fill(0);
        for k in 0..z {
            let off = k * (8 + bs);
            let id = blocks.get(k).map_or(EMPTY, |x| x.0);
            buf[off..off + 8].copy_from_slice(&id.to_le_bytes());
            if let Some((_, d)) = blocks.get(k) {
                buf[off + 8..off + 8 + bs].copy_from_slice(d);
            }
        }
        self.counter += 1;
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&self.counter.to_le_bytes());
        let key = &self.key;
        self.storage.write_with(actor, 0, b, &mut |dst| {
            dst[..NONCE].copy_from_slice(&nonce);
            key.seal_slot_into(nonce, buf, &mut dst[NONCE..]);
            Ok(())
        })?;
        self.written[b as usize] = true;
        Ok(())
    }

    pub fn read(&mut self, id: u64) -> Result<Vec<u8>> {
        if id >= self.n {
            return Err(OramError::UnknownBlock { id, n_blocks: self.n });
        }
        let leaf = self.pos[id as usize];
        self.pos[id as usize] = self.rng.gen_range(0..1u32 << self.levels);
        let bs = self.block_size;
        for lvl in 0..=self.levels {
            let b = bucket_at(self.levels, leaf, lvl);
            let written = self.written[b as usize];
            let (key, buf) = (&self.key, &mut self.buf);
            self.storage.read_with(Actor::PathOram, 0, b, &mut |slot| {
                if !written {
                    return Ok(());
                }
                let nonce: [u8; 12] = slot[..NONCE].try_into().unwrap();
                key.open_slot_into(nonce, &slot[NONCE..], buf, 0, b)
            })?;
            if !written {
                continue;
            }
            for k in 0..self.z {
                let off = k * (8 + bs);
                let bid = u64::from_le_bytes(self.buf[off..off + 8].try_into().unwrap());
                if bid != EMPTY {
                    if bid >= self.n {
                        return Err(OramError::Tamper { region: 0, index: b });
                    }
                    self.stash.insert(bid, self.buf[off + 8..off + 8 + bs].to_vec());
                }
            }
        }
        let out = self.stash.get(&id).cloned().ok_or(OramError::Tamper { region: 0, index: 0 })?;
        for lvl in (0..=self.levels).rev() {
            let b = bucket_at(self.levels, leaf, lvl);
            let fits: Vec<u64> = self
                .stash
                .keys()
                .copied()
                .filter(|&x| bucket_at(self.levels, self.pos[x as usize], lvl) == b)
                .take(self.z)
                .collect();
            let blocks: Vec<(u64, Vec<u8>)> = fits.iter().map(|x| (*x, self.stash.remove(x).unwrap())).collect();
            self.write_bucket(Actor::PathOram, b, &blocks)?;
        }
        self.max_stash = self.max_stash.max(self.stash.len());
        Ok(out)
    }
}

/// Bucket index (heap order, root 0) at depth `lvl` on the path to `leaf`.
fn bucket_at(levels: u32, leaf: u32, lvl: u32) -> u64 {
    let prefix = (leaf as u64) >> (levels - lvl);
    (1u64 << lvl) - 1 + prefix
}
