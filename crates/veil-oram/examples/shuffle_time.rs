//! Steady-state shuffles alone (stages 2 and 3 with the next shuffle's stage 1, as a served
//! store runs them), timed without requests or a clock: wall and CPU time per shuffle and per
//! request's share (1/T), first with copies in place of AES-GCM (the shuffle's memory traffic
//! alone, `veil_oram::floor`), then with AES-GCM. For A/B comparisons of the shuffle's inner
//! loop on a shared machine, where a paced run's throughput mostly measures the others.
//! `cargo run --release -p veil-oram --example shuffle_time -- [N] [B] [shuffles] [threads]`
use veil_oram::floor::{self, FloorConfig};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        None => default,
        Some(s) => s.parse().unwrap_or_else(|_| {
            eprintln!("shuffle_time: argument {i} ('{s}') is not a number; usage: shuffle_time [N] [B] [shuffles] [threads]");
            std::process::exit(2)
        }),
    }
}

fn main() {
    let cfg = FloorConfig { n_blocks: arg(1, 4096), block_size: arg(2, 262144), shuffles: arg(3, 6), threads: arg(4, 2), seed: 1 };
    let r = floor::run(&cfg).unwrap_or_else(|e| {
        eprintln!("shuffle_time: {e}");
        std::process::exit(2)
    });
    let t = r.epoch_len as f64;
    println!("kind     shuffle  wall_ms  cpu_ms  per-request(T={}): wall_ms cpu_ms", r.epoch_len);
    for (kind, wall, cpu) in [("copies", &r.copies_wall_ms, &r.copies_cpu_ms), ("aes-gcm", &r.gcm_wall_ms, &r.gcm_cpu_ms)] {
        for (s, (w, c)) in wall.iter().zip(cpu).enumerate() {
            println!("{kind:8} {:7} {w:8.1} {c:7.0}  {:.3} {:.3}", s + 1, w / t, c / t);
        }
    }
}
