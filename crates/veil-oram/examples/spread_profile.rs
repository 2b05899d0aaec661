//! Where a paced run's p99 above p50 comes from, for the Clos and the cache shuffle measured in
//! turn in one process (the same machine load): per request its latency, its place in the
//! epoch, whether the next epoch was built ahead when it came, and the period; then which
//! requests were late and where; after each, the request clock alone at the same period (the
//! control: the machine's wake-up noise). CPU seconds and the load average beside wall time.
//! `cargo run --release -p veil-oram --example spread_profile -- [N] [B] [timed epochs] [warm epochs] [rounds] [shuffles] [run_ahead]`
//! e.g. `... -- 4096 262144 8 20 2 cache,clos,cache+idle` (+idle: the shuffle at SCHED_IDLE)
use std::sync::Arc;
use std::time::Instant;
use veil_oram::cacheshuffle::ShuffleKind;
use veil_oram::crypto::{BlockKey, TAG_LEN};
use veil_oram::proram::{region_slots, sleep_until, ProOram, ProOramConfig, DEFAULT_PACE_MARGIN, DEFAULT_RUN_AHEAD};
use veil_oram::storage::{MemoryStorage, Storage};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = stat.rsplit_once(')').map_or("", |x| x.1).split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

struct Req {
    lat: f64,
    k: usize,
    ahead: u64,
    period: f64,
}

/// How many of `lat` came more than 1, 2 and 5 ms after a period (`period`, ms): lateness in
/// absolute time, comparable across periods.
fn late_by(lat: &[f64], period: &dyn Fn(usize) -> f64) -> String {
    let n = |ms: f64| lat.iter().enumerate().filter(|(i, &l)| l > period(*i) + ms).count();
    format!("> 1 / 2 / 5 ms late: {} / {} / {}", n(1.0), n(2.0), n(5.0))
}

fn quantile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[((p * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)]
}

/// The control: the request clock with nothing behind it, `count` replies held until due times
/// `period_ms` apart by the engine's own `sleep_until`. Its spread is the machine's wake-up noise.
fn clock_alone(period_ms: f64, count: usize) {
    let p = std::time::Duration::from_secs_f64(period_ms / 1e3);
    let (load0, cpu0, t0) = (load(), cpu_s(), Instant::now());
    let mut lat = Vec::with_capacity(count);
    for k in 0..count {
        let s = Instant::now();
        sleep_until(t0 + p * (k as u32 + 1), p.as_nanos() as u64);
        lat.push(s.elapsed().as_secs_f64() * 1e3);
    }
    let (p50, p99) = (quantile(&lat, 0.5), quantile(&lat, 0.99));
    let late = lat.iter().filter(|&&l| l > 1.25 * period_ms).count();
    println!(
        "clock alone, period {period_ms:.2} ms: p50 {p50:.2} ms p99 {p99:.2} ms ratio {:.3} excess {:.2} ms; late {late} of {count}, {}; \
         {:.1} s wall, {:.2} CPU-s; load {load0} -> {}",
        p99 / p50,
        p99 - p50,
        late_by(&lat, &|_| period_ms),
        t0.elapsed().as_secs_f64(),
        cpu_s() - cpu0,
        load()
    );
}

