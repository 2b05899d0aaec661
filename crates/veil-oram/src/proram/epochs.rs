//! The shuffle side of PRO-ORAM: starting the next epoch's shuffle, handing an epoch over at its
//! T-th request, and keeping the shuffle up to `run_ahead` epochs ahead (see the parent module).

use super::*;
use crate::cacheshuffle::ShuffleKind;

impl ProOram {
    pub(super) fn start_shuffle(&self, g: &mut Inner) {
        if self.cfg.shuffle == ShuffleKind::Cache {
            self.trim_spent(g);
            if !g.spent.is_empty() {
                return self.start_cache_shuffle(g);
            }
        }
        let m = self.geom.slots() as usize;
        let (rows, cols) = (self.geom.rows as usize, self.geom.cols as usize);
        // With a plan, the work region already holds this shuffle's stage 1 (written by the
        // previous shuffle's last stage); without one (after open or a failure) run all three.
        let (perm, k1, ready, stage1_from) = match g.plan.take() {
            Some(p) => (p.perm, p.k1, Some(p.route), None),
            None => {
                let mut perm: Vec<u32> = (0..m as u32).collect();
                perm.shuffle(&mut g.rng);
                let k1 = Arc::new(BlockKey::random(&mut g.rng));
                let src = Source { region: g.epoch.region, ctx: g.epoch.ctx, key: g.epoch.key.clone() };
                (perm, k1, None, Some(src))
            }
        };
        let k2 = Arc::new(BlockKey::random(&mut g.rng));
        let k3 = Arc::new(BlockKey::random(&mut g.rng));
        let dest: Vec<u32> = if ready.is_none() {
            let mut d = vec![0u32; m];
            for (item, &slot) in g.epoch.pos.iter().enumerate() {
                d[slot as usize] = perm[item];
            }
            d
        } else {
            Vec::new()
        };
        // the plan for the shuffle after this one: its permutation relative to this one's output
        let mut perm2: Vec<u32> = (0..m as u32).collect();
        perm2.shuffle(&mut g.rng);
        let k1n = Arc::new(BlockKey::random(&mut g.rng));
        let mut dest2 = vec![0u32; m];
        for (item, &slot) in perm.iter().enumerate() {
            dest2[slot as usize] = perm2[item];
        }
        // The new epoch follows the last one built if there is one, else the served one, and
        // takes the region after its predecessor's: the epoch regions rotate whatever the
        // timing, and the served and built epochs are never overwritten (`run_ahead` starts a
        // shuffle only while a region is free).
        let (base, base_region) = g.ready.back().map_or((g.epoch.number, g.epoch.region), |r| (r.number, r.region));
        let next = Epoch { number: base + 1, region: (base_region + 1) % self.epoch_regions, ctx: EPOCH_CTX, key: k3.clone(), pos: perm };
        let weights = *self.weights.lock().unwrap();
        g.shuffle_total = shuffle::total_ops(m as u64, stage1_from.is_some(), &weights);
        let weights_out = self.weights.clone();
        let dst_region = next.region;
        let storage = self.storage.clone();
        let pool = self.pool.clone();
        let progress = self.progress.clone();
        let done = self.shuffle_done.clone();
        let abort = self.abort.clone();
        let times = self.shuffle_times.clone();
        self.progress.reset();
        done.store(false, Ordering::SeqCst);
        g.shuffles_started += 1;
        // not the recovery shuffle run by `open`: crash while an epoch is being served
        let crash_at = if self.failpoint.as_deref() == Some("shuffle-stage2") && g.shuffles_started >= 2 {
            Some(g.shuffle_total / 2)
        } else {
            None
        };
        let crash_after_state = self.failpoint.as_deref() == Some("handover-after-state") && g.shuffles_started >= 3;
        let state = self.served_state(g);
        let (durable, work) = (self.durable_work.clone(), g.work);
        let master = self.master.clone();
        let k1n_job = k1n.clone();
        let buffers = self.buffers.clone();
        // Only a shuffle that neither ran stage 1 nor wrote a region for the first time in
        // this process says how long the next ones will take: first writes fault in fresh
        // memory (or extend files) and run several times slower.
        let steady = stage1_from.is_none() && g.written[dst_region as usize];
        g.written[dst_region as usize] = true;
        let work_region = self.work_region();
        g.written[work_region as usize] = true;
        let handle = std::thread::spawn(move || {
            // Whatever way this thread ends (an error at any storage call, a panic), the
            // shuffle is marked done and every waiting request woken: a request waits for its
            // share only until then, and the hand-over then finds the failure when it joins.
            let _ended = Ended { done: done.clone(), progress: progress.clone() };
            let t0 = std::time::Instant::now();
            record_served(&*storage, &master, &state, &durable, work, crash_after_state)?;
            let route = match ready {
                Some(r) => r,
                None => Arc::new(clos::route(rows, cols, &dest)),
            };
            let route2 = Arc::new(clos::route(rows, cols, &dest2));
            // the set-up counts as the share of work the last shuffle's set-up took
            progress.add(weights.overhead);
            let job = ShuffleJob {
                stage1_from,
                work_region,
                dst_region,
                keys: [k1, k2, k3],
                route,
                next: Some(NextStage1 { key: k1n_job, route: route2.clone() }),
            };
            // on one of the pool's own threads, so that each group's parallel loops start
            // without handing the work over to another thread and waking it (at 4 KB a group's
            // loop is ~15 us, shorter than a wake-up)
            let mut bufs = buffers.lock().unwrap_or_else(|e| e.into_inner());
            let bufs = &mut *bufs;
            let r = pool.install(|| shuffle::run(&*storage, &job, &pool, &progress, &abort, crash_at, bufs, &weights));
            if let Ok(stage_secs) = &r {
                times.lock().unwrap().record(t0.elapsed().as_secs_f64(), steady);
                // calibrate the next shuffle's progress weights on this one's stage times
                let mut w = weights_out.lock().unwrap();
                for (k, &t) in stage_secs.iter().enumerate() {
                    if t > 0.0 {
                        w.per_slot[k] = ((t * 1e9 / m as f64) as u64).max(1);
                    }
                }
                let staged: f64 = stage_secs.iter().sum();
                w.overhead = ((t0.elapsed().as_secs_f64() - staged).max(0.0) * 1e9) as u64;
            }
            r.map(|_| Some(route2))
        });
        g.pending = Some(Pending { handle, next, plan: Some((perm2, k1n)), from_spent: false });
    }

