//! Every window a sampled run could time: for each start of the measured records (every
//! `STRIDE`-th), the window timed from the functional pass's fork with `WARMUP` records of detailed
//! warm-up, and the same records' stall inside the full run. CSV on stdout:
//! start,stall,insts,load_fills,store_fills,true_stall. From it the exact distribution of a
//! sampled estimate over seeds follows for any placement of windows (the plan draws starts
//! uniformly in each unit).
//!
//! `cargo run --release -p veil-memcrypt --example sampled_population -- RUN.json [WARMUP [MEASURED [STRIDE]]]`
//! (default 100, 300, 1)

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
    let (warmup, measured, stride) = (arg(2, 100), arg(3, 300), arg(4, 1));
    let mut recs = Vec::new();
    for_each(&run, &|| false, |r| {
        recs.push(*r);
        Ok(())
    })
    .unwrap();
    let cfg = &run.config;
    let warm = cfg.warmup_records as usize;
    let cpi = 1.0 / (cfg.width as f64).min(cfg.ilp);
    let stall = |r: &veil_memcrypt::Results| r.cycles - cpi * r.insts as f64;
    // The full run's stall before each timed record (prefix sums).
    let mut full = Sim::new(cfg).unwrap();
    for r in &recs[..warm] {
        full.step(r);
    }
    let mut prefix = vec![0.0f64];
    for r in &recs[warm..] {
        full.step(r);
        prefix.push(stall(&full.snapshot()));
    }
    let mut func = Sim::new(cfg).unwrap();
    for r in &recs[..warm] {
        func.step(r);
    }
    let n = recs.len() - warm;
    // Warm functionally up to each window's first record, fork there.
    let mut at = 0usize; // timed records warmed so far
    println!("start,stall,insts,load_fills,store_fills,true_stall");
    let mut s = 0usize;
    while s + measured <= n {
        let begin = (warm + s).saturating_sub(warmup);
        while warm + at < begin {
            func.warm_functional(&recs[warm + at]);
            at += 1;
        }
        let w = &recs[begin..warm + s + measured];
        let res = time_window(func.fork(cfg).unwrap(), w, warm + s - begin);
        println!(
            "{s},{},{},{},{},{}",
            stall(&res),
            res.insts,
            res.load_fills,
            res.store_fills,
            prefix[s + measured] - prefix[s]
        );
        s += stride;
    }
}
