//! The shuffle component: builds the next epoch's permuted, re-encrypted copy while the
//! current epoch serves.
//!
//! It is a three-stage Clos permutation network over an r x c grid of slots (see `clos`).
//! Each stage walks its groups (rows, then columns, then rows) in a fixed order; a group is
//! read whole into private memory (one group, ~sqrt(N) blocks), decrypted, permuted there,
//! re-sealed under the stage's fresh key and written back to the same group of slots. The
//! storage trace is therefore identical for every permutation and every request sequence:
//! every slot is read once and written once per stage, in an order fixed by (r, c) alone.
//! There are no dummies and no failure probability (unlike the Melbourne shuffle, which pads
//! bins with dummies and aborts on overflow), so each real block costs exactly three
//! decrypt+encrypt passes.
//!
//! Blocks of a group are processed in parallel on the shuffle's thread pool.

use crate::clos::ClosRoute;
use crate::crypto::{slot_nonce, BlockKey};
use crate::error::{OramError, Result};
use crate::storage::{Actor, Storage};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Work done so far, in units of about one block copy (see `total_ops`); the
/// access component paces itself against it so that every access carries an equal share.
pub struct Progress {
    done: AtomicU64,
    /// What the waiting access is waiting for (u64::MAX: nobody waits), so that workers take
    /// the lock and wake it only when it can go on.
    want: AtomicU64,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Default for Progress {
    fn default() -> Self {
        Self { done: AtomicU64::new(0), want: AtomicU64::new(u64::MAX), lock: Mutex::new(()), cv: Condvar::new() }
    }
}

impl Progress {
    pub fn reset(&self) {
        self.done.store(0, Ordering::SeqCst);
    }
    pub fn add(&self, k: u64) {
        let now = self.done.fetch_add(k, Ordering::SeqCst) + k;
        if now >= self.want.load(Ordering::SeqCst) {
            let _g = self.lock.lock().unwrap();
            self.cv.notify_all();
        }
    }
    pub fn get(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }
    /// Waits until `target` units are done or `stop` says the shuffle has ended.
    pub fn wait_for(&self, target: u64, stop: &AtomicBool) {
        if self.get() >= target || stop.load(Ordering::SeqCst) {
            return;
        }
        let mut g = self.lock.lock().unwrap();
        self.want.store(target, Ordering::SeqCst);
        while self.get() < target && !stop.load(Ordering::SeqCst) {
            g = self.cv.wait_timeout(g, std::time::Duration::from_millis(20)).unwrap().0;
        }
        self.want.store(u64::MAX, Ordering::SeqCst);
    }
}

pub struct ShuffleJob {
    pub src_region: u32,
    pub src_ctx: u32,
    pub src_key: Arc<BlockKey>,
    pub dst_region: u32,
    /// Keys of stages 1, 2 and 3; the last one is the new epoch's key.
    pub stage_keys: [Arc<BlockKey>; 3],
    pub route: ClosRoute,
}

/// Stage contexts (nonce suffixes) of the copy each stage writes; a finished epoch uses 3.
pub const EPOCH_CTX: u32 = 3;

/// Progress units: a slot's read + open + seal weighs about three copies, its write one.
const READ_UNITS: u64 = 3;
const WRITE_UNITS: u64 = 1;

/// Total progress units one shuffle reports: 3 stages x M slots x (read side + write side).
pub fn total_ops(slots: u64) -> u64 {
    3 * slots * (READ_UNITS + WRITE_UNITS)
}

pub fn run(
    storage: &dyn Storage,
    job: &ShuffleJob,
    pool: &rayon::ThreadPool,
    progress: &Progress,
    abort: &AtomicBool,
    crash_at: Option<u64>,
) -> Result<()> {
    let (r, c) = (job.route.rows, job.route.cols);
    let slot = storage.slot_size();
    let mut bufs: Vec<Vec<u8>> = (0..r.max(c)).map(|_| vec![0u8; slot]).collect();
    let mut staged: Vec<Vec<u8>> = vec![Vec::new(); r.max(c)];
    let mut group: Vec<u64> = Vec::with_capacity(r.max(c));
    for stage in 0..3usize {
        let (read_region, read_key, read_ctx) = if stage == 0 {
            (job.src_region, &job.src_key, job.src_ctx)
        } else {
            (job.dst_region, &job.stage_keys[stage - 1], stage as u32)
        };
        let key = &job.stage_keys[stage];
        let ctx = stage as u32 + 1;
        let by_columns = stage == 1;
        let n_groups = if by_columns { c } else { r };
        for g in 0..n_groups {
            if abort.load(Ordering::SeqCst) {
                return Err(OramError::Io("shuffle aborted".into()));
            }
            if crash_at.is_some_and(|at| progress.get() >= at) {
                eprintln!("veil-oram: failpoint shuffle-stage2: aborting");
                std::process::abort();
            }
            group.clear();
            if by_columns {
                group.extend((0..r).map(|k| (k * c + g) as u64));
            } else {
                group.extend((0..c).map(|k| (g * c + k) as u64));
            }
            let bufs = &mut bufs[..group.len()];
            let group = &group;
            pool.install(|| {
                bufs.par_iter_mut().zip(group.par_iter()).try_for_each(|(b, &p)| {
                    storage.read(Actor::Shuffle, read_region, p, b)?;
                    read_key.open_slot(slot_nonce(p, read_ctx), b, read_region, p)?;
                    // Seal for the destination at once, while the block is still in cache;
                    // the nonce names the destination slot, which the route already fixes.
                    let to = job.route.stages[stage][p as usize] as u64;
                    key.seal_slot(slot_nonce(to, ctx), b);
                    progress.add(READ_UNITS);
                    Ok::<(), OramError>(())
                })
            })?;
            // Put each block at the index of its target slot, so that slots are written in
            // the group's fixed order (the order of writes must not depend on the route).
            for k in 0..group.len() {
                let to = job.route.stages[stage][group[k] as usize] as usize;
                let at = if by_columns { to / c } else { to % c };
                staged[at] = std::mem::take(&mut bufs[k]);
            }
            bufs.swap_with_slice(&mut staged[..group.len()]);
            pool.install(|| {
                bufs.par_iter().zip(group.par_iter()).try_for_each(|(b, &to)| {
                    storage.write(Actor::Shuffle, job.dst_region, to, b)?;
                    progress.add(WRITE_UNITS);
                    Ok::<(), OramError>(())
                })
            })?;
        }
    }
    storage.sync_region(job.dst_region)
}
