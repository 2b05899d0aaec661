//! The storage server's view of a run, request by request: the adversary's side of the
//! leakage tests (`veil leak`, python/veil/oram/observer.py).
//!
//! Each engine runs over memory storage with its access log on; after every request the log
//! is drained and the entries kept with the request's index (the server's clock: it sees
//! requests arrive one after another). PRO-ORAM's shuffle runs beside the requests; waiting
//! for it after each request makes the entries a request carries a function of the seed and
//! the requests only, not of thread timing, so a run is reproducible for its seed.

use crate::crypto::{BlockKey, TAG_LEN};
use crate::data::synthetic_block;
use crate::error::{OramError, Result};
use crate::pathoram::{self, PathOram};
use crate::plain::PlainStore;
use crate::proram::{self, ProOram, ProOramConfig};
use crate::storage::{Actor, LogEntry, MemoryStorage, Op, Storage};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;

/// One recorded storage call: the request it happened during, and what the server saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub request: u32,
    pub entry: LogEntry,
}

/// What the server sees of `ids` read in order by `engine` ("proram", "pathoram", "plain")
/// over `n_blocks` blocks of `block_size` bytes; returns the calls, the slot size (every call
/// moves one slot) and each region's slot count (public geometry). Set-up writes are not part of it (the server sees the same set-up
/// whatever the user later reads).
pub fn observe(engine: &str, n_blocks: u64, block_size: usize, seed: u64, ids: &[u64]) -> Result<(Vec<Seen>, usize, Vec<u64>)> {
    if n_blocks == 0 || block_size == 0 {
        return Err(OramError::Config("n_blocks and block_size must be positive".into()));
    }
    if let Some(id) = ids.iter().find(|&&i| i >= n_blocks) {
        return Err(OramError::UnknownBlock { id: *id, n_blocks });
    }
    let fill = move |i: u64, b: &mut [u8]| synthetic_block(seed, i, b);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5EED);
    let mut seen = Vec::new();
    let keep = |request: u32, st: &Arc<dyn Storage>, seen: &mut Vec<Seen>| {
        let mut e = st.log().drain();
        // Shuffle threads append side by side: order within one request is their timing's,
        // so it is not part of the view (the server could not rely on it either).
        e.sort_by_key(|x| (x.actor as u8, x.op as u8, x.region, x.index));
        seen.extend(e.into_iter().map(|entry| Seen { request, entry }));
    };
    let slot;
    let regions: Vec<u64>;
    match engine {
        "proram" => {
            slot = block_size + TAG_LEN;
            regions = proram::region_slots(n_blocks, proram::DEFAULT_RUN_AHEAD)?;
            let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(slot, &regions));
            let pc = ProOramConfig { block_size, threads: 1, seed: Some(seed), pace: false, pace_margin: proram::DEFAULT_PACE_MARGIN, shuffle_idle: false, epoch_len: None, shuffle: Default::default() };
            let e = ProOram::create(st.clone(), BlockKey::random(&mut rng), n_blocks, pc, &fill)?;
            e.wait_shuffle();
            st.log().drain();
            st.log().set_enabled(true);
            for (k, &id) in ids.iter().enumerate() {
                e.read(id)?;
                e.wait_shuffle();
                keep(k as u32, &st, &mut seen);
            }
        }
        "pathoram" => {
            slot = pathoram::slot_size(block_size, 4);
            regions = vec![pathoram::buckets_for(n_blocks)];
            let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(slot, &regions));
            let mut e = PathOram::create(st.clone(), n_blocks, block_size, 4, seed, &fill)?;
            st.log().set_enabled(true);
            for (k, &id) in ids.iter().enumerate() {
                e.read(id)?;
                keep(k as u32, &st, &mut seen);
            }
        }
        "plain" => {
            slot = block_size + TAG_LEN;
            regions = vec![n_blocks];
            let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(slot, &regions));
            let mut e = PlainStore::create(st.clone(), n_blocks, block_size, BlockKey::random(&mut rng), &fill)?;
            st.log().set_enabled(true);
            for (k, &id) in ids.iter().enumerate() {
                e.read(id)?;
                keep(k as u32, &st, &mut seen);
            }
        }
        e => return Err(OramError::Config(format!("unknown engine '{e}' (proram, pathoram, plain)"))),
    }
    Ok((seen, slot, regions))
}

/// Actor and op as the small integers the bindings hand over.
pub fn actor_code(a: Actor) -> u8 {
    a as u8
}

pub fn op_code(o: Op) -> u8 {
    o as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_store_shows_the_block_read() {
        let (seen, slot, regions) = observe("plain", 16, 32, 1, &[3, 3, 9]).unwrap();
        assert_eq!(slot, 32 + TAG_LEN);
        assert_eq!(regions, vec![16]);
        let idx: Vec<u64> = seen.iter().map(|s| s.entry.index).collect();
        assert_eq!(idx, vec![3, 3, 9]);
    }

    #[test]
    fn proram_view_is_reproducible_for_a_seed() {
        let ids: Vec<u64> = (0..40).map(|i| (i * 7) % 50).collect();
        let a = observe("proram", 50, 32, 4, &ids).unwrap();
        let b = observe("proram", 50, 32, 4, &ids).unwrap();
        assert_eq!(a.0, b.0);
        assert!(a.0.iter().any(|s| s.entry.actor == Actor::Shuffle));
    }

    #[test]
    fn unknown_engine_and_block_are_refused() {
        assert!(observe("ecb", 8, 8, 0, &[0]).is_err());
        assert!(matches!(observe("plain", 8, 8, 0, &[8]), Err(OramError::UnknownBlock { .. })));
    }
}
