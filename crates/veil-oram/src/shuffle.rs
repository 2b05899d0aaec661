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
//! bins with dummies and aborts on overflow). Stage 3 also performs the next shuffle's stage 1
//! (see `NextStage1`), so in steady state a slot costs 2 reads, 2 decryptions, 3 encryptions
//! and 3 writes per epoch.
//!
//! Blocks of a group are processed in parallel on the shuffle's thread pool; small blocks'
//! groups go in batches of whole groups (`BATCH_BYTES`).

use crate::clos::ClosRoute;
use crate::crypto::{slot_nonce, BlockKey, SlotCipher, TAG_LEN};
use crate::error::{OramError, Result};
use crate::storage::{Actor, Storage};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Work done so far, in the units of `Weights` (see `total_ops`); the
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
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
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
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.want.store(target, Ordering::SeqCst);
        while self.get() < target && !stop.load(Ordering::SeqCst) {
            g = self.cv.wait_timeout(g, Duration::from_millis(20)).unwrap_or_else(|e| e.into_inner()).0;
        }
        self.want.store(u64::MAX, Ordering::SeqCst);
    }
    /// Wakes every waiter (the shuffle has ended).
    pub fn wake(&self) {
        // also while a panicking shuffle thread unwinds: a poisoned lock still wakes
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
}

/// Where a full shuffle's first stage reads from.
pub struct Source<K = BlockKey> {
    pub region: u32,
    pub ctx: u32,
    pub key: Arc<K>,
}

/// Stage 1 of the *following* shuffle, done while this one's last stage has each row in
/// private memory: the rows of the new epoch are exactly stage 1's groups.
pub struct NextStage1<K = BlockKey> {
    pub key: Arc<K>,
    pub route: Arc<ClosRoute>,
}

pub struct ShuffleJob<K = BlockKey> {
    /// Some: run stage 1 from this copy. None: `work_region` already holds stage 1's output,
    /// sealed under `keys[0]` by the previous shuffle.
    pub stage1_from: Option<Source<K>>,
    pub work_region: u32,
    pub dst_region: u32,
    /// Keys of stages 1, 2 and 3; the last one is the new epoch's key.
    pub keys: [Arc<K>; 3],
    pub route: Arc<ClosRoute>,
    pub next: Option<NextStage1<K>>,
}

/// Stage contexts (nonce suffixes) of the copy each stage writes; a finished epoch uses 3.
pub const EPOCH_CTX: u32 = 3;

/// Progress weights: the cost of one slot in each stage, in nanoseconds as measured on the
/// previous shuffle (`run` returns the stage times), so that progress tracks time and every
/// request waits for the same share whichever stage is running. A slot's read (an opening)
/// and each of its writes (a sealing) count alike.
#[derive(Clone, Copy, Debug)]
pub struct Weights {
    pub per_slot: [u64; 3],
    /// The rest of a shuffle's wall time (route tables, state record, final sync), in ns.
    pub overhead: u64,
    /// The cache shuffle's (`cacheshuffle`) whole wall time per slot, in ns.
    pub cache: u64,
}

impl Default for Weights {
    fn default() -> Self {
        // before any measurement: stage 3 also seals and writes the next shuffle's stage 1
        Self { per_slot: [4000, 4000, 7000], overhead: 0, cache: 6000 }
    }
}

/// Total progress of a shuffle over `slots` slots; the units are nanoseconds of the previous
/// shuffle's wall time, so progress also predicts when the shuffle will be done.
pub fn total_ops(slots: u64, with_stage1: bool, w: &Weights) -> u64 {
    slots * (if with_stage1 { w.per_slot[0] } else { 0 } + w.per_slot[1] + w.per_slot[2]) + w.overhead
}

struct Out<'a, K> {
    region: u32,
    key: &'a K,
    ctx: u32,
    /// destination slot of the block read from slot p
    to: &'a [u32],
}

