//! PRO-ORAM: a read-only square-root ORAM whose shuffle runs beside the accesses.
//!
//! Layout: N real blocks and D >= sqrt(N) dummies in M = r x c slots, uniformly permuted and
//! sealed under the epoch's own key. An epoch serves T = ceil(sqrt(N)) requests. A request
//! reads exactly one slot: the requested block's slot if the block has not been read this
//! epoch, else the next unused dummy's slot; blocks read this epoch stay in the access
//! component's private cache (at most T blocks). Meanwhile the shuffle component builds the
//! next epochs' copies, up to `run_ahead` epochs ahead, in the other epoch regions; at the T-th
//! request the current epoch hands over atomically: the new region is synced, the sealed state
//! (epoch, region, key, position map) is replaced in one atomic metadata write, and the cache
//! is cleared.
//!
//! Pacing: replies follow a clock whose period is the recent shuffle time plus a margin over
//! T, and when the next epoch is not built yet, request k also waits until k/T of its shuffle
//! is done, so latency stays constant while each request carries its share of the shuffle.

use crate::clos;
use crate::crypto::{slot_nonce, BlockKey, TAG_LEN};
use crate::error::{OramError, Result};
use crate::clos::ClosRoute;
use crate::cacheshuffle::ShuffleKind;
use crate::shuffle::{self, NextStage1, Progress, ShuffleJob, Source, EPOCH_CTX};
use crate::storage::{Actor, Storage};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use state::{put_state, SealedState, STATE, STATE_VERSION};

// The shuffle side of the ORAM (starting an epoch's shuffle, handing over, running ahead).
mod clock;
mod epochs;
mod kepochs;
mod reply;
mod state;
mod times;
pub use times::ShuffleTimes;
mod stats;
pub use stats::ProOramStats;
use times::{MAX_STEP, PERIOD_QUANTILE};
#[cfg(test)]
use times::RECENT_SHUFFLES;
pub use clock::sleep_until;

/// Grid and epoch sizes for N blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub n_blocks: u64,
    pub rows: u64,
    pub cols: u64,
    /// Requests per epoch, also the bound on the private cache in blocks.
    pub epoch_len: u64,
}

impl Geometry {
    /// The paper's geometry: T = ceil(sqrt N) requests per epoch.
    pub fn new(n_blocks: u64) -> Result<Self> {
        Self::with_epoch_len(n_blocks, None)
    }

    /// T requests per epoch (None: ceil(sqrt N)). The shuffle's work per epoch hardly depends
    /// on T (M = N + D slots, D >= T), so its work per request falls as 1/T; the price is
    /// private memory, since the access component caches up to T blocks.
    pub fn with_epoch_len(n_blocks: u64, epoch_len: Option<u64>) -> Result<Self> {
        if n_blocks == 0 || n_blocks > (1 << 28) {
            return Err(OramError::Config(format!("n_blocks {n_blocks} must be in 1..=2^28")));
        }
        let t = epoch_len.unwrap_or_else(|| ceil_sqrt(n_blocks));
        if t == 0 || t > n_blocks {
            return Err(OramError::Config(format!("epoch_len {t} must be in 1..=n_blocks ({n_blocks})")));
        }
        let cols = ceil_sqrt(n_blocks + t);
        let rows = (n_blocks + t).div_ceil(cols);
        Ok(Self { n_blocks, rows, cols, epoch_len: t })
    }
    pub fn slots(&self) -> u64 {
        self.rows * self.cols
    }
    pub fn dummies(&self) -> u64 {
        self.slots() - self.n_blocks
    }
}

