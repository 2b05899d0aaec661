//! The K-oblivious shuffle, after CacheShuffle (Patel, Persiano and Yeo, "CacheShuffle: A
//! Family of Oblivious Shuffles", ICALP 2018): an epoch's copy is rebuilt in one pass, each slot
//! opened once and sealed once (2 AES-GCM passes per slot, against the Clos network's 5).
//!
//! Why one pass is enough. After an epoch has served its T requests, the server has seen which
//! K = T slots of that copy were read (the touched ones) and, for the worst case, knows which
//! blocks they held; the other M - K slots it has never seen read, and the permutation restricted
//! to them is still uniformly random given everything it has seen. The new copy is built as:
//! a uniformly random K-subset S of the output slots takes the touched blocks in a uniformly
//! random order; the untouched blocks fill the other output slots in the order of their old
//! slots. (untouched order, S, order on S) <-> new permutation is a bijection, so the new
//! permutation is uniform given the server's view, which is what the next epoch's accesses need.
//! The server sees: the touched slots read in ascending order (it already knows them), then, in
//! batches, the next untouched slots read in ascending order and the next output slots written
//! in ascending order. That trace is a function of the touched set alone; S and the order stay
//! private. Untouched block i (in slot order) goes to output slot q_i >= i, so it is always read
//! in the batch that writes it or before, and private memory holds K + one batch of blocks.
//!
//! The catch, and why the engine keeps its chains apart: the input must be a copy whose epoch is
//! over (its touched set complete) and whose untouched part nobody has seen since, so the copy
//! built now comes from the epoch served *before* the current one, never from the one being
//! served (see `proram::kepochs`). What the server learns about the old copy (where an untouched
//! block went, up to S) is no more than the new permutation being uniform allows.