    /// Epoch switch. The new copy is already durable (the shuffle synced it); the next
    /// shuffle's first act is one atomic metadata write naming the served epoch, and only then
    /// does it overwrite a region that is neither served nor ready. A crash before that write
    /// restarts from an older epoch (its region untouched), after it from the newer one; the
    /// fsyncs stay off the request path.
    /// `due`: when the epoch ending now was due to end; the next one's clock starts there, or
    /// when its copy is ready if that is later.
    /// `by_request`: the epoch ends at its T-th request (it counts as work), not on `open`.
    pub(super) fn hand_over(&self, g: &mut Inner, due: std::time::Instant, by_request: bool) -> Result<()> {
        let was_ready = !g.ready.is_empty();
        // (not the one `open` makes: there is nothing to be ahead of yet)
        if !was_ready && g.shuffles_started > 1 {
            g.late_handovers += 1;
        }
        let next = match g.ready.pop_front() {
            Some(epoch) => epoch,
            None => {
                let p = g.pending.take().ok_or_else(|| OramError::Io("no shuffle under way".into()))?;
                let (epoch, plan) = self.finished(g, p)?;
                if plan.is_some() {
                    g.plan = plan;
                }
                epoch
            }
        };
        g.epoch_t0 = due.max(std::time::Instant::now());
        // only hand-overs after the first (recovery) one count as crash points
        let armed = g.epoch.number > 0 && g.used > 0;
        if armed {
            crash_if(&self.failpoint, "handover-before-state");
        }
        self.epoch_no.store(next.number, Ordering::SeqCst);
        g.work += u64::from(by_request);
        let ended = std::mem::replace(&mut g.epoch, next);
        let touched = std::mem::take(&mut g.touched);
        // only an epoch that served all its requests here has a known touched set
        if by_request && self.cfg.shuffle == ShuffleKind::Cache && g.used == self.geom.epoch_len {
            self.keep_spent(g, Spent { epoch: ended, touched });
        }
        g.cache.clear();
        g.slab_used = 0;
        g.used = 0;
        g.dummies_used = 0;
        // The period follows the median of the recent steady-state shuffles (see `steady` in
        // `start_shuffle`): on a machine whose speed wanders, the last shuffle or two is a poor
        // guide, and every change of the period is itself a change in latency.
        let w = *self.weights.lock().unwrap();
        let (estimate, samples) = {
            let times = self.shuffle_times.lock().unwrap();
            match times.recent_quantile(PERIOD_QUANTILE) {
                Some(secs) => (secs * 1e9, times.recent_steady.len()),
                None => (shuffle::total_ops(self.geom.slots(), true, &w) as f64, 0),
            }
        };
        // The period changes in steps, so that latency stays flat between them: up at once
        // by MAX_STEP when the shuffle fell behind (this hand-over had to wait for it), otherwise only
        // when it has drifted (a tenth up, 15% down), and then by at most MAX_STEP, since a
        // step is the latency's p99 over p50 for whoever measures across it; in between, the
        // epochs built ahead absorb the shuffle's ups and downs. Until a few steady shuffles
        // have been timed the estimate is a first guess (the shuffles after create or open
        // touch fresh memory and run several times slower), and the period just follows it.
        let want = (estimate * (1.0 + self.cfg.pace_margin.max(0.0)) / self.geom.epoch_len as f64) as u64;
        // bounded: unpaced, every hand-over is late and each would add a step for ever (after
        // ~550 epochs the due times overflowed)
        g.period = next_period(g.period, want, samples, was_ready).min(MAX_PERIOD_NS);
        self.run_ahead(g);
        if g.pending.is_none() && g.ready.is_empty() {
            self.start_shuffle(g);
        }
        Ok(())
    }