/// The shuffle's private memory: one group of plaintext blocks, and where each output slot's
/// block sits in it. Kept across shuffles, so that a new epoch does not start by faulting in
/// and zeroing tens of megabytes.
#[derive(Default)]
pub struct Buffers {
    plain: Vec<Vec<u8>>,
    source: Vec<usize>,
    /// `bytes()` as of the last resize. A shuffle holds the buffers for its whole run, so a
    /// reader that locked them to count their size (the stats the measured loop reads after
    /// every request) would wait for the shuffle to finish.
    gauge: Arc<AtomicU64>,
}

impl Buffers {
    /// Bytes held: the group's plaintext blocks and its routing table.
    pub fn bytes(&self) -> u64 {
        self.plain.iter().map(|b| b.len() as u64).sum::<u64>() + (self.source.len() * std::mem::size_of::<usize>()) as u64
    }

    /// `bytes()`, readable without the lock that a running shuffle holds.
    pub fn gauge(&self) -> Arc<AtomicU64> {
        self.gauge.clone()
    }

    fn fit(&mut self, groups: usize, block: usize) {
        self.plain.resize_with(groups, Vec::new);
        for b in self.plain.iter_mut() {
            b.resize(block, 0);
        }
        self.source.resize(groups, 0);
        self.gauge.store(self.bytes(), Ordering::Relaxed);
    }

    /// At least `n` blocks of `block` bytes, for the cache shuffle (`cacheshuffle`), which
    /// takes them out (`take_blocks`) and gives them back when done.
    pub fn fit_blocks(&mut self, n: usize, block: usize) {
        if self.plain.len() < n {
            self.plain.resize_with(n, Vec::new);
        }
        for b in self.plain.iter_mut() {
            b.resize(block, 0);
        }
        self.gauge.store(self.bytes(), Ordering::Relaxed);
    }
    pub fn take_blocks(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.plain)
    }
    pub fn give_blocks(&mut self, blocks: Vec<Vec<u8>>) {
        self.plain = blocks;
        self.gauge.store(self.bytes(), Ordering::Relaxed);
    }
}

/// The least work handed to one of the pool's threads at a time, in bytes: with 4 KB blocks a
/// task per block cost more in handing out and joining (thread wake-ups, work stealing) than
/// its AES-GCM.
const MIN_TASK_BYTES: usize = 64 * 1024;

/// Large blocks go to the pool's threads in strided lanes of two: with L = ceil(n / 2) tasks,
/// task l takes blocks l and l + L of the batch, half a group apart. Small blocks, or too few
/// tasks per thread (under 8), go as before: a parallel loop over the blocks in runs of at
/// least MIN_TASK_BYTES, which rayon splits into contiguous ranges (one thread the first half
/// of a group, the other the second). Returns L, or None for the loop.
/// Why lanes: measured with `examples/shuffle_time`, alternating runs. On the 2-core VM (AMD
/// EPYC), 2 threads:
/// - a 256 KB shuffle (N = 4,096), nine pairs: 172-249 ms with lanes, against 276-330 ms
///   (1.2-1.6x in each pair), with a third less CPU; in the paced runner (`oram_run`), three
///   pairs: 527-573 Mbps against 380-418;
/// - a 64 KB one (N = 1,024), eight pairs: 10.6-18.3 ms against 15.1-20.4 (faster in 7);
/// - 30-33 lanes for a 65-block group were best; 8 or 64 lanes were hardly better than the loop;
/// - at 4 KB lanes (and fixed runs of 16 blocks) were slower than the loop.
///
/// On a 16-core Xeon server, with 2 threads, lanes were within 4% of the loop either way. With
/// 16 threads, 33 two-block tasks leave the last round mostly idle: 134 ms against 115 ms,
/// hence the 8-tasks-per-thread rule. Why this VM's memory system prefers lanes is not
/// established (docs/oram-measurements.md).
fn lanes(n: usize, block: usize, threads: usize) -> Option<usize> {
    let lanes = n.div_ceil(2);
    (2 * block >= MIN_TASK_BYTES && lanes >= 8 * threads).then_some(lanes)
}