use crate::crypto::{slot_nonce, SlotCipher, TAG_LEN};
use crate::error::{OramError, Result};
use crate::shuffle::{Buffers, Progress, BATCH_BYTES};
use crate::storage::{Actor, Storage};
use rand::seq::{index, SliceRandom};
use rand::Rng;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The shuffles the engine can run, chosen by name (`ProOramConfig::shuffle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShuffleKind {
    /// The Clos-network oblivious shuffle (`shuffle`): any copy, any time, 5 passes per slot.
    #[default]
    Clos,
    /// The K-oblivious one-pass shuffle of this module, from an epoch that has ended; the Clos
    /// shuffle still builds the first epochs after open and after a failure.
    Cache,
}

/// Names and one-line descriptions, in the order `from_name` lists them.
pub const SHUFFLES: &[(&str, &str)] = &[
    ("clos", "three-stage Clos-network oblivious shuffle: 2 openings and 3 sealings per slot per epoch"),
    ("cache", "K-oblivious one-pass shuffle after CacheShuffle: 1 opening and 1 sealing per slot per epoch"),
];

impl ShuffleKind {
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "clos" => Ok(Self::Clos),
            "cache" => Ok(Self::Cache),
            _ => {
                let known: Vec<&str> = SHUFFLES.iter().map(|s| s.0).collect();
                Err(OramError::Config(format!("unknown shuffle {name:?}; known: {}", known.join(", "))))
            }
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Self::Clos => "clos",
            Self::Cache => "cache",
        }
    }
}

/// Where each slot of the old copy goes in the new one: `dest[old slot] = new slot`, for `m`
/// slots of which `touched` (ascending, distinct) were read. Draws S and the order on it.
pub fn plan(m: u64, touched: &[u64], rng: &mut impl Rng) -> Vec<u32> {
    let k = touched.len();
    let mut s: Vec<usize> = index::sample(rng, m as usize, k).into_vec();
    s.sort_unstable();
    let mut order: Vec<u64> = touched.to_vec();
    order.shuffle(rng);
    let mut dest = vec![u32::MAX; m as usize];
    for (&q, &p) in s.iter().zip(&order) {
        dest[p as usize] = q as u32;
    }
    let mut free = (0..m as usize).filter(|q| s.binary_search(q).is_err());
    for d in dest.iter_mut().filter(|d| **d == u32::MAX) {
        *d = free.next().expect("M - K free output slots for M - K untouched slots") as u32;
    }
    dest
}

pub struct KJob<K> {
    pub src: (u32, u32, Arc<K>),
    /// Slots of the source epoch its requests read, ascending and distinct.
    pub touched: Vec<u64>,
    /// `plan`'s output: new slot of each old slot.
    pub dest: Vec<u32>,
    pub dst: (u32, u32, Arc<K>),
}

/// Blocks read and written together: whole slots up to BATCH_BYTES, at least 32 of them (so
/// that two threads have work at 256 KB), at most all.
pub fn batch_slots(m: u64, block: usize) -> usize {
    (BATCH_BYTES / block.max(1)).max(32).min(m as usize).max(1)
}

/// Runs the job: returns the wall time. `weight` (progress units per output slot) is shared
/// between its opening and its sealing.
#[allow(clippy::too_many_arguments)]
pub fn run<K: SlotCipher>(
    storage: &dyn Storage,
    job: &KJob<K>,
    pool: &rayon::ThreadPool,
    progress: &Progress,
    abort: &AtomicBool,
    crash_at: Option<u64>,
    bufs: &mut Buffers,
    weight: u64,
) -> Result<f64> {
    let t0 = std::time::Instant::now();
    let m = job.dest.len();
    let block = storage.slot_size() - TAG_LEN;
    let w = batch_slots(m as u64, block);
    let k = job.touched.len();
    let (src_region, src_ctx, src_key) = (&job.src.0, job.src.1, &*job.src.2);
    let (dst_region, dst_ctx, dst_key) = (job.dst.0, job.dst.1, &*job.dst.2);
    let w_read = weight / 2;
    let w_write = weight - w_read;
    // private memory: the touched blocks and one batch, in the shuffle's reusable buffers
    bufs.fit_blocks(k + 2 * w, block);
    let mut free: Vec<Vec<u8>> = bufs.take_blocks();
    // the new slot's source: for output slot q, which old slot's block it takes
    let mut from = vec![0u32; m];
    for (p, &q) in job.dest.iter().enumerate() {
        from[q as usize] = p as u32;
    }
    // held blocks by old slot; at most K + 2W at once
    let mut held: std::collections::HashMap<u32, Vec<u8>> = std::collections::HashMap::with_capacity(k + 2 * w);
    let open = |slots: &[u64], free: &mut Vec<Vec<u8>>, held: &mut std::collections::HashMap<u32, Vec<u8>>| -> Result<()> {
        let mut got: Vec<(u64, Vec<u8>)> =
            slots.iter().map(|&p| (p, free.pop().unwrap_or_else(|| vec![0u8; block]))).collect();
        pool.install(|| {
            got.par_iter_mut().with_max_len(2).try_for_each(|(p, buf)| {
                storage.read_with(Actor::Shuffle, *src_region, *p, &mut |slot| {
                    src_key.open_slot_into(slot_nonce(*p, src_ctx), slot, buf, *src_region, *p)
                })?;
                progress.add(w_read);
                Ok::<(), OramError>(())
            })
        })?;
        held.extend(got.into_iter().map(|(p, b)| (p as u32, b)));
        Ok(())
    };
    let result = (|| -> Result<()> {
        for chunk in job.touched.chunks(w) {
            open(chunk, &mut free, &mut held)?;
        }
        let mut untouched = (0..m as u64).filter(|p| job.touched.binary_search(p).is_err());
        let mut batch: Vec<u64> = Vec::with_capacity(w);
        for q0 in (0..m).step_by(w) {
            if abort.load(Ordering::SeqCst) {
                return Err(OramError::Io("shuffle aborted".into()));
            }
            if crash_at.is_some_and(|at| progress.get() >= at) {
                eprintln!("veil-oram: failpoint shuffle-stage2: aborting");
                std::process::abort();
            }
            batch.clear();
            batch.extend(untouched.by_ref().take(w));
            open(&batch, &mut free, &mut held)?;
            let q1 = (q0 + w).min(m);
            let mut out: Vec<(u64, Vec<u8>)> = Vec::with_capacity(q1 - q0);
            for (q, src) in from.iter().enumerate().take(q1).skip(q0) {
                let b = held.remove(src).ok_or_else(|| {
                    OramError::Io(format!("cache shuffle: output slot {q}'s block was not read in time"))
                })?;
                out.push((q as u64, b));
            }
            let sealed = pool.install(|| {
                out.par_iter().with_max_len(2).try_for_each(|(q, b)| {
                    storage.write_with(Actor::Shuffle, dst_region, *q, &mut |dst| {
                        dst_key.seal_slot_into(slot_nonce(*q, dst_ctx), b, dst);
                        Ok(())
                    })?;
                    progress.add(w_write);
                    Ok::<(), OramError>(())
                })
            });
            free.extend(out.into_iter().map(|(_, b)| b));
            sealed?;
        }
        storage.sync_region(dst_region)
    })();
    free.extend(held.into_values());
    bufs.give_blocks(free);
    result.map(|_| t0.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn plan_is_a_bijection_that_keeps_the_untouched_order() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let touched = vec![3u64, 7, 8, 40];
        let dest = plan(50, &touched, &mut rng);
        let mut seen = dest.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<u32>>());
        let rest: Vec<u32> = (0..50u64).filter(|p| !touched.contains(p)).map(|p| dest[p as usize]).collect();
        assert!(rest.windows(2).all(|w| w[0] < w[1]), "untouched blocks keep their order");
        // untouched block i goes no earlier than slot i: it is read by the batch that writes it
        assert!(rest.iter().enumerate().all(|(i, &q)| q as usize >= i));
    }

    /// Over many draws every touched slot lands on every output slot about equally often: the
    /// set S and the order on it are uniform.
    #[test]
    fn touched_blocks_land_uniformly() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let (m, touched) = (20u64, vec![0u64, 19]);
        let mut hits = vec![0u32; m as usize];
        let draws = 20_000;
        for _ in 0..draws {
            hits[plan(m, &touched, &mut rng)[0] as usize] += 1;
        }
        let expect = draws as f64 / m as f64;
        assert!(hits.iter().all(|&h| (h as f64 - expect).abs() < 5.0 * expect.sqrt()), "{hits:?}");
    }

    #[test]
    fn names_come_from_the_registry() {
        assert_eq!(ShuffleKind::from_name("cache").unwrap(), ShuffleKind::Cache);
        let e = ShuffleKind::from_name("melbourne").unwrap_err().to_string();
        assert!(e.contains("clos, cache"), "{e}");
    }
}
