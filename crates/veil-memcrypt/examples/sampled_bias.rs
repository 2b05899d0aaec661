//! Where a sampled run's error comes from. Each window of a run is timed two ways: inside the
//! full run (a clone of the timed machine: the truth) and from the functional pass's fork (what
//! a sampled run times), with the same detailed warm-up; their stall per measured record says
//! what functional warm-up and a short detailed warm-up miss. Besides, the design's expected
//! stall per measured record (every window placement, per-record stalls from the full run)
//! against the full run's: what the placement of windows weighs wrongly. (`Sim::fork` is for the
//! functional pass only: a fork of a timed machine keeps arrival times at the run's present in
//! its bitmap cache, and its windows, whose clock starts at 0, wait for them.)
//!
//! `cargo run --release -p veil-memcrypt --example sampled_bias -- RUN.json [WARMUP [MEASURED]]`
//! (default 300 and 300, the defaults of a sampled run)

use veil_memcrypt::input::{for_each, Run};
use veil_memcrypt::sampled::time_window;
use veil_memcrypt::Sim;

fn main() {
    let path = std::env::args().nth(1).expect("RUN.json");
    let run: Run = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .map_or(d, |a| a.parse().expect("a count"))
    };
    let (warmup, measured) = (arg(2, 300), arg(3, 300));
    let (window, interval) = (warmup + measured, 1500usize.max(warmup + measured));
    let mut recs = Vec::new();
    for_each(&run, &|| false, |r| {
        recs.push(*r);
        Ok(())
    })
    .unwrap();
    let warm = run.config.warmup_records as usize;
    let cfg = &run.config;
    let mut full = Sim::new(cfg).unwrap();
    let mut func = Sim::new(cfg).unwrap();
    for r in &recs[..warm] {
        full.step(r);
        func.step(r);
    }
    let cpi = 1.0 / (cfg.width as f64).min(cfg.ilp);
    let stall = |r: &veil_memcrypt::Results| r.cycles - cpi * r.insts as f64;
    let (mut s_true, mut s_func) = (0.0, 0.0);
    let mut n = 0;
    let timed = &recs[warm..];
    let mut i = 0;
    while i + interval <= timed.len() {
        let w = &timed[i..i + window];
        s_true += stall(&time_window(full.clone(), w, warmup));
        s_func += stall(&time_window(func.fork(cfg).unwrap(), w, warmup));
        for r in &timed[i..i + interval] {
            full.step(r);
            func.warm_functional(r);
        }
        i += interval;
        n += 1;
    }
    design(&run, &recs, window, warmup, interval);
    let m = (n * (window - warmup)) as f64;
    println!(
        "{n} windows: stall per measured record: true {:.2}, functional {:.2} ({:+.2}%)",
        s_true / m,
        s_func / m,
        (s_func / s_true - 1.0) * 100.0
    );
}

/// The sampled design's expected stall per measured record (every window start in each unit
/// equally likely, as the plan draws them; per-record stalls from the full run's snapshots)
/// against the full run's, and the full run's two ways (snapshots and `finish`, which drains the
/// misses still outstanding).
fn design(
    run: &Run,
    recs: &[veil_memcrypt::record::Record],
    window: usize,
    warmup: usize,
    interval: usize,
) {
    let cfg = &run.config;
    let cpi = 1.0 / (cfg.width as f64).min(cfg.ilp);
    let mut s = Sim::new(cfg).unwrap();
    let warm = cfg.warmup_records as usize;
    for r in &recs[..warm] {
        s.step(r);
    }
    let mut per = Vec::new();
    let mut prev = s.snapshot();
    for r in &recs[warm..] {
        s.step(r);
        let now = s.snapshot();
        per.push((now.cycles - prev.cycles) - cpi * (now.insts - prev.insts) as f64);
        prev = now;
    }
    let f = s.finish();
    println!(
        "full run: stall per timed record {:.3} by snapshots, {:.3} at finish",
        per.iter().sum::<f64>() / per.len() as f64,
        (f.cycles - cpi * f.insts as f64) / f.records as f64
    );
    let n = per.len();
    let units = n / interval;
    let mut pi = vec![0.0f64; n];
    let m = window - warmup;
    for k in 0..units {
        let (a, b) = (k * n / units, ((k + 1) * n / units).min(n - m + 1));
        for s0 in a..b {
            for p in s0..s0 + m {
                pi[p] += 1.0 / (b - a) as f64;
            }
        }
    }
    let e = per.iter().zip(&pi).map(|(x, w)| x * w).sum::<f64>() / pi.iter().sum::<f64>();
    let pop = per.iter().sum::<f64>() / n as f64;
    println!(
        "design: expected stall/rec {e:.3} vs population {pop:.3} ({:+.2}%)",
        (e / pop - 1.0) * 100.0
    );
}