/// Small blocks: whole groups of a stage are processed together, up to this many bytes of
/// plaintext, so that each parallel loop (whose start and end cost thread wake-ups and joins)
/// carries enough work. A batch is a fixed run of whole groups, so the storage trace stays a
/// function of (r, c) and the block size alone. At 256 KB a group is already 16 MB: one a batch.
/// The price is private memory: the shuffle holds a batch, not one group (at N = 4,096 and
/// 4 KB blocks, 7 groups: 1.8 MB instead of 266 KB), a constant beside the paper's sqrt(N)
/// blocks. Measured in the paced runner at 4 KB, N = 4,096: the shuffle's time per request fell
/// from 0.21-0.22 ms to 0.11-0.12 ms (the serving thread's wake-ups every period cost most at
/// each loop's start and join).
pub const BATCH_BYTES: usize = 2 << 20;

/// Whole groups a batch holds for an r x c grid of `block`-byte blocks: at least one, at most
/// a stage's groups.
pub fn groups_per_batch(rows: usize, cols: usize, block: usize) -> usize {
    (BATCH_BYTES / (rows.max(cols) * block).max(1)).clamp(1, rows.max(cols))
}

/// One batch of whole groups: open every slot (fixed order) straight from storage into private
/// memory, then for each output seal each block straight into its destination slot, writing
/// the slots in the batch's fixed order. Out of place on both sides: no ciphertext or plaintext
/// copies, and the plaintext stays put for a second output. `at` gives a slot's position in
/// the batch (each stage maps a group onto itself, so every destination is in the batch).
#[allow(clippy::too_many_arguments)]
fn pass<K: SlotCipher>(
    storage: &dyn Storage,
    pool: &rayon::ThreadPool,
    progress: &Progress,
    group: &[u64],
    at: &dyn Fn(usize) -> usize,
    read: (u32, &K, u32),
    outs: &[Out<K>],
    b: &mut Buffers,
    weight: u64,
) -> Result<()> {
    let w_write = weight / (outs.len() as u64 + 1);
    let w_read = weight.saturating_sub(w_write * outs.len() as u64);
    let (read_region, read_key, read_ctx) = read;
    let n = group.len();
    let plain = &mut b.plain[..n];
    let lanes = lanes(n, plain.first().map_or(1, |p| p.len()), pool.current_num_threads());
    let min_len = (MIN_TASK_BYTES / plain.first().map_or(1, |p| p.len().max(1))).max(1);
    let open = |buf: &mut Vec<u8>, p: u64| -> Result<()> {
        storage.read_with(Actor::Shuffle, read_region, p, &mut |slot| {
            read_key.open_slot_into(slot_nonce(p, read_ctx), slot, buf, read_region, p)
        })?;
        progress.add(w_read);
        Ok(())
    };
    pool.install(|| match lanes {
        Some(l) => {
            let mut work: Vec<Vec<(&mut Vec<u8>, u64)>> = (0..l).map(|_| Vec::with_capacity(2)).collect();
            for (k, (buf, &p)) in plain.iter_mut().zip(group).enumerate() {
                work[k % l].push((buf, p));
            }
            work.into_par_iter().try_for_each(|lane| lane.into_iter().try_for_each(|(buf, p)| open(buf, p)))
        }
        None => plain.par_iter_mut().zip(group.par_iter()).with_min_len(min_len).try_for_each(|(buf, &p)| open(buf, p)),
    })?;
    let plain = &*plain;
    for o in outs {
        // The slot at position j of the batch takes the block read from position source[j]:
        // slots are written in the batch's fixed order, whatever the route.
        for (k, &p) in group.iter().enumerate() {
            b.source[at(o.to[p as usize] as usize)] = k;
        }
        let source = &b.source[..n];
        let seal = |j: usize| -> Result<()> {
            let (slot, k) = (group[j], source[j]);
            debug_assert_eq!(o.to[group[k] as usize] as u64, slot);
            // the nonce names the destination slot, which the route fixes
            storage.write_with(Actor::Shuffle, o.region, slot, &mut |dst| {
                o.key.seal_slot_into(slot_nonce(slot, o.ctx), &plain[k], dst);
                Ok(())
            })?;
            progress.add(w_write);
            Ok(())
        };
        pool.install(|| match lanes {
            Some(l) => (0..l).into_par_iter().try_for_each(|lane| (lane..n).step_by(l).try_for_each(seal)),
            None => (0..n).into_par_iter().with_min_len(min_len).try_for_each(seal),
        })?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn run<K: SlotCipher>(
    storage: &dyn Storage,
    job: &ShuffleJob<K>,
    pool: &rayon::ThreadPool,
    progress: &Progress,
    abort: &AtomicBool,
    crash_at: Option<u64>,
    b: &mut Buffers,
    weights: &Weights,
) -> Result<[f64; 3]> {
    let mut secs = [0.0; 3];
    let (r, c) = (job.route.rows, job.route.cols);
    let block = storage.slot_size() - TAG_LEN;
    let per = groups_per_batch(r, c, block);
    b.fit(r.max(c) * per, block);
    let st = &job.route.stages;
    // stage 3 with the next shuffle's stage 1: the block bound for slot q of the new epoch
    // also goes to slot next.s1[q] of the work region
    let composed: Option<Vec<u32>> =
        job.next.as_ref().map(|n| st[2].iter().map(|&q| n.route.stages[0][q as usize]).collect());
    let mut group: Vec<u64> = Vec::with_capacity(r.max(c) * per);
    for stage in 0..3usize {
        let read = match (stage, &job.stage1_from) {
            (0, Some(src)) => (src.region, &*src.key, src.ctx),
            (0, None) => continue,
            _ => (job.work_region, &*job.keys[stage - 1], stage as u32),
        };
        let mut outs = vec![Out {
            region: if stage == 2 { job.dst_region } else { job.work_region },
            key: &*job.keys[stage],
            ctx: stage as u32 + 1,
            to: &st[stage],
        }];
        if let (2, Some(n), Some(comp)) = (stage, &job.next, &composed) {
            outs.push(Out { region: job.work_region, key: &*n.key, ctx: 1, to: comp });
        }
        let by_columns = stage == 1;
        let groups = if by_columns { c } else { r };
        let t0 = std::time::Instant::now();
        for g0 in (0..groups).step_by(per) {
            if abort.load(Ordering::SeqCst) {
                return Err(OramError::Io("shuffle aborted".into()));
            }
            if crash_at.is_some_and(|at| progress.get() >= at) {
                eprintln!("veil-oram: failpoint shuffle-stage2: aborting");
                std::process::abort();
            }
            let batch = g0..(g0 + per).min(groups);
            group.clear();
            // slot s of the grid is at row s / c, column s % c; a batch lists its groups in turn
            let at: &dyn Fn(usize) -> usize = if by_columns {
                group.extend(batch.flat_map(|gi| (0..r).map(move |k| (k * c + gi) as u64)));
                &|s| (s % c - g0) * r + s / c
            } else {
                group.extend(batch.flat_map(|gi| (0..c).map(move |k| (gi * c + k) as u64)));
                &|s| s - g0 * c
            };
            pass(storage, pool, progress, &group, at, read, &outs, b, weights.per_slot[stage])?;
        }
        secs[stage] = t0.elapsed().as_secs_f64();
    }
    storage.sync_region(job.dst_region)?;
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A paced request waits for its share of the work, and the shuffle's end releases it
    /// even if that share is never reached (a failed or aborted shuffle).
    #[test]
    fn wait_for_needs_progress_or_the_end() {
        let p = Arc::new(Progress::default());
        let stop = Arc::new(AtomicBool::new(false));
        p.add(10);
        p.wait_for(10, &stop);

        let (p2, s2) = (p.clone(), stop.clone());
        let worker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            p2.add(5);
            std::thread::sleep(Duration::from_millis(300));
            s2.store(true, Ordering::SeqCst);
            p2.wake();
        });
        let t1 = Instant::now();
        p.wait_for(15, &stop);
        assert!(t1.elapsed() >= Duration::from_millis(30));
        assert!(!stop.load(Ordering::SeqCst), "released by the shuffle's progress, not its end");
        // never reached: only the shuffle's end (stop + wake) lets this one go
        let t2 = Instant::now();
        p.wait_for(1000, &stop);
        assert!(t2.elapsed() >= Duration::from_millis(200));
        assert!(stop.load(Ordering::SeqCst));
        worker.join().unwrap();
    }
}