/// Profiles one paced run; returns its median period (ms) and request count for the control.
fn profile(n: u64, bs: usize, epochs: usize, warm: usize, shuffle: ShuffleKind, idle: bool, ahead: u32) -> (f64, usize) {
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(bs + TAG_LEN, &region_slots(n, ahead).unwrap()));
    let cfg = ProOramConfig { block_size: bs, threads: 0, seed: Some(1), pace: true, pace_margin: DEFAULT_PACE_MARGIN, shuffle_idle: idle, epoch_len: None, shuffle };
    let o = ProOram::create(st, BlockKey::from_bytes([1; 16]), n, cfg, &|i, b| b[..8].copy_from_slice(&i.to_le_bytes())).unwrap();
    let t = o.geometry().epoch_len as usize;
    for k in 0..warm * t {
        o.read(k as u64 % n).unwrap();
    }
    let (late0, load0, cpu0, wall) = (o.stats().late_handovers, load(), cpu_s(), Instant::now());
    let mut reqs = Vec::with_capacity(epochs * t);
    for k in 0..epochs * t {
        let s = o.stats();
        let t0 = Instant::now();
        o.read((k as u64 * 7) % n).unwrap();
        reqs.push(Req { lat: t0.elapsed().as_secs_f64() * 1e3, k: s.used_this_epoch as usize, ahead: s.epochs_ready, period: s.period_ms });
    }
    let (wall_s, cpu) = (wall.elapsed().as_secs_f64(), cpu_s() - cpu0);
    let lat: Vec<f64> = reqs.iter().map(|r| r.lat).collect();
    let rel: Vec<f64> = reqs.iter().map(|r| r.lat / r.period).collect();
    let (p50, p99) = (quantile(&lat, 0.5), quantile(&lat, 0.99));
    // late: more than a quarter period past its due time (a request on time takes one period)
    let late: Vec<&Req> = reqs.iter().filter(|r| r.lat > 1.25 * r.period).collect();
    let count = |f: &dyn Fn(&Req) -> bool| late.iter().filter(|r| f(r)).count();
    println!(
        "{:5}{} N={n} B={bs} T={t} run_ahead {ahead}: p50 {p50:.2} ms p99 {p99:.2} ms ratio {:.3} excess {:.2} ms; lat/period p50 {:.3} p99 {:.3}; \
         period {:.2}-{:.2} ms; {} req in {wall_s:.1} s wall, {cpu:.1} CPU-s ({:.2} cores); late hand-overs {}, cache shuffles built from {} epochs back; load {load0} -> {}",
        shuffle.name(),
        if idle { " (shuffle at SCHED_IDLE)" } else { "" },
        p99 / p50,
        p99 - p50,
        quantile(&rel, 0.5),
        quantile(&rel, 0.99),
        reqs.iter().map(|r| r.period).fold(f64::MAX, f64::min),
        reqs.iter().map(|r| r.period).fold(0.0, f64::max),
        reqs.len(),
        cpu / wall_s,
        o.stats().late_handovers - late0,
        o.stats().cache_chain,
        load()
    );
    let ahead0 = reqs.iter().filter(|r| r.ahead == 0).count();
    println!(
        "      late (> 1.25 period): {} of {}, {}: {} with no epoch built ahead (such requests: {}), {} first of epoch, {} last of epoch; \
         late share per position decile: {:?}; requests by epochs built ahead: {:?}",
        late.len(),
        reqs.len(),
        late_by(&lat, &|i| reqs[i].period),
        count(&|r| r.ahead == 0),
        ahead0,
        count(&|r| r.k == 0),
        count(&|r| r.k == t - 1),
        (0..10).map(|d| count(&|r| r.k * 10 / t == d)).collect::<Vec<_>>(),
        (0..=reqs.iter().map(|r| r.ahead).max().unwrap_or(0)).map(|a| reqs.iter().filter(|r| r.ahead == a).count()).collect::<Vec<_>>()
    );
    (quantile(&reqs.iter().map(|r| r.period).collect::<Vec<_>>(), 0.5), reqs.len())
}

fn main() {
    let (n, bs, epochs, warm, rounds): (u64, usize, usize, usize, usize) = (arg(1, 4096), arg(2, 262144), arg(3, 8), arg(4, 20), arg(5, 1));
    let kinds: String = arg(6, "cache,clos".to_string());
    let ahead: u32 = arg(7, DEFAULT_RUN_AHEAD);
    for _ in 0..rounds {
        for name in kinds.split(',') {
            // "cache+idle": the shuffle's threads at SCHED_IDLE (`ProOramConfig::shuffle_idle`)
            let (kind, mode) = name.split_once('+').unwrap_or((name, ""));
            let (period, count) = profile(n, bs, epochs, warm, ShuffleKind::from_name(kind).unwrap(), mode == "idle", ahead);
            clock_alone(period, count);
        }
    }
}
