//! Prints speedups and the model's speed on a synthetic miss stream:
//! `cargo run -p veil-memcrypt --release --example explore -- [records] [p_zero] [insts_per_access]`.

use std::time::Instant;

use veil_memcrypt::record::Record;
use veil_memcrypt::synth::{Synth, SynthConfig};
use veil_memcrypt::{simulate, Config};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let records = a.get(1).map_or(1_000_000, |x| x.parse().unwrap());
    let p_zero = a.get(2).map_or(0.3, |x| x.parse().unwrap());
    let ipm = a.get(3).map_or(40, |x| x.parse().unwrap());
    let recs: Vec<Record> = Synth::new(SynthConfig { records, p_zero, insts_per_access: ipm, ..Default::default() }).collect();
    let go = |c: &Config| {
        let t = Instant::now();
        let r = simulate(c, recs.iter().copied().map(Ok), &|| false).unwrap();
        (r, recs.len() as f64 / t.elapsed().as_secs_f64())
    };
    let (plain, _) = go(&Config { encryption: false, ..Default::default() });
    println!("plain ipc {:.3} mem {:.1}", plain.ipc, plain.mean_memory_cycles);
    for (mode, cipher, reorder) in [("direct", "tdes", false), ("direct", "aes256", true), ("counter", "aes256", true)] {
        for n in [8, 16, 32] {
            let base = Config { mode: mode.into(), cipher: cipher.into(), ct_speculation: false, mac_speculation: false, reorder: false, ..Default::default() };
            let spec = Config { ct_speculation: mode == "direct", mac_speculation: true, reorder, fvt_size: n, ..base.clone() };
            let (b, _) = go(&base);
            let (s, rate) = go(&spec);
            println!(
                "{mode} {cipher} N={n}: base ipc {:.3} spec ipc {:.3} speedup {:.3} pred {:.2} fv {:.2} crypto {:.1}->{:.1} bm miss {:.2} {:.1} Mrec/s",
                b.ipc, s.ipc, s.ipc / b.ipc - 1.0, s.chunks_predicted as f64 / s.chunks as f64,
                s.frequent_words as f64 / s.fetched_words as f64, b.mean_crypto_cycles, s.mean_crypto_cycles,
                s.bitmap_misses as f64 / (s.bitmap_hits + s.bitmap_misses).max(1) as f64, rate / 1e6
            );
        }
    }
}
