//! Per epoch of a paced run: the request clock, whether the next epoch was built ahead, and
//! the latency spread, to see where a run's p99 comes from.
//! `cargo run --release -p veil-oram --example epoch_profile -- [N] [B] [epochs] [warm epochs]`
use std::sync::Arc;
use std::time::Instant;
use veil_oram::crypto::{BlockKey, TAG_LEN};
use veil_oram::proram::{region_slots, ProOram, ProOramConfig, DEFAULT_PACE_MARGIN, DEFAULT_RUN_AHEAD};
use veil_oram::storage::{MemoryStorage, Storage};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    let (n, bs, epochs, warm): (u64, usize, usize, usize) = (arg(1, 4096), arg(2, 262144), arg(3, 8), arg(4, 6));
    let margin: f64 = arg(5, DEFAULT_PACE_MARGIN);
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()));
    let cfg = ProOramConfig { block_size: bs, threads: 0, seed: Some(1), pace: true, pace_margin: margin, shuffle_idle: false, epoch_len: None, shuffle: Default::default() };
    let o = ProOram::create(st, BlockKey::from_bytes([1; 16]), n, cfg, &|i, b| b[..8].copy_from_slice(&i.to_le_bytes())).unwrap();
    let t = o.geometry().epoch_len as usize;
    for k in 0..warm * t {
        o.read(k as u64 % n).unwrap();
    }
    let mut all = Vec::new();
    // latency over the period in epochs whose next epoch was built ahead: the clock's own jitter
    let mut clocked = Vec::new();
    println!("epoch period_ms ahead    min    p50    max  (ms)");
    for e in 0..epochs {
        let s = o.stats();
        let mut lat = Vec::with_capacity(t);
        for k in 0..t {
            let t0 = Instant::now();
            o.read(((e * t + k) as u64 * 7) % n).unwrap();
            lat.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        all.extend_from_slice(&lat);
        if s.epochs_ready > 0 {
            clocked.extend(lat.iter().map(|x| x / s.period_ms));
        }
        if std::env::var("VEIL_PROFILE_STALLS").is_ok() && lat.iter().cloned().fold(0.0, f64::max) > 3.0 * s.period_ms {
            eprintln!("epoch {} stall: {}", s.epoch, lat.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>().join(" "));
        }
        lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("{:5} {:9.2} {:5} {:6.2} {:6.2} {:6.2}", s.epoch, s.period_ms, s.epochs_ready, lat[0], lat[t / 2], lat[t - 1]);
    }
    all.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| all[((p * (all.len() - 1) as f64).round() as usize).min(all.len() - 1)];
    println!("p50 {:.2} p99 {:.2} ratio {:.3}", q(0.5), q(0.99), q(0.99) / q(0.5));
    clocked.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if !clocked.is_empty() {
        let c = |p: f64| clocked[((p * (clocked.len() - 1) as f64).round() as usize).min(clocked.len() - 1)];
        println!("clocked epochs: latency/period p1 {:.3} p50 {:.3} p99 {:.3}", c(0.01), c(0.5), c(0.99));
    }
    let s = o.shuffle_times();
    let recent: Vec<String> = s.recent_steady.iter().map(|s| format!("{:.0}", s * 1e3)).collect();
    eprintln!("{} shuffles, mean {:.0} ms; latest steady ones (ms): {}", s.completed, s.total_secs / s.completed as f64 * 1e3, recent.join(" "));
}
