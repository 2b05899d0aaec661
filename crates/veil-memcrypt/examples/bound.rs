//! Speedup against its bound (what the same speculating machine gains with free cryptography and
//! the same traffic) and against the looser unprotected machine's, on a synthetic stream:
//! `cargo run -p veil-memcrypt --release --example bound -- [records] [p_zero] [insts_per_access] [engines]`.

use veil_memcrypt::record::Record;
use veil_memcrypt::synth::{Synth, SynthConfig};
use veil_memcrypt::{simulate, Config};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let records = a.get(1).map_or(1_000_000, |x| x.parse().unwrap());
    let p_zero = a.get(2).map_or(0.3, |x| x.parse().unwrap());
    let ipm = a.get(3).map_or(40, |x| x.parse().unwrap());
    let engines = a.get(4).map_or(4, |x| x.parse().unwrap());
    let run_lines = a.get(5).map_or(1, |x| x.parse().unwrap());
    let recs: Vec<Record> = Synth::new(SynthConfig { records, p_zero, insts_per_access: ipm, run_lines, ..Default::default() }).collect();
    // MC_LEGACY=1: the model before arbitration, TLB and MAC traffic (fcfs, on_miss, no walk,
    // untimed MACs).
    let legacy = std::env::var_os("MC_LEGACY").is_some();
    let go = |c: &Config| {
        let mut c = c.clone();
        if legacy {
            c.arbitration = "fcfs".into();
            c.bitmap_fetch = "on_miss".into();
            c.walk_latency = 0.0;
            c.mac_store = "untimed".into();
        }
        simulate(&c, recs.iter().copied().map(Ok), &|| false).unwrap()
    };
    let plain = go(&Config { encryption: false, ..Default::default() });
    let row = |n: &str, r: &veil_memcrypt::Results| {
        println!("{n:>28}: cycles {:.0} ipc {:.4} row hits {} of {} mem {:.1} crypto {:.1}", r.cycles, r.ipc, r.dram_row_hits, r.dram_accesses, r.mean_memory_cycles, r.mean_crypto_cycles)
    };
    row("plain", &plain);
    for (mode, cipher, reorder) in [("direct", "tdes", false), ("direct", "aes256", true), ("counter", "aes256", true)] {
        let base = Config { mode: mode.into(), cipher: cipher.into(), ct_speculation: false, mac_speculation: false, reorder: false, engines, ..Default::default() };
        let spec = Config { ct_speculation: mode == "direct", mac_speculation: true, reorder, ..base.clone() };
        let free = Config { aes_latency_ns: 0.0, tdes_latency_ns: 0.0, compare_cycles: 0.0, ..spec.clone() };
        let (b, s, z) = (go(&base), go(&spec), go(&free));
        row(&format!("{mode} {cipher} base"), &b);
        row(&format!("{mode} {cipher} spec"), &s);
        row(&format!("{mode} {cipher} spec, free crypto"), &z);
        println!("{:>28}  speedup {:+.4} bound {:+.4} (unprotected machine's: {:+.4})", "", b.cycles / s.cycles - 1.0,
                 b.cycles / z.cycles - 1.0, b.cycles / plain.cycles - 1.0);
    }
}
