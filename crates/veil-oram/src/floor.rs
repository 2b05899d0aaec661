//! What a steady PRO-ORAM shuffle costs on this machine, with AES-GCM and with its memory
//! traffic alone.
//!
//! The bench's AES-GCM bound assumes the shuffle's cores do nothing but AES-GCM at the speed one
//! core seals a buffer that stays in cache. The shuffle cannot have its data in cache: every
//! epoch it reads and writes every slot of the store. To say how much of the gap to that bound
//! is the machine's memory rather than the shuffle's code, the same shuffle (same `shuffle::run`,
//! storage, groups, threads and order of slot accesses) is run with [`Copies`] in place of the
//! stage keys: every open becomes a copy of the slot into private memory, every seal a copy
//! back. No cipher can make the shuffle faster than its own copies, so the copy-only time is a
//! floor under the AES-GCM shuffle's time on this machine.

use crate::clos;
use crate::crypto::{slot_nonce, BlockKey, SlotCipher, TAG_LEN};
use crate::error::{OramError, Result};
use crate::proram::Geometry;
use crate::shuffle::{self, Buffers, NextStage1, Progress, ShuffleJob, Weights};
use crate::storage::{Actor, MemoryStorage, Storage};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Not a cipher: moves a slot's bytes as an opening or a sealing would, and nothing else. For
/// measuring the shuffle's memory traffic only: what it writes is plaintext, with a zero tag.
pub struct Copies;

impl SlotCipher for Copies {
    fn open_slot_into(&self, _nonce: [u8; 12], slot: &[u8], plain: &mut [u8], region: u32, index: u64) -> Result<()> {
        if slot.len() != plain.len() + TAG_LEN {
            return Err(OramError::Tamper { region, index });
        }
        plain.copy_from_slice(&slot[..plain.len()]);
        Ok(())
    }
    fn seal_slot_into(&self, _nonce: [u8; 12], plain: &[u8], slot: &mut [u8]) {
        let (body, tag) = slot.split_at_mut(plain.len());
        body.copy_from_slice(plain);
        tag.fill(0);
    }
}

fn d_shuffles() -> usize {
    4
}
fn d_threads() -> usize {
    2
}

/// One comparison: `shuffles` steady shuffles with copies, then as many with AES-GCM, at
/// `n_blocks` blocks of `block_size` bytes on `threads` shuffle threads.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FloorConfig {
    pub n_blocks: u64,
    pub block_size: usize,
    #[serde(default = "d_threads")]
    pub threads: usize,
    #[serde(default = "d_shuffles")]
    pub shuffles: usize,
    #[serde(default)]
    pub seed: u64,
}

/// Wall and CPU milliseconds of each timed shuffle, and the epoch length that divides them
/// among requests. The first shuffle of each kind (buffers faulted in) is not timed.
#[derive(Clone, Debug, Serialize)]
pub struct FloorResult {
    pub n_blocks: u64,
    pub block_size: usize,
    pub threads: usize,
    pub slots: u64,
    pub epoch_len: u64,
    pub copies_wall_ms: Vec<f64>,
    pub copies_cpu_ms: Vec<f64>,
    pub gcm_wall_ms: Vec<f64>,
    pub gcm_cpu_ms: Vec<f64>,
}

/// The Clos route of a uniformly random permutation of the epoch's slots.
fn random_route(geom: &Geometry, rng: &mut StdRng) -> Arc<clos::ClosRoute> {
    let mut d: Vec<u32> = (0..geom.slots() as u32).collect();
    d.shuffle(rng);
    Arc::new(clos::route(geom.rows as usize, geom.cols as usize, &d))
}

/// The steady state as a served store runs it: stage 1 was done by the previous shuffle (so
/// region 0 holds its output, sealed under the stage-1 key), stages 2 and 3 run, and stage 3
/// also writes the next shuffle's stage 1.
struct Steady<'a> {
    geom: Geometry,
    storage: &'a MemoryStorage,
    pool: rayon::ThreadPool,
    bufs: Buffers,
    rng: StdRng,
}

