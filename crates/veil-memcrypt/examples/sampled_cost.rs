//! Where a sampled run's CPU time goes, thread CPU seconds on one thread (no contention between
//! its own threads): the sequential model, the functional pass alone, the windows alone (forks
//! included), over the bench's `runs` stream (2 M records, AES-256 with speculation) at the
//! default sampling (windows of 400 records, 100 of warm-up, one per 1,500). On two idle cores a
//! sampled run takes about max(pass, (pass + windows) / 2) of wall time.
//!
//! `cargo run --release -p veil-memcrypt --example sampled_cost`

use veil_memcrypt::sampled::time_window;
use veil_memcrypt::synth::{Synth, SynthConfig};
use veil_memcrypt::{Config, Sim};

fn cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let synth = SynthConfig {
        records: 2_000_000,
        footprint_lines: 1 << 16,
        cache_lines: 4096,
        run_lines: 8,
        seed: 1,
        ..Default::default()
    };
    let recs: Vec<_> = Synth::new(synth).collect();
    let cfg = Config {
        cipher: "aes256".into(),
        ..Default::default()
    };
    let (window, warmup, interval) = (400, 100, 1500);
    let t = cpu();
    let mut s = Sim::new(&cfg).unwrap();
    for r in &recs {
        s.step(r);
    }
    std::hint::black_box(s.finish());
    let seq = cpu() - t;
    let t = cpu();
    let mut f = Sim::new(&cfg).unwrap();
    for r in &recs {
        f.warm_functional(r);
    }
    let pass = cpu() - t;
    let t = cpu();
    let n = recs.len() / interval;
    for k in 0..n {
        let a = k * interval;
        std::hint::black_box(time_window(
            f.fork(&cfg).unwrap(),
            &recs[a..a + window],
            warmup,
        ));
    }
    let windows = cpu() - t;
    let idle2 = pass.max((pass + windows) / 2.0);
    println!(
        "CPU s: sequential {seq:.3}, functional pass {pass:.3}, {n} windows {windows:.3}; \
         two idle cores: {:.2}x, {:.1} M records/s",
        seq / idle2,
        recs.len() as f64 / idle2 / 1e6
    );
}
