//! Plain encrypted reads: block i lives in slot i under one key. Not oblivious (the slot read
//! is the block requested); it is the lower bound on cost and the negative control of the
//! obliviousness tests.

use crate::crypto::{slot_nonce, BlockKey, TAG_LEN};
use crate::error::{OramError, Result};
use crate::storage::{Actor, Storage};
use std::sync::Arc;

pub struct PlainStore {
    storage: Arc<dyn Storage>,
    n: u64,
    block_size: usize,
    key: BlockKey,
}

impl PlainStore {
    pub fn create(
        storage: Arc<dyn Storage>,
        n: u64,
        block_size: usize,
        key: BlockKey,
        fill: &(dyn Fn(u64, &mut [u8]) + Sync),
    ) -> Result<Self> {
        if storage.slot_size() != block_size + TAG_LEN || storage.region_slots(0) < n {
            return Err(OramError::Config(format!("plain store needs region 0 with {n} slots of {} bytes", block_size + TAG_LEN)));
        }
        let mut buf = vec![0u8; block_size + TAG_LEN];
        for i in 0..n {
            fill(i, &mut buf[..block_size]);
            key.seal_slot(slot_nonce(i, 0), &mut buf);
            storage.write(Actor::Init, 0, i, &buf)?;
        }
        storage.sync()?;
        Ok(Self { storage, n, block_size, key })
    }

    pub fn read(&mut self, id: u64) -> Result<Vec<u8>> {
        if id >= self.n {
            return Err(OramError::UnknownBlock { id, n_blocks: self.n });
        }
        let mut out = vec![0u8; self.block_size];
        let key = &self.key;
        self.storage.read_with(Actor::Plain, 0, id, &mut |slot| key.open_slot_into(slot_nonce(id, 0), slot, &mut out, 0, id))?;
        Ok(out)
    }
}
