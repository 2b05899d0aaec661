//! The cache shuffle's side of the epoch pipeline (`ProOramConfig::shuffle` = cache): an epoch
//! that has served its T requests is kept, with the slots they read, as the source of a later
//! epoch's copy (`cacheshuffle`), read while the epoch after it serves.
//!
//! Sources are used once and oldest first, so the copies form chains that never meet: the copy
//! built from epoch e is served only after every epoch up to it, and nothing else is ever built
//! from e or from the copy built from it before that copy has ended in turn. The served epoch
//! is never a source (its touched set is not complete). Regions: the spent epochs, the served
//! one, the built ones and the one being built lie one after another in the rotation, so
//! `ready + spent + 2 <= regions` keeps the one being built off every other.

use super::*;
use super::epochs::{record_served, Ended};
use crate::cacheshuffle::{self, KJob};

impl ProOram {
    /// Whether run-ahead may start a shuffle now (none in flight): a region must be free, and in
    /// cache mode a Clos shuffle also leaves one for the epoch that ends next.
    pub(super) fn may_start(&self, g: &Inner) -> bool {
        let (ready, spent, r) = (g.ready.len() as u32, g.spent.len() as u32, self.epoch_regions);
        match self.cfg.shuffle {
            ShuffleKind::Clos => g.plan.is_some() && ready + 2 <= r,
            ShuffleKind::Cache if spent > 0 => ready + spent + 2 <= r,
            ShuffleKind::Cache => g.plan.is_some() && ready + 3 <= r,
        }
    }

    pub(super) fn keep_spent(&self, g: &mut Inner, s: Spent) {
        g.spent.push_back(s);
    }

    /// Drops the oldest spent epochs until the one to build has a region of its own (nothing is
    /// in flight when a shuffle starts, so none of them is being read).
    pub(super) fn trim_spent(&self, g: &mut Inner) {
        while !g.spent.is_empty() && g.ready.len() as u32 + g.spent.len() as u32 + 2 > self.epoch_regions {
            g.spent.pop_front();
        }
    }

    /// Joins a finished shuffle; a cache shuffle's source has then been read (or failed) and
    /// leaves the spent epochs either way.
    pub(super) fn finished(&self, g: &mut Inner, p: Pending) -> Result<(Epoch, Option<Plan>)> {
        if p.from_spent {
            g.spent.pop_front();
        }
        p.finish()
    }

    pub(super) fn start_cache_shuffle(&self, g: &mut Inner) {
        let m = self.geom.slots();
        let src = g.spent.front().expect("a spent epoch to read");
        let mut touched = src.touched.clone();
        touched.sort_unstable();
        touched.dedup();
        let dest = cacheshuffle::plan(m, &touched, &mut g.rng);
        let pos: Vec<u32> = src.epoch.pos.iter().map(|&p| dest[p as usize]).collect();
        let key = Arc::new(BlockKey::random(&mut g.rng));
        let (base, base_region) = g.ready.back().map_or((g.epoch.number, g.epoch.region), |r| (r.number, r.region));
        let next = Epoch { number: base + 1, region: (base_region + 1) % self.epoch_regions, ctx: EPOCH_CTX, key: key.clone(), pos };
        // Checked in release builds too (the tests run --release): writing into a source or the
        // served region would corrupt a copy, and stopping is better than serving from it.
        assert!(g.spent.iter().all(|s| s.epoch.region != next.region) && g.epoch.region != next.region,
                "cache shuffle: region {} is a source or the served copy", next.region);
        let job = KJob {
            src: (src.epoch.region, src.epoch.ctx, src.epoch.key.clone()),
            touched,
            dest,
            dst: (next.region, EPOCH_CTX, key),
        };
        let weights = *self.weights.lock().unwrap();
        g.shuffle_total = m * weights.cache;
        self.progress.reset();
        self.shuffle_done.store(false, Ordering::SeqCst);
        g.shuffles_started += 1;
        g.cache_shuffles += 1;
        g.cache_chain = next.number - src.epoch.number;
        let crash_at = (self.failpoint.as_deref() == Some("shuffle-stage2") && g.shuffles_started >= 2).then_some(g.shuffle_total / 2);
        let crash_after_state = self.failpoint.as_deref() == Some("handover-after-state") && g.shuffles_started >= 3;
        let state = self.served_state(g);
        let steady = g.written[next.region as usize];
        g.written[next.region as usize] = true;
        let (storage, master, pool) = (self.storage.clone(), self.master.clone(), self.pool.clone());
        let (progress, abort, times) = (self.progress.clone(), self.abort.clone(), self.shuffle_times.clone());
        let (durable, work, buffers, weights_out) = (self.durable_work.clone(), g.work, self.buffers.clone(), self.weights.clone());
        let ended = Ended { done: self.shuffle_done.clone(), progress: self.progress.clone() };
        let handle = std::thread::spawn(move || {
            // as the Clos shuffle's thread: done and waiters woken on every way out
            let _ended = ended;
            let t0 = std::time::Instant::now();
            record_served(&*storage, &master, &state, &durable, work, crash_after_state)?;
            let mut bufs = buffers.lock().unwrap_or_else(|e| e.into_inner());
            let bufs = &mut *bufs;
            let r = pool.install(|| cacheshuffle::run(&*storage, &job, &pool, &progress, &abort, crash_at, bufs, weights.cache));
            if r.is_ok() {
                let secs = t0.elapsed().as_secs_f64();
                times.lock().unwrap().record(secs, steady);
                weights_out.lock().unwrap().cache = ((secs * 1e9 / m as f64) as u64).max(1);
            }
            r.map(|_| None)
        });
        g.pending = Some(Pending { handle, next, plan: None, from_spent: true });
    }
}