impl Steady<'_> {
    fn route(&mut self) -> Arc<clos::ClosRoute> {
        random_route(&self.geom, &mut self.rng)
    }

    /// `shuffles + 1` shuffles keyed by `key`; returns the wall and CPU ms of all but the first.
    fn run<K: SlotCipher>(&mut self, shuffles: usize, key: &dyn Fn(&mut StdRng) -> K) -> Result<(Vec<f64>, Vec<f64>)> {
        let (progress, abort) = (Progress::default(), AtomicBool::new(false));
        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
        let mut cur = self.route();
        let mut k1 = Arc::new(key(&mut self.rng));
        self.seal_stage1(&*k1)?;
        for s in 0..=shuffles {
            let next = self.route();
            let k1n = Arc::new(key(&mut self.rng));
            let job = ShuffleJob {
                stage1_from: None,
                work_region: 0,
                dst_region: 1,
                keys: [k1.clone(), Arc::new(key(&mut self.rng)), Arc::new(key(&mut self.rng))],
                route: cur,
                next: Some(NextStage1 { key: k1n.clone(), route: next.clone() }),
            };
            let (t0, c0) = (Instant::now(), crate::measure::process_cpu_s());
            let (pool, bufs, storage) = (&self.pool, &mut self.bufs, self.storage);
            pool.install(|| shuffle::run(storage, &job, pool, &progress, &abort, None, bufs, &Weights::default()))?;
            if s > 0 {
                wall.push(t0.elapsed().as_secs_f64() * 1e3);
                cpu.push((crate::measure::process_cpu_s() - c0) * 1e3);
            }
            (k1, cur) = (k1n, next);
        }
        Ok((wall, cpu))
    }

    /// Region 0 as the previous shuffle's stage 3 leaves it: every slot sealed under `k1`.
    fn seal_stage1<K: SlotCipher>(&self, k1: &K) -> Result<()> {
        let plain = vec![7u8; self.storage.slot_size() - TAG_LEN];
        for p in 0..self.geom.slots() {
            self.storage.write_with(Actor::Shuffle, 0, p, &mut |dst| {
                k1.seal_slot_into(slot_nonce(p, 1), &plain, dst);
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Runs the comparison (copies first, then AES-GCM, on the same storage and buffers).
pub fn run(cfg: &FloorConfig) -> Result<FloorResult> {
    if cfg.block_size == 0 || cfg.threads == 0 || cfg.shuffles == 0 {
        return Err(OramError::Config("block_size, threads and shuffles must be at least 1".into()));
    }
    let geom = Geometry::new(cfg.n_blocks)?;
    let storage = MemoryStorage::new(cfg.block_size + TAG_LEN, &[geom.slots(), geom.slots()]);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cfg.threads)
        .build()
        .map_err(|e| OramError::Io(format!("shuffle threads: {e}")))?;
    let mut steady =
        Steady { geom, storage: &storage, pool, bufs: Buffers::default(), rng: StdRng::seed_from_u64(cfg.seed) };
    let (copies_wall_ms, copies_cpu_ms) = steady.run(cfg.shuffles, &|_| Copies)?;
    let (gcm_wall_ms, gcm_cpu_ms) = steady.run(cfg.shuffles, &|rng| BlockKey::random(rng))?;
    Ok(FloorResult {
        n_blocks: cfg.n_blocks,
        block_size: cfg.block_size,
        threads: cfg.threads,
        slots: geom.slots(),
        epoch_len: geom.epoch_len,
        copies_wall_ms,
        copies_cpu_ms,
        gcm_wall_ms,
        gcm_cpu_ms,
    })
}

/// JSON in, JSON out (the bindings' entry point).
pub fn run_json(cfg: &str) -> Result<String> {
    let c: FloorConfig = serde_json::from_str(cfg).map_err(|e| OramError::Config(e.to_string()))?;
    Ok(serde_json::to_string(&run(&c)?).unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One steady shuffle of region 0 into region 1 (and the next stage 1 back into region 0)
    /// with keys from `key`, over blocks that each hold their slot's index; returns each
    /// slot's plaintext afterwards (region 1, then region 0) and the storage's access log.
    fn shuffled<K: SlotCipher>(
        key: &dyn Fn(&mut StdRng) -> K,
        opened: &dyn Fn(&K, u32, u64, &[u8]) -> Vec<u8>,
    ) -> (Vec<Vec<u8>>, Vec<crate::storage::LogEntry>) {
        let (geom, block) = (Geometry::new(60).unwrap(), 48);
        let m = geom.slots();
        let storage = MemoryStorage::new(block + TAG_LEN, &[m, m]);
        let mut routes = StdRng::seed_from_u64(9);
        let mut route = || random_route(&geom, &mut routes);
        let mut rng = StdRng::seed_from_u64(3);
        let keys = [Arc::new(key(&mut rng)), Arc::new(key(&mut rng)), Arc::new(key(&mut rng))];
        let next = NextStage1 { key: Arc::new(key(&mut rng)), route: route() };
        for p in 0..m {
            let mut plain = vec![0u8; block];
            plain[..8].copy_from_slice(&p.to_le_bytes());
            storage.write_with(Actor::Shuffle, 0, p, &mut |dst| {
                keys[0].seal_slot_into(slot_nonce(p, 1), &plain, dst);
                Ok(())
            })
            .unwrap();
        }
        let job = ShuffleJob { stage1_from: None, work_region: 0, dst_region: 1, keys: keys.clone(), route: route(), next: Some(next) };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let (progress, abort, mut bufs) = (Progress::default(), AtomicBool::new(false), Buffers::default());
        storage.log().set_enabled(true);
        shuffle::run(&storage, &job, &pool, &progress, &abort, None, &mut bufs, &Weights::default()).unwrap();
        let log = storage.log().drain();
        let mut out = Vec::new();
        for (region, k) in [(1, &*keys[2]), (0, &*job.next.as_ref().unwrap().key)] {
            for q in 0..m {
                storage.read_with(Actor::Shuffle, region, q, &mut |s| {
                    out.push(opened(k, region, q, s));
                    Ok(())
                })
                .unwrap();
            }
        }
        (out, log)
    }

    #[test]
    fn copies_move_every_block_where_the_sealed_shuffle_does_through_the_same_accesses() {
        let (sealed, sealed_log) = shuffled(&|rng| BlockKey::random(rng), &|k, region, q, slot| {
            let ctx = if region == 1 { shuffle::EPOCH_CTX } else { 1 };
            let mut plain = vec![0u8; slot.len() - TAG_LEN];
            SlotCipher::open_slot_into(k, slot_nonce(q, ctx), slot, &mut plain, region, q).unwrap();
            plain
        });
        let (copied, copied_log) = shuffled(&|_| Copies, &|_, _, _, slot| slot[..slot.len() - TAG_LEN].to_vec());
        assert_eq!(sealed, copied);
        // a real permutation of the blocks, not the identity
        let m = sealed.len() / 2;
        let moved = (0..m).filter(|&q| sealed[q][..8] != (q as u64).to_le_bytes()).count();
        assert!(moved > m / 2, "only {moved} of {m} blocks moved");
        assert_eq!(sealed_log, copied_log);
        assert!(!sealed_log.is_empty());
    }

    #[test]
    fn each_timed_shuffle_is_reported() {
        let r = run(&FloorConfig { n_blocks: 60, block_size: 256, threads: 2, shuffles: 2, seed: 0 }).unwrap();
        assert_eq!((r.copies_wall_ms.len(), r.gcm_wall_ms.len(), r.gcm_cpu_ms.len()), (2, 2, 2));
        assert!(r.copies_wall_ms.iter().chain(&r.gcm_wall_ms).all(|&ms| ms > 0.0));
        assert_eq!(r.slots, Geometry::new(60).unwrap().slots());
    }

    #[test]
    fn bad_configs_are_errors() {
        for cfg in [r#"{"n_blocks": 60, "block_size": 0}"#, r#"{"n_blocks": 60, "block_size": 64, "shuffles": 0}"#,
            r#"{"n_blocks": 0, "block_size": 64}"#, r#"{"n_blocks": 60, "block_size": 64, "bogus": 1}"#] {
            assert!(matches!(run_json(cfg), Err(OramError::Config(_))), "{cfg}");
        }
    }
}
