//! One measured run of an engine: the numbers behind Fig. 5 / Fig. 6 and the benchmark.
//! Latency per request is timed on the serving thread with the shuffle running beside it,
//! so server time includes each request's paced share of the shuffle.

use crate::crypto::{slot_nonce, BlockKey, CRYPTO_NS, TAG_LEN};
use crate::data::{check_block, synthetic_block};
use crate::error::{OramError, Result};
use crate::pathoram::{self, PathOram};
use crate::plain::PlainStore;
use crate::proram::{self, ProOram, ProOramConfig};
use crate::storage::{AccessLog, FileStorage, MemoryStorage, Storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

fn d_true() -> bool {
    true
}
fn d_margin() -> f64 {
    proram::DEFAULT_PACE_MARGIN
}
fn d_shuffle() -> String {
    "clos".into()
}

fn d_run_ahead() -> u32 {
    proram::DEFAULT_RUN_AHEAD
}
fn d_link() -> f64 {
    7.0
}
fn d_pattern() -> String {
    "uniform".into()
}
fn d_backend() -> String {
    "memory".into()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// "proram", "pathoram" or "plain"
    pub engine: String,
    pub n_blocks: u64,
    pub block_size: usize,
    /// Timed requests; 0 picks 4 PRO-ORAM epochs (at least 64 requests).
    #[serde(default)]
    pub accesses: u64,
    /// Shuffle threads; 0 is one per core.
    #[serde(default)]
    pub threads: usize,
    #[serde(default)]
    pub seed: u64,
    /// "uniform", "repeat" (one block again and again) or "sequential"
    #[serde(default = "d_pattern")]
    pub pattern: String,
    /// "memory", "file" (then `dir` is required) or "redis" (then `redis` is host:port)
    #[serde(default = "d_backend")]
    pub backend: String,
    #[serde(default)]
    pub dir: Option<String>,
    #[serde(default)]
    pub redis: Option<String>,
    #[serde(default = "d_true")]
    pub pace: bool,
    /// Headroom of the request clock over the recent shuffle time (see `ProOramConfig`).
    #[serde(default = "d_margin")]
    pub pace_margin: f64,
    /// PRO-ORAM: shuffle threads under SCHED_IDLE (see `ProOramConfig::shuffle_idle`).
    #[serde(default)]
    pub shuffle_idle: bool,
    /// PRO-ORAM: epochs the shuffle may have built ahead (storage holds run_ahead + 2 copies).
    #[serde(default = "d_run_ahead")]
    pub run_ahead: u32,
    /// PRO-ORAM: requests per epoch, the private cache's size in blocks (None: ceil(sqrt N));
    /// see `Geometry::with_epoch_len`.
    #[serde(default)]
    pub epoch_len: Option<u64>,
    /// PRO-ORAM: the shuffle by name (`cacheshuffle::SHUFFLES`): "clos" or "cache".
    #[serde(default = "d_shuffle")]
    pub shuffle: String,
    /// Link bandwidth for the network share of latency, Mbit/s.
    #[serde(default = "d_link")]
    pub link_mbps: f64,
    /// Check every reply against the synthetic contents.
    #[serde(default = "d_true")]
    pub verify: bool,
    /// Untimed requests before timing starts (PRO-ORAM: lets the first shuffle get going).
    #[serde(default)]
    pub warmup: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResult {
    pub engine: String,
    pub n_blocks: u64,
    pub block_size: usize,
    pub accesses: u64,
    pub setup_s: f64,
    pub server_ms: f64,
    pub server_p50_ms: f64,
    pub server_p99_ms: f64,
    pub server_max_ms: f64,
    pub p99_over_p50: f64,
    /// Mean server time per request (ms) in each whole window of the timed requests: one epoch
    /// for PRO-ORAM, 8 requests otherwise; wall clock, so the client's work in `verify` runs is in it.
    pub server_ms_windows: Vec<f64>,
    pub client_ms: f64,
    pub network_ms: f64,
    pub total_ms: f64,
    /// Served bits per second of server time.
    pub throughput_mbps: f64,
    /// Storage bytes read + written per request (shuffle included).
    pub bytes_per_access: f64,
    /// Shuffle wall time per epoch divided by the epoch's requests.
    pub shuffle_ms_per_access: f64,
    /// Core-milliseconds per request, all threads: AES-GCM, storage calls (copies / I/O).
    pub crypto_core_ms: f64,
    pub storage_core_ms: f64,
    /// Process CPU time (all threads, user + system) per request during the timed phase: what
    /// the request costs in cores, unlike wall time also when other jobs share the machine.
    pub cpu_ms_per_access: f64,
    /// PRO-ORAM: the most blocks its private cache held at once (measured; at most T).
    pub private_cache_blocks: u64,
    /// PRO-ORAM: peak private memory in block buffers (cache, open slot, shuffle group) and the
    /// position map, bytes.
    pub private_block_bytes: u64,
    pub position_map_bytes: u64,
    /// PRO-ORAM's request clock over the timed requests: its shortest and longest period, ms,
    /// and the hand-overs that had to wait for the shuffle. A period that moved, or a late
    /// hand-over, is where a p99 above p50 comes from.
    pub period_min_ms: f64,
    pub period_max_ms: f64,
    pub late_handovers: u64,
    /// PRO-ORAM: requests answered between the warm-up and the timed window while the request
    /// clock caught up with the wait for the shuffle (answered at once, so not timed; they are
    /// in the byte and crypto counts).
    pub caught_up: u64,
    /// PRO-ORAM: how much slower than the shuffle the request clock runs (the config's).
    pub pace_margin: f64,
    pub epoch_len: u64,
    pub epochs: u64,
    /// PRO-ORAM: cache (K-oblivious) shuffles started since the store was made, warm-up
    /// included (0 with the Clos shuffle).
    pub cache_shuffles: u64,
    pub threads: usize,
    pub errors: u64,
}

#[allow(clippy::large_enum_variant)] // one engine per run
enum Engine {
    Pro(ProOram),
    Path(PathOram),
    Plain(PlainStore),
}

fn make_storage(cfg: &RunConfig, slot: usize, regions: &[u64]) -> Result<Arc<dyn Storage>> {
    match cfg.backend.as_str() {
        "memory" => Ok(Arc::new(MemoryStorage::new(slot, regions))),
        "file" => {
            let dir = cfg.dir.as_ref().ok_or_else(|| OramError::Config("backend 'file' needs dir".into()))?;
            Ok(Arc::new(FileStorage::create(std::path::Path::new(dir), slot, regions)?))
        }
        "redis" => {
            let addr = cfg.redis.as_ref().ok_or_else(|| OramError::Config("backend 'redis' needs redis (host:port)".into()))?;
            let prefix = format!("veil-oram-{}-{}", cfg.engine, cfg.seed);
            Ok(Arc::new(crate::redis::RedisStorage::connect(addr, &prefix, slot, regions)?))
        }
        b => Err(OramError::Config(format!("unknown backend '{b}' (memory, file, redis)"))),
    }
}

/// A measured run returns `OramError::Interrupted` at its next request once the bindings asked
/// every long call to stop (Ctrl-C; `veil_core::interrupt`).
fn check_interrupt() -> Result<()> {
    veil_core::interrupt::check().map_err(|_| OramError::Interrupted)
}

pub fn run(cfg: &RunConfig) -> Result<RunResult> {
    if cfg.n_blocks == 0 || cfg.block_size == 0 {
        return Err(OramError::Config("n_blocks and block_size must be positive".into()));
    }
    if cfg.block_size > (64 << 20) {
        return Err(OramError::Config(format!("block_size {} above 64 MiB", cfg.block_size)));
    }
    let threads = if cfg.threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { cfg.threads };
    let t0 = Instant::now();
    let geom = proram::Geometry::with_epoch_len(cfg.n_blocks, cfg.epoch_len)?;
    let mut rng = StdRng::seed_from_u64(cfg.seed ^ 0x5EED);
    let (mut engine, storage) = build(cfg, &geom, threads, &mut rng)?;
    let setup_s = t0.elapsed().as_secs_f64();
    let accesses = if cfg.accesses == 0 { (4 * geom.epoch_len).max(64) } else { cfg.accesses };
    let mut client = Client::new(cfg, &mut rng);
    let (before, caught_up) = warm_up(cfg, &mut engine, &mut client, &mut rng, storage.log())?;
    // session nonces of the timed requests: after every request before them
    let timed = timed(cfg, &mut engine, &mut client, &mut rng, accesses, cfg.warmup + caught_up)?;
    if let Engine::Pro(e) = &engine {
        e.wait_shuffle();
    }
    let after = Counters::read(&engine, storage.log());
    Ok(results(cfg, &engine, threads, setup_s, accesses, caught_up, &before, &after, timed))
}

/// The engine under test on its storage, filled with the synthetic contents of `cfg.seed`.
fn build(cfg: &RunConfig, geom: &proram::Geometry, threads: usize, rng: &mut StdRng) -> Result<(Engine, Arc<dyn Storage>)> {
    let seed = cfg.seed;
    let fill = move |i: u64, b: &mut [u8]| synthetic_block(seed, i, b);
    Ok(match cfg.engine.as_str() {
        "proram" => {
            let st = make_storage(cfg, cfg.block_size + TAG_LEN, &proram::region_slots_for(geom, cfg.run_ahead)?)?;
            let pc = ProOramConfig { block_size: cfg.block_size, threads, seed: Some(seed), pace: cfg.pace, pace_margin: cfg.pace_margin, shuffle_idle: cfg.shuffle_idle, epoch_len: cfg.epoch_len, shuffle: crate::cacheshuffle::ShuffleKind::from_name(&cfg.shuffle)? };
            let master = BlockKey::random(rng);
            (Engine::Pro(ProOram::create(st.clone(), master, cfg.n_blocks, pc, &fill)?), st)
        }
        "pathoram" => {
            let st = make_storage(cfg, pathoram::slot_size(cfg.block_size, 4), &[pathoram::buckets_for(cfg.n_blocks)])?;
            (Engine::Path(PathOram::create(st.clone(), cfg.n_blocks, cfg.block_size, 4, seed, &fill)?), st)
        }
        "plain" => {
            let st = make_storage(cfg, cfg.block_size + TAG_LEN, &[cfg.n_blocks])?;
            let key = BlockKey::random(rng);
            (Engine::Plain(PlainStore::create(st.clone(), cfg.n_blocks, cfg.block_size, key, &fill)?), st)
        }
        e => return Err(OramError::Config(format!("unknown engine '{e}' (proram, pathoram, plain)"))),
    })
}

/// The client: which block it asks for next, and its reply buffer, re-sealed under its session
/// key as the service does.
struct Client {
    session: BlockKey,
    reply: Vec<u8>,
    pattern: String,
    n: u64,
    asked: u64,
}

impl Client {
    fn new(cfg: &RunConfig, rng: &mut StdRng) -> Client {
        let session = BlockKey::random(rng);
        Client { session, reply: vec![0u8; cfg.block_size + TAG_LEN], pattern: cfg.pattern.clone(), n: cfg.n_blocks, asked: 0 }
    }

    fn next_id(&mut self, rng: &mut StdRng) -> Result<u64> {
        self.asked += 1;
        match self.pattern.as_str() {
            "uniform" => Ok(rng.gen_range(0..self.n)),
            "repeat" => Ok(0),
            "sequential" => Ok((self.asked - 1) % self.n),
            p => Err(OramError::Config(format!("unknown pattern '{p}' (uniform, repeat, sequential)"))),
        }
    }

    /// Request `id` as the `k`-th request (its session nonce); the sealed reply in `self.reply`.
    fn serve(&mut self, engine: &mut Engine, id: u64, k: u64) -> Result<()> {
        let data = match engine {
            Engine::Pro(e) => e.read(id),
            Engine::Path(e) => e.read(id),
            Engine::Plain(e) => e.read(id),
        }?;
        self.reply[..data.len()].copy_from_slice(&data);
        self.session.seal_slot(slot_nonce(k, 7), &mut self.reply);
        Ok(())
    }
}

/// The byte, crypto and I/O counters and the shuffles done: read before and after the timed
/// requests, at shuffle boundaries.
#[derive(Default)]
struct Counters {
    bytes_read: u64,
    bytes_written: u64,
    crypto_ns: u64,
    io_ns: u64,
    shuffles: proram::ShuffleTimes,
}

impl Counters {
    fn read(engine: &Engine, log: &AccessLog) -> Counters {
        Counters {
            bytes_read: log.bytes_read.load(Ordering::Relaxed),
            bytes_written: log.bytes_written.load(Ordering::Relaxed),
            crypto_ns: CRYPTO_NS.load(Ordering::Relaxed),
            io_ns: log.io_ns.load(Ordering::Relaxed),
            shuffles: match engine {
                Engine::Pro(e) => e.shuffle_times(),
                _ => Default::default(),
            },
        }
    }
}

/// The untimed requests before the window, then the counters at a shuffle boundary and the
/// requests answered while the request clock caught up.
fn warm_up(cfg: &RunConfig, engine: &mut Engine, client: &mut Client, rng: &mut StdRng, log: &AccessLog) -> Result<(Counters, u64)> {
    for k in 0..cfg.warmup {
        check_interrupt()?;
        let id = client.next_id(rng)?;
        client.serve(engine, id, k)?;
    }
    // Counts start and end at shuffle boundaries: the shuffle runs up to an epoch ahead, so a
    // window of requests would otherwise hold part of one more shuffle or one less.
    if let Engine::Pro(e) = &*engine {
        e.wait_shuffle();
    }
    let before = Counters::read(engine, log);
    // The clock ran on while the shuffle was waited for: the requests now due would be answered
    // at once, for work done before the window. They count in the bytes (which need whole
    // shuffles) but not in the timed window, which starts once the clock has caught up.
    let mut caught_up = 0u64;
    let catch_up_limit = match &*engine {
        Engine::Pro(e) => 4 * e.geometry().epoch_len,
        _ => 0,
    };
    while caught_up < catch_up_limit && matches!(&*engine, Engine::Pro(e) if e.clock_behind()) {
        check_interrupt()?;
        let id = client.next_id(rng)?;
        client.serve(engine, id, cfg.warmup + caught_up)?;
        caught_up += 1;
    }
    Ok((before, caught_up))
}

/// What the timed requests measured.
struct Timed {
    /// Server time of each request, ms.
    lat: Vec<f64>,
    windows: Vec<f64>,
    wall_s: f64,
    client_s: f64,
    cpu_s: f64,
    errors: u64,
    period_min: f64,
    period_max: f64,
    late_handovers: u64,
}

/// PRO-ORAM's request clock: its period (ms) and the late hand-overs so far.
fn clock(engine: &Engine) -> (f64, u64) {
    match engine {
        Engine::Pro(e) => {
            let s = e.stats();
            (s.period_ms, s.late_handovers)
        }
        _ => (0.0, 0),
    }
}

/// `accesses` timed requests, the first with session nonce `k0`.
fn timed(cfg: &RunConfig, engine: &mut Engine, client: &mut Client, rng: &mut StdRng, accesses: u64, k0: u64) -> Result<Timed> {
    let cpu0 = process_cpu_s();
    let mut lat = Vec::with_capacity(accesses as usize);
    let (period0, late0) = clock(engine);
    let (mut period_min, mut period_max) = (period0, period0);
    let (mut client_s, mut errors) = (0.0, 0u64);
    // Server time per request in consecutive windows (PRO-ORAM: one epoch each, else 8
    // requests): repeats of the measurement inside one run, for a spread without another run.
    // The windows and the whole loop are read off the same clock marks, one at the end of each
    // iteration, so the windows tile the loop: time between a request's reply and the next
    // request (the client's check, a preemption there) counts in a window as it does in the loop.
    let window = match &*engine {
        Engine::Pro(e) => e.geometry().epoch_len.max(1),
        _ => 8,
    };
    let mut windows = Vec::new();
    let wall = Instant::now();
    let (mut window_t0, mut end) = (wall, wall);
    for k in 0..accesses {
        check_interrupt()?;
        let id = client.next_id(rng)?;
        let t = Instant::now();
        match client.serve(engine, id, k0 + k) {
            Ok(()) => {}
            Err(OramError::Tamper { .. }) => errors += 1,
            Err(e) => return Err(e),
        }
        lat.push(t.elapsed().as_secs_f64() * 1e3);
        let (period, _) = clock(engine);
        (period_min, period_max) = (period_min.min(period), period_max.max(period));
        if cfg.verify {
            // the client's work: open the session-sealed reply
            let tc = Instant::now();
            let mut r = client.reply.clone();
            client.session.open_slot(slot_nonce(k0 + k, 7), &mut r, 0, 0)?;
            client_s += tc.elapsed().as_secs_f64();
            if !check_block(cfg.seed, id, &r[..cfg.block_size]) {
                errors += 1;
            }
        }
        end = Instant::now();
        if (k + 1) % window == 0 {
            windows.push((end - window_t0).as_secs_f64() * 1e3 / window as f64);
            window_t0 = end;
        }
    }
    let wall_s = (end - wall).as_secs_f64();
    let late_handovers = clock(engine).1 - late0;
    let cpu_s = process_cpu_s() - cpu0;
    Ok(Timed { lat, windows, wall_s, client_s, cpu_s, errors, period_min, period_max, late_handovers })
}

/// The run's numbers from the timed requests and the counters around them.
#[allow(clippy::too_many_arguments)]
fn results(
    cfg: &RunConfig,
    engine: &Engine,
    threads: usize,
    setup_s: f64,
    accesses: u64,
    caught_up: u64,
    before: &Counters,
    after: &Counters,
    timed: Timed,
) -> RunResult {
    // every request inside the byte and crypto counts, the catching-up ones included
    let counted = accesses + caught_up;
    let bytes = (after.bytes_read - before.bytes_read) + (after.bytes_written - before.bytes_written);
    let crypto = (after.crypto_ns - before.crypto_ns) as f64 / 1e6;
    let io = (after.io_ns - before.io_ns) as f64 / 1e6;
    let (shuffle_ms, epoch_len, epochs) = match engine {
        Engine::Pro(e) => {
            let s = &after.shuffles;
            let done = s.completed - before.shuffles.completed;
            let per = if done == 0 { 0.0 } else { (s.total_secs - before.shuffles.total_secs) / done as f64 };
            let g = e.geometry();
            (per * 1e3 / g.epoch_len as f64, g.epoch_len, done)
        }
        _ => (0.0, 0, 0),
    };
    let (cache, private_block_bytes, position_map_bytes, cache_shuffles) = match engine {
        Engine::Pro(e) => {
            let s = e.stats();
            (s.peak_cached_blocks, s.private_block_bytes, s.position_map_bytes, s.cache_shuffles)
        }
        _ => (0, 0, 0, 0),
    };
    // PRO-ORAM: each request's own slot plus its 1/T share of a whole shuffle (the window
    // holds whole shuffles, though not always one per epoch)
    let bytes_per_access = if epochs > 0 {
        let slot = (cfg.block_size + TAG_LEN) as f64;
        slot + (bytes as f64 - counted as f64 * slot) / (epochs * epoch_len) as f64
    } else {
        bytes as f64 / counted as f64
    };
    let mut sorted = timed.lat;
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| sorted[((p * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)];
    let server_ms = timed.wall_s * 1e3 / accesses as f64;
    let client_ms = if cfg.verify { timed.client_s * 1e3 / accesses as f64 } else { 0.0 };
    let network_ms = if cfg.link_mbps > 0.0 { (cfg.block_size + TAG_LEN) as f64 * 8.0 / (cfg.link_mbps * 1e6) * 1e3 } else { 0.0 };
    let (p50, p99) = (q(0.5), q(0.99));
    RunResult {
        engine: cfg.engine.clone(),
        n_blocks: cfg.n_blocks,
        block_size: cfg.block_size,
        accesses,
        setup_s,
        server_ms,
        server_p50_ms: p50,
        server_p99_ms: p99,
        server_max_ms: *sorted.last().unwrap(),
        p99_over_p50: p99 / p50,
        server_ms_windows: timed.windows,
        client_ms,
        network_ms,
        total_ms: server_ms + client_ms + network_ms,
        throughput_mbps: cfg.block_size as f64 * 8.0 / (server_ms / 1e3) / 1e6,
        bytes_per_access,
        shuffle_ms_per_access: shuffle_ms,
        crypto_core_ms: crypto / counted as f64,
        storage_core_ms: io / counted as f64,
        cpu_ms_per_access: timed.cpu_s * 1e3 / accesses as f64,
        private_cache_blocks: cache,
        private_block_bytes,
        position_map_bytes,
        period_min_ms: timed.period_min,
        period_max_ms: timed.period_max,
        late_handovers: timed.late_handovers,
        caught_up,
        pace_margin: cfg.pace_margin,
        epoch_len,
        epochs,
        cache_shuffles,
        threads,
        errors: timed.errors,
    }
}

/// User + system CPU seconds of this process so far (Linux: /proc/self/stat; else 0).
pub(crate) fn process_cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // fields after the parenthesised command name; utime and stime are the 14th and 15th
    let Some(rest) = stat.rsplit_once(')').map(|x| x.1) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // field 14 is f[11] after dropping pid, comm and state (state is f[0])
    (ticks(11) + ticks(12)) / 100.0
}

/// JSON in, JSON out (the bindings' entry point).
pub fn run_json(cfg: &str) -> Result<String> {
    let c: RunConfig = serde_json::from_str(cfg).map_err(|e| OramError::Config(e.to_string()))?;
    Ok(serde_json::to_string(&run(&c)?).unwrap())
}
