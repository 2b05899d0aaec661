//! Prints request latency by position in the epoch (where do slow requests fall?).
use std::sync::Arc;
use std::time::Instant;
use veil_oram::crypto::{BlockKey, TAG_LEN};
use veil_oram::proram::{region_slots, ProOram, ProOramConfig, DEFAULT_PACE_MARGIN};
use veil_oram::storage::{MemoryStorage, Storage};

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(4096, |s| s.parse().unwrap());
    let bs: usize = std::env::args().nth(2).map_or(262144, |s| s.parse().unwrap());
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(bs + TAG_LEN, &region_slots(n).unwrap()));
    let cfg = ProOramConfig { block_size: bs, threads: 0, seed: Some(1), pace: true, pace_margin: DEFAULT_PACE_MARGIN };
    let o = ProOram::create(st, BlockKey::from_bytes([1; 16]), n, cfg, &|i, b| b[..8].copy_from_slice(&i.to_le_bytes())).unwrap();
    let t = o.geometry().epoch_len as usize;
    let epochs: usize = std::env::args().nth(3).map_or(4, |s| s.parse().unwrap());
    let warm: usize = std::env::args().nth(4).map_or(2, |s| s.parse().unwrap());
    for k in 0..warm * t {
        o.read(k as u64 % n).unwrap();
    }
    let mut lat = vec![Vec::new(); t];
    for k in 0..epochs * t {
        let t0 = Instant::now();
        o.read((k as u64 * 7) % n).unwrap();
        lat[k % t].push(t0.elapsed().as_secs_f64() * 1e3);
    }
    for (i, l) in lat.iter().enumerate() {
        println!("{i:3} {}", l.iter().map(|x| format!("{x:7.2}")).collect::<Vec<_>>().join(" "));
    }
    let secs: Vec<String> = o.shuffle_seconds().iter().map(|s| format!("{:.0}", s * 1e3)).collect();
    eprintln!("shuffle ms: {}", secs.join(" "));
}