    /// Keeps the shuffle ahead: a finished shuffle's epoch joins the built ones, and while an
    /// epoch region is free the next shuffle starts at once instead of at the epoch's end, so
    /// a slow shuffle spends time fast ones saved. A failed shuffle is dropped; the hand-over
    /// then rebuilds from the served epoch.
    pub(super) fn run_ahead(&self, g: &mut Inner) {
        if g.pending.as_ref().is_some_and(|p| p.handle.is_finished()) {
            let p = g.pending.take().unwrap();
            let clos = !p.from_spent;
            match self.finished(g, p) {
                Ok((epoch, plan)) => {
                    if plan.is_some() {
                        g.plan = plan;
                    }
                    g.ready.push_back(epoch);
                }
                // a failed cache shuffle wrote only its own region: the plan still holds
                Err(_) if clos => g.plan = None,
                Err(_) => {}
            }
        }
        if g.pending.is_none() && self.may_start(g) {
            self.start_shuffle(g);
        }
    }

    /// The state record naming the served epoch, which a shuffle writes before it writes any
    /// slot (see `hand_over`).
    pub(super) fn served_state(&self, g: &Inner) -> SealedState {
        SealedState {
            version: STATE_VERSION,
            geometry: self.geom,
            block_size: self.cfg.block_size,
            epoch: g.epoch.number,
            region: g.epoch.region,
            ctx: g.epoch.ctx,
            key: g.epoch.key.raw(),
            pos: g.epoch.pos.clone(),
            work: Some(g.work),
        }
    }

    pub(super) fn work_region(&self) -> u32 {
        self.epoch_regions
    }
}

/// A shuffle's first act: the state record naming the served epoch (and the freshness count it
/// makes durable), before any slot is written; the `handover-after-state` failpoint stops here.
pub(super) fn record_served(
    storage: &dyn Storage,
    master: &BlockKey,
    state: &SealedState,
    durable: &AtomicU64,
    work: u64,
    crash_after_state: bool,
) -> Result<()> {
    put_state(storage, master, state)?;
    durable.fetch_max(work, Ordering::SeqCst);
    if crash_after_state {
        eprintln!("veil-oram: failpoint handover-after-state: aborting");
        std::process::abort();
    }
    Ok(())
}

/// Marks the shuffle done and wakes its waiters when dropped, i.e. on every way out of the
/// shuffle thread, early returns and unwinding included.
pub(super) struct Ended {
    pub(super) done: Arc<AtomicBool>,
    pub(super) progress: Arc<Progress>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        self.progress.wake();
    }
}

/// The longest request period, ns (a minute).
const MAX_PERIOD_NS: u64 = 60_000_000_000;

/// The request clock's next period (ns) from the current one `p`, the estimate `want`, how
/// many steady shuffles the estimate rests on, and whether this hand-over found the next
/// epoch built (see `hand_over`).
pub(super) fn next_period(p: u64, want: u64, samples: usize, was_ready: bool) -> u64 {
    let pf = p as f64;
    if samples < 3 {
        want
    } else if !was_ready {
        // Behind, with the epochs built ahead used up. Not as slow as the shuffle just waited
        // for: one slow shuffle among normal ones is the common case on a shared machine, and
        // a period set by it (2x, once) stays high for epochs. One step, as for a drift: a
        // larger one is a p99/p50 above 1.1 for every window that spans it; a lasting slowdown
        // takes a few steps.
        (pf * (1.0 + MAX_STEP)) as u64
    } else if (want as f64) > pf * 1.1 || (want as f64) < pf * 0.85 {
        want.clamp((pf * (1.0 - MAX_STEP)) as u64, (pf * (1.0 + MAX_STEP)) as u64)
    } else {
        p
    }
}