fn ceil_sqrt(n: u64) -> u64 {
    let mut s = (n as f64).sqrt() as u64;
    while s * s < n {
        s += 1;
    }
    while s > 0 && (s - 1) * (s - 1) >= n {
        s -= 1;
    }
    s
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProOramConfig {
    pub block_size: usize,
    /// Shuffle threads (0: one per core).
    pub threads: usize,
    /// Seed for keys and permutations; None draws them from the OS (the service's mode).
    pub seed: Option<u64>,
    /// Make each access wait for its share of the shuffle (constant latency).
    pub pace: bool,
    /// Headroom of the request clock over the recent shuffle time (0.15: 15%): the period
    /// follows (1 + margin) times the median of the last sixteen shuffles over T. More keeps
    /// latency flat through slower shuffles, at the price of a longer latency.
    #[serde(default = "default_pace_margin")]
    pub pace_margin: f64,
    /// Run the shuffle threads under SCHED_IDLE (flattest latency on a machine of its own; any
    /// busy process then starves the shuffle, and the clock slows every request with it).
    /// Off, they run at normal priority and keep their share of the cores beside other work.
    #[serde(default)]
    pub shuffle_idle: bool,
    /// Requests per epoch, i.e. blocks the access component may cache (None: the paper's
    /// ceil(sqrt N)); see `Geometry::with_epoch_len`. Only `create` reads it: an opened store
    /// keeps the geometry it was made with.
    #[serde(default)]
    pub epoch_len: Option<u64>,
    /// Which shuffle builds the next epochs (`cacheshuffle::SHUFFLES`): the Clos network, or
    /// the one-pass K-oblivious shuffle (which needs run_ahead >= 2: it reads an ended epoch's
    /// copy while the next one serves).
    #[serde(default)]
    pub shuffle: ShuffleKind,
}

pub const DEFAULT_PACE_MARGIN: f64 = 0.15;

fn default_pace_margin() -> f64 {
    DEFAULT_PACE_MARGIN
}

struct Epoch {
    number: u64,
    region: u32,
    ctx: u32,
    key: Arc<BlockKey>,
    pos: Vec<u32>,
}

struct Pending {
    /// The Clos shuffle's route for its successor's stage 1; None from the cache shuffle.
    handle: JoinHandle<Result<Option<Arc<ClosRoute>>>>,
    next: Epoch,
    /// permutation and stage-1 key of the shuffle after this one (the Clos shuffle's)
    plan: Option<(Vec<u32>, Arc<BlockKey>)>,
    /// A cache shuffle reading the first of the spent epochs (`Inner::spent`).
    from_spent: bool,
}

impl Pending {
    /// Joins the shuffle: the epoch it built and, from a Clos shuffle, the plan for the
    /// shuffle after it.
    fn finish(self) -> Result<(Epoch, Option<Plan>)> {
        let route = self.handle.join().map_err(|_| OramError::Io("shuffle thread panicked".into()))??;
        let plan = match (self.plan, route) {
            (Some((perm, k1)), Some(route)) => Some(Plan { perm, k1, route }),
            _ => None,
        };
        Ok((self.next, plan))
    }
}

/// An epoch that has served its T requests, kept (with the slots they read) as the cache
/// shuffle's source until it has been read.
struct Spent {
    epoch: Epoch,
    touched: Vec<u64>,
}

/// The next shuffle, already begun: its stage 1 sits in the work region.
struct Plan {
    perm: Vec<u32>,
    k1: Arc<BlockKey>,
    route: Arc<ClosRoute>,
}

/// Epochs the shuffle may have built ahead of the served one. The storage's layout fixes it:
/// of R = run_ahead + 2 regions, the first R - 1 rotate as the served epoch, the epochs built
/// ahead and the one being built (a shuffle starts only while one of them is free), and the
/// last is the shuffle's work area. Stores made before this was configurable have 4 regions,
/// i.e. run_ahead 2.
pub const DEFAULT_RUN_AHEAD: u32 = 3;
pub const MAX_RUN_AHEAD: u32 = 4;

struct Inner {
    epoch: Epoch,
    /// Blocks read this epoch: their index in `slab`; None marks a block whose slot failed
    /// authentication.
    cache: HashMap<u64, Option<usize>>,
    /// The cache's block buffers, kept across epochs: a request copies into one instead of
    /// allocating, and the hand-over does not free (and the next epoch fault in) T blocks.
    /// Every request takes one (a repeat's holds its dummy's plaintext), so an epoch uses T.
    slab: Vec<Vec<u8>>,
    slab_used: usize,
    /// The most blocks the cache has held at once, over all epochs: measured, not the bound T
    /// (an epoch that asks for one block twice caches one block fewer).
    peak_cached: u64,
    used: u64,
    dummies_used: u64,
    rng: StdRng,
    pending: Option<Pending>,
    /// Finished shuffles' epochs, oldest first, waiting for the served one to end.
    ready: std::collections::VecDeque<Epoch>,
    /// When the served epoch began: its requests are scheduled from here.
    epoch_t0: std::time::Instant,
    /// Time between requests this epoch, ns.
    period: u64,
    /// the plaintext of the slot read last
    slot: Vec<u8>,
    /// Block-sized buffers that make every outcome of a request do the same work (`read_into`):
    /// every reply passes through `stage` (`reply`), and `balance` takes the one zeroing pass a
    /// failed authentication makes inside AES-GCM.
    stage: Vec<u8>,
    balance: Vec<u8>,
    /// The copies the last reply made (`reply::copy_reply`), for the test that they are the
    /// same for every outcome.
    steps: reply::Steps,
    shuffles_started: u64,
    /// Hand-overs that had to wait for the shuffle (the epochs built ahead were used up).
    late_handovers: u64,
    /// Regions a shuffle of this process has written.
    written: Vec<bool>,
    plan: Option<Plan>,
    shuffle_total: u64,
    /// The served epoch's count of epochs ended by requests (`SealedState::work`).
    work: u64,
    /// Slots this epoch's requests asked storage for, in order, failed reads included (the
    /// cache shuffle's touched set; the shuffle sorts and dedups it).
    touched: Vec<u64>,
    /// Ended epochs the cache shuffle may still read, oldest first.
    spent: std::collections::VecDeque<Spent>,
    cache_shuffles: u64,
    /// Epochs between the latest cache shuffle's source and the epoch it built.
    cache_chain: u64,
}

pub struct ProOram {
    storage: Arc<dyn Storage>,
    geom: Geometry,
    /// Regions holding epochs (the work region is the one after them).
    epoch_regions: u32,
    cfg: ProOramConfig,
    master: Arc<BlockKey>,
    pool: Arc<rayon::ThreadPool>,
    progress: Arc<Progress>,
    shuffle_done: Arc<AtomicBool>,
    abort: Arc<AtomicBool>,
    shuffle_times: Arc<Mutex<ShuffleTimes>>,
    failpoint: Option<String>,
    buffers: Arc<Mutex<shuffle::Buffers>>,
    /// The buffers' size, for `stats` (which must not wait for a running shuffle).
    buffer_bytes: Arc<AtomicU64>,
    weights: Arc<Mutex<shuffle::Weights>>,
    /// Requests take turns on this lock for their whole run, waits included, so that they stay
    /// one at a time on the clock; the engine's state (`inner`) is never held across a wait,
    /// so stats, the epoch and a hand-over's bookkeeping never wait for a held reply.
    turn: Mutex<()>,
    /// The served epoch's number, readable without `inner` (the service reads it in async code).
    epoch_no: AtomicU64,
    /// The highest `work` count a state record durably holds (see `served_epochs`).
    durable_work: Arc<AtomicU64>,
    inner: Mutex<Inner>,
}

/// Crash-test hook: `VEIL_ORAM_FAILPOINT=<name>` aborts the process (no cleanup, as kill -9)
/// at that point: `handover-before-state`, `handover-after-state`, `shuffle-stage2`.
fn failpoint() -> Option<String> {
    std::env::var("VEIL_ORAM_FAILPOINT").ok().filter(|s| !s.is_empty())
}

fn crash_if(fp: &Option<String>, here: &str) {
    if fp.as_deref() == Some(here) {
        eprintln!("veil-oram: failpoint {here}: aborting");
        std::process::abort();
    }
}

/// The storage regions (slots in each) for N blocks with the shuffle up to `run_ahead` epochs
/// ahead of the served one.
pub fn region_slots(n_blocks: u64, run_ahead: u32) -> Result<Vec<u64>> {
    region_slots_for(&Geometry::new(n_blocks)?, run_ahead)
}

/// `region_slots` for any geometry (e.g. a longer epoch).
pub fn region_slots_for(g: &Geometry, run_ahead: u32) -> Result<Vec<u64>> {
    if !(1..=MAX_RUN_AHEAD).contains(&run_ahead) {
        return Err(OramError::Config(format!("run_ahead {run_ahead} must be in 1..={MAX_RUN_AHEAD}")));
    }
    Ok(vec![g.slots(); run_ahead as usize + 2])
}

fn rng_for(cfg: &ProOramConfig, salt: u64) -> StdRng {
    match cfg.seed {
        Some(s) => StdRng::seed_from_u64(veil_core::rng::splitmix64(s ^ salt)),
        None => {
            let mut seed = [0u8; 32];
            crate::crypto::os_random(&mut seed);
            StdRng::from_seed(seed)
        }
    }
}

impl ProOram {
    /// Writes a new store: block i's plaintext comes from `fill(i, buf)`. The initial copy is
    /// in plain order and is never served: opening always shuffles first.
    pub fn create(
        storage: Arc<dyn Storage>,
        master: BlockKey,
        n_blocks: u64,
        cfg: ProOramConfig,
        fill: &(dyn Fn(u64, &mut [u8]) + Sync),
    ) -> Result<Self> {
        let geom = Geometry::with_epoch_len(n_blocks, cfg.epoch_len)?;
        check_storage(&*storage, &geom, cfg.block_size)?;
        let mut rng = rng_for(&cfg, 0xC0FFEE);
        let key = BlockKey::random(&mut rng);
        let slot = storage.slot_size();
        let m = geom.slots();
        let write = |i: u64| -> Result<()> {
            let mut b = vec![0u8; slot];
            if i < n_blocks {
                fill(i, &mut b[..slot - crate::crypto::TAG_LEN]);
            }
            key.seal_slot(slot_nonce(i, 0), &mut b);
            storage.write(Actor::Init, 1, i, &b)
        };
        let pool = build_pool(cfg.threads, cfg.shuffle_idle)?;
        pool.install(|| {
            use rayon::prelude::*;
            (0..m).into_par_iter().try_for_each(write)
        })?;
        storage.sync()?;
        let state = SealedState {
            version: STATE_VERSION,
            geometry: geom,
            block_size: cfg.block_size,
            epoch: 0,
            region: 1,
            ctx: 0,
            key: key.raw(),
            pos: (0..m as u32).collect(),
            work: Some(0),
        };
        put_state(&*storage, &master, &state)?;
        Self::open(storage, master, cfg)
    }

    /// Opens a store. The epoch found in storage may have served requests before a crash
    /// (which slots were read is not recorded), so it is never served again: the next epoch
    /// is shuffled from it first, then served.
    pub fn open(storage: Arc<dyn Storage>, master: BlockKey, cfg: ProOramConfig) -> Result<Self> {
        let raw = storage
            .get_meta(STATE)?
            .ok_or_else(|| OramError::Corrupt("no PRO-ORAM state in storage".into()))?;
        if raw.len() < 12 {
            return Err(OramError::Corrupt("PRO-ORAM state truncated".into()));
        }
        let nonce: [u8; 12] = raw[..12].try_into().unwrap();
        let plain = master
            .open_vec(nonce, &raw[12..])
            .map_err(|_| OramError::Corrupt("PRO-ORAM state fails authentication (wrong key or modified)".into()))?;
        let st: SealedState = serde_json::from_slice(&plain)
            .map_err(|e| OramError::Corrupt(format!("PRO-ORAM state unreadable: {e}")))?;
        if st.version != STATE_VERSION {
            return Err(OramError::Corrupt(format!("PRO-ORAM state version {}", st.version)));
        }
        if st.block_size != cfg.block_size {
            return Err(OramError::Config(format!(
                "block_size {} does not match the store's {}",
                cfg.block_size, st.block_size
            )));
        }
        let geom = st.geometry;
        let regions = check_storage(&*storage, &geom, cfg.block_size)?;
        if cfg.shuffle == ShuffleKind::Cache && regions < 4 {
            return Err(OramError::Config("the cache shuffle needs run_ahead >= 2 (a store of 4 or more regions)".into()));
        }
        if st.pos.len() as u64 != geom.slots() {
            return Err(OramError::Corrupt("PRO-ORAM position map has the wrong length".into()));
        }
        let pool = Arc::new(build_pool(cfg.threads, cfg.shuffle_idle)?);
        let epoch = Epoch {
            number: st.epoch,
            region: st.region,
            ctx: st.ctx,
            key: Arc::new(BlockKey::from_bytes(st.key)),
            pos: st.pos,
        };
        let rng = rng_for(&cfg, 0x0BE1 ^ st.epoch.wrapping_mul(0x9E37_79B9));
        let work = st.work.unwrap_or(st.epoch);
        let slot = vec![0u8; storage.slot_size() - TAG_LEN];
        let block_size = cfg.block_size;
        let buffers = shuffle::Buffers::default();
        let this = Self {
            storage,
            geom,
            epoch_regions: regions - 1,
            cfg,
            master: Arc::new(master),
            pool,
            progress: Arc::new(Progress::default()),
            shuffle_done: Arc::new(AtomicBool::new(false)),
            abort: Arc::new(AtomicBool::new(false)),
            shuffle_times: Arc::default(),
            failpoint: failpoint(),
            buffer_bytes: buffers.gauge(),
            buffers: Arc::new(Mutex::new(buffers)),
            weights: Arc::new(Mutex::new(shuffle::Weights::default())),
            turn: Mutex::new(()),
            epoch_no: AtomicU64::new(st.epoch),
            durable_work: Arc::new(AtomicU64::new(work)),
            inner: Mutex::new(Inner {
                epoch,
                cache: HashMap::new(),
                slab: Vec::new(),
                slab_used: 0,
                peak_cached: 0,
                used: 0,
                dummies_used: 0,
                rng,
                pending: None,
                ready: Default::default(),
                epoch_t0: std::time::Instant::now(),
                period: 0,
                stage: vec![0u8; block_size],
                steps: Default::default(),
                balance: vec![0u8; block_size],
                slot,
                shuffles_started: 0,
                late_handovers: 0,
                written: vec![false; regions as usize],
                plan: None,
                shuffle_total: 1,
                work,
                touched: Vec::new(),
                spent: Default::default(),
                cache_shuffles: 0,
                cache_chain: 0,
            }),
        };
        {
            let mut g = this.inner.lock().unwrap();
            this.start_shuffle(&mut g);
            this.hand_over(&mut g, std::time::Instant::now(), false)?;
        }
        Ok(this)
    }

    pub fn geometry(&self) -> Geometry {
        self.geom
    }

    pub fn block_size(&self) -> usize {
        self.cfg.block_size
    }

    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Reads block `id` obliviously: exactly one slot of the current epoch is read.
    pub fn read(&self, id: u64) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.cfg.block_size];
        self.read_into(id, &mut out)?;
        Ok(out)
    }

    /// `read` into `out` (block-sized). Whatever the outcome (a first read, a repeat, a slot
    /// that fails authentication, a repeat of such a block) the request does the same work: one
    /// slot opened, one block-sized zeroing pass, one copy into a private buffer and one into
    /// `out` (zeros when the block failed), so its time cannot tell the outcomes apart even when
    /// the clock does not hide it (requests further apart than its period).
    pub fn read_into(&self, id: u64, out: &mut [u8]) -> Result<()> {
        let n = self.geom.n_blocks;
        if out.len() != self.cfg.block_size {
            return Err(OramError::Config(format!("output of {} bytes for {}-byte blocks", out.len(), self.cfg.block_size)));
        }
        if id >= n {
            return Err(OramError::UnknownBlock { id, n_blocks: n });
        }
        let t = self.geom.epoch_len;
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        let mut g = self.inner.lock().unwrap();
        if g.used >= t {
            // the last hand-over failed (a storage error): rebuild the next epoch now, waiting
            // for that shuffle without holding the engine's state
            if g.pending.is_none() && g.ready.is_empty() {
                self.start_shuffle(&mut g);
            }
            g = self.join_outside(g);
            self.hand_over(&mut g, std::time::Instant::now(), true)?;
        }
        self.run_ahead(&mut g);
        // Request k (0-based) of the epoch is due k+1 periods after the epoch began; the period
        // is the running estimate of a shuffle's time plus a margin, over T. The slot is read
        // at once and the reply held until it is due, so the request's own work (and how long
        // it took) does not show in its latency. While the next epoch is already built the
        // clock alone paces the requests. Otherwise a request is also held until (k+1)/T of the
        // shuffle building it is done, less a lag allowance that absorbs short stalls and
        // shrinks to nothing at the last request, which thus waits for the whole shuffle (the
        // hand-over joins it). None of this depends on which blocks are asked for.
        let due = g.epoch_t0 + std::time::Duration::from_nanos((g.used + 1) * g.period);
        let share = if g.ready.is_empty() {
            let total = g.shuffle_total;
            let target = ((g.used + 1) * total).div_ceil(t);
            let slack = if t > 1 { 2 * total / t * (t - 1 - g.used) / (t - 1) } else { 0 };
            Some(target.saturating_sub(slack))
        } else {
            None
        };
        let cached = g.cache.contains_key(&id);
        // The next dummy counts as used once storage has answered: a failed repeat retries its
        // slot as a first read does (and D failures no longer run the index past the store).
        let item = if cached { n + g.dummies_used } else { id };
        let inner = &mut *g;
        let p = inner.epoch.pos[item as usize] as u64;
        let region = inner.epoch.region;
        let (key, ctx, plain) = (&inner.epoch.key, inner.epoch.ctx, &mut inner.slot);
        let mut opened = Ok(());
        // Touched once asked for: a failed read has shown its slot too (`cacheshuffle`). Folded
        // at a public count, so retries through an outage keep it within distinct slots + 4T.
        inner.touched.push(p);
        if inner.touched.len() > 4 * t as usize + 64 {
            inner.touched.sort_unstable();
            inner.touched.dedup();
        }
        self.storage.read_with(Actor::Access, region, p, &mut |slot| {
            opened = key.open_slot_into(slot_nonce(p, ctx), slot, plain, region, p);
            Ok(())
        })?;
        inner.used += 1;
        inner.dummies_used += u64::from(cached);
        if opened.is_ok() {
            // AES-GCM zeroes its output on a mismatch: the same pass here when it did not
            std::hint::black_box(&mut inner.balance[..]).fill(0);
        }
        let tamper = OramError::Tamper { region, index: inner.epoch.pos[id as usize] as u64 };
        // Every request takes a fresh cache entry for the slot it opened (`reply`). A failed
        // slot was zeroed by AES-GCM, and a dummy's plaintext is zeros (`create`), so the fresh
        // entry is the zeros a failed reply carries.
        let fresh = inner.slab_used;
        inner.slab_used += 1;
        if inner.slab.len() <= fresh {
            inner.slab.push(vec![0u8; self.cfg.block_size]);
        }
        let (source, result) = if cached {
            match (opened.is_ok(), inner.cache[&id]) {
                (true, Some(k)) => (k, Ok(())),
                _ => (fresh, Err(tamper)),
            }
        } else {
            inner.cache.insert(id, opened.is_ok().then_some(fresh));
            inner.peak_cached = inner.peak_cached.max(inner.cache.len() as u64);
            (fresh, opened)
        };
        reply::copy_reply(&mut inner.slab, fresh, source, &inner.slot, &mut inner.stage, out, &mut inner.steps);
        let period = g.period;
        if g.used == t {
            // the new epoch's clock runs on from this request's due time; on failure the next
            // request retries the hand-over before it is served
            let start = if self.cfg.pace { due } else { std::time::Instant::now() };
            g = self.join_outside(g);
            let _ = self.hand_over(&mut g, start, true);
            drop(g);
        } else {
            drop(g);
            if let (true, Some(share)) = (self.cfg.pace, share) {
                // ends at the share or when the shuffle thread ends, whichever way it ends
                self.progress.wait_for(share, &self.shuffle_done);
            }
        }
        if self.cfg.pace {
            sleep_until(due, period);
        }
        result
    }

    /// When the hand-over must join the shuffle in flight (no epoch built ahead), waits for it
    /// to end with the engine's state released, and takes the state back.
    fn join_outside<'a>(&'a self, g: std::sync::MutexGuard<'a, Inner>) -> std::sync::MutexGuard<'a, Inner> {
        if g.ready.is_empty() && g.pending.as_ref().is_some_and(|p| !p.handle.is_finished()) {
            drop(g);
            self.progress.wait_for(u64::MAX, &self.shuffle_done);
            return self.inner.lock().unwrap();
        }
        g
    }

    /// Epochs the shuffle may have built ahead of the served one (from the storage's layout).
    pub fn run_ahead_limit(&self) -> u32 {
        self.epoch_regions - 1
    }

    /// Completed shuffles and their wall-clock times (route computation included).
    pub fn shuffle_times(&self) -> ShuffleTimes {
        self.shuffle_times.lock().unwrap().clone()
    }

    pub fn stats(&self) -> ProOramStats {
        let g = self.inner.lock().unwrap();
        ProOramStats {
            epoch: g.epoch.number,
            region: g.epoch.region,
            used_this_epoch: g.used,
            cached_blocks: g.cache.len() as u64,
            peak_cached_blocks: g.peak_cached,
            private_block_bytes: g.slab.iter().map(|b| b.len() as u64).sum::<u64>()
                + g.slot.len() as u64
                + self.buffer_bytes.load(Ordering::Relaxed),
            position_map_bytes: std::mem::size_of_val(g.epoch.pos.as_slice()) as u64,
            key_fingerprint: g.epoch.key.fingerprint(),
            geometry: self.geom,
            period_ms: g.period as f64 / 1e6,
            epochs_ready: g.ready.len() as u64,
            late_handovers: g.late_handovers,
            cache_shuffles: g.cache_shuffles,
            cache_chain: g.cache_chain,
        }
    }

    /// The number of the epoch being served (it only grows, across restarts too).
    pub fn epoch(&self) -> u64 {
        self.epoch_no.load(Ordering::SeqCst)
    }

    /// Epochs ended by requests, as far as storage durably records them: what a client checks
    /// for freshness. It never goes down, a restart does not advance it (only requests do), and
    /// a store rolled back to an older copy reports the older copy's count, even after any
    /// number of restarts.
    pub fn served_epochs(&self) -> u64 {
        self.durable_work.load(Ordering::SeqCst)
    }

    /// Test hook (the adversary does not know it): the slot that holds block `id` now.
    #[doc(hidden)]
    pub fn debug_slot_of(&self, id: u64) -> (u32, u64) {
        let g = self.inner.lock().unwrap();
        (g.epoch.region, g.epoch.pos[id as usize] as u64)
    }

    /// Whether the next request is already due: the request clock ran on while nobody asked
    /// (a pause, or a measurement waiting for the shuffle), so the next requests are answered
    /// at once until it has caught up.
    pub fn clock_behind(&self) -> bool {
        let g = self.inner.lock().unwrap();
        let due = g.epoch_t0 + std::time::Duration::from_nanos((g.used + 1) * g.period);
        self.cfg.pace && g.used < self.geom.epoch_len && due <= std::time::Instant::now()
    }

    /// Waits until the shuffle in flight has finished, so that a trace or a byte count taken
    /// afterwards holds whole shuffles, however far the scheduler let it run.
    pub fn wait_shuffle(&self) {
        while !self.shuffle_done.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Test hook: stop the background shuffle as a crash would, leaving storage as it is.
    #[doc(hidden)]
    pub fn debug_crash(self) {
        self.abort.store(true, Ordering::SeqCst);
    }
}

