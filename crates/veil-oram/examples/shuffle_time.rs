//! Steady-state shuffles alone (stages 2 and 3 with the next shuffle's stage 1, as a served
//! store runs them), timed without requests or a clock: wall and CPU time per shuffle and per
//! request's share (1/T), and AES-GCM's share of the CPU. For A/B comparisons of the shuffle's
//! inner loop on a shared machine, where a paced run's throughput mostly measures the others.
//! `cargo run --release -p veil-oram --example shuffle_time -- [N] [B] [shuffles] [threads]`
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use veil_oram::clos;
use veil_oram::crypto::{slot_nonce, BlockKey, CRYPTO_NS, TAG_LEN};
use veil_oram::proram::Geometry;
use veil_oram::shuffle::{self, Buffers, NextStage1, Progress, ShuffleJob, Weights};
use veil_oram::storage::{Actor, MemoryStorage, Storage};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / 100.0
}

fn main() {
    let (n, bs, shuffles, threads): (u64, usize, usize, usize) = (arg(1, 4096), arg(2, 262144), arg(3, 6), arg(4, 2));
    let g = Geometry::new(n).unwrap();
    let (r, c, m) = (g.rows as usize, g.cols as usize, g.slots());
    let st = MemoryStorage::new(bs + TAG_LEN, &[m, m]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let route = |rng: &mut rand::rngs::StdRng| {
        let mut d: Vec<u32> = (0..m as u32).collect();
        d.shuffle(rng);
        Arc::new(clos::route(r, c, &d))
    };
    let mut k1 = Arc::new(BlockKey::random(&mut rng));
    let plain = vec![7u8; bs];
    for p in 0..m {
        st.write_with(Actor::Shuffle, 0, p, &mut |dst| {
            k1.seal_slot_into(slot_nonce(p, 1), &plain, dst);
            Ok(())
        })
        .unwrap();
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let (progress, abort, mut bufs) = (Progress::default(), AtomicBool::new(false), Buffers::default());
    let mut cur = route(&mut rng);
    println!("shuffle  wall_ms  cpu_ms  gcm_ms  per-request(T={}): wall_ms cpu_ms", g.epoch_len);
    for s in 0..shuffles {
        let next = route(&mut rng);
        let k1n = Arc::new(BlockKey::random(&mut rng));
        let job = ShuffleJob {
            stage1_from: None,
            work_region: 0,
            dst_region: 1,
            keys: [k1.clone(), Arc::new(BlockKey::random(&mut rng)), Arc::new(BlockKey::random(&mut rng))],
            route: cur,
            next: Some(NextStage1 { key: k1n.clone(), route: next.clone() }),
        };
        let (t0, c0, g0) = (Instant::now(), cpu_s(), CRYPTO_NS.load(Ordering::Relaxed));
        pool.install(|| shuffle::run(&st, &job, &pool, &progress, &abort, None, &mut bufs, &Weights::default())).unwrap();
        let (wall, cpu) = (t0.elapsed().as_secs_f64() * 1e3, (cpu_s() - c0) * 1e3);
        let gcm = (CRYPTO_NS.load(Ordering::Relaxed) - g0) as f64 / 1e6;
        let t = g.epoch_len as f64;
        println!("{s:7} {wall:8.1} {cpu:7.0} {gcm:7.0}  {:.3} {:.3}", wall / t, cpu / t);
        (k1, cur) = (k1n, next);
    }
}