impl Drop for ProOram {
    fn drop(&mut self) {
        self.abort.store(true, Ordering::SeqCst);
        if let Ok(mut g) = self.inner.lock() {
            if let Some(p) = g.pending.take() {
                let _ = p.handle.join();
            }
        }
    }
}

/// With `shuffle_idle` the shuffle threads run under SCHED_IDLE, so that a request waking on
/// the schedule takes a core at once (the kernel preempts an idle-policy thread on every wake-up
/// of a normal one) instead of after a time slice: p99 at 1.003-1.007 of the period on a quiet
/// 2-core machine, against 1.10-1.16 at nice 10. The price, measured (docs/oram-measurements.md): any busy
/// normal-priority process takes the shuffle's cores and the clock slows every request with it
/// (421 -> 8.5-204 Mbps beside other engineers' builds). So it is opt-in; by default the
/// shuffle keeps its fair share. Linux keeps the policy per thread; elsewhere this does nothing.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a valid parameter block
    // only changes its scheduling policy.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
    }
}

fn build_pool(threads: usize, idle: bool) -> Result<rayon::ThreadPool> {
    let n = if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads };
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(move |i| if idle { format!("oram-shufidle-{i}") } else { format!("oram-shuffle-{i}") })
        .start_handler(move |_| {
            if idle {
                lower_priority()
            }
        })
        .build()
        .map_err(|e| OramError::Config(format!("thread pool: {e}")))
}

/// Checks the storage fits the store and returns how many regions of it the store uses:
/// all the leading regions big enough, at most `MAX_RUN_AHEAD + 2`.
fn check_storage(s: &dyn Storage, g: &Geometry, block_size: usize) -> Result<u32> {
    if block_size == 0 {
        return Err(OramError::Config("block_size must be positive".into()));
    }
    if s.slot_size() != block_size + crate::crypto::TAG_LEN {
        return Err(OramError::Config(format!(
            "storage slots of {} bytes do not fit blocks of {block_size} (need block_size + 16)",
            s.slot_size()
        )));
    }
    let regions = (0..MAX_RUN_AHEAD + 2).take_while(|&r| s.region_slots(r) >= g.slots()).count() as u32;
    if regions < 3 {
        return Err(OramError::Config(format!(
            "storage region {regions} has {} slots, need {} in each of at least 3 regions",
            s.region_slots(regions),
            g.slots()
        )));
    }
    Ok(regions)
}

#[cfg(test)]
mod tests;
