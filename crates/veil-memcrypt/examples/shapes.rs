//! Investigation driver (how docs/memcrypt-model.md's bitmap and DRAM choices were examined):
//! `cargo run --release -p veil-memcrypt --example shapes TRACE RECORDS [field=value ...]` runs the unprotected machine,
//! AES / TDES / counter mode without and with speculation on the first RECORDS records of a
//! trace, with the overrides applied to every run, and prints speedups and bitmap/DRAM counts.
//! `skip=K` passes over the trace's first K records (then `warmup_records=W` warms up, and RECORDS
//! are timed).

use veil_memcrypt::input::{simulate_run, Run};

fn run(trace: &str, n: u64, over: &serde_json::Map<String, serde_json::Value>, extra: serde_json::Value) -> veil_memcrypt::Results {
    let mut v = serde_json::to_value(veil_memcrypt::Config::default()).unwrap();
    let mut skip_records = 0;
    for (k, x) in over.iter().chain(extra.as_object().unwrap().iter()) {
        if k == "skip" {
            skip_records = x.as_u64().expect("skip: a number");
        } else {
            v[k] = x.clone();
        }
    }
    let config = serde_json::from_value(v).unwrap();
    simulate_run(&Run { config, trace: Some(trace.into()), synth: None, max_records: n, skip_records, sampling: None }, &|| false).unwrap()
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: u64 = a[2].parse().unwrap();
    let mut over = serde_json::Map::new();
    for kv in &a[3..] {
        let (k, v) = kv.split_once('=').unwrap();
        over.insert(k.into(), serde_json::from_str(v).unwrap_or(serde_json::Value::String(v.into())));
    }
    let ns = serde_json::json!({"ct_speculation": false, "mac_speculation": false, "reorder": false});
    let plain = run(&a[1], n, &over, serde_json::json!({"encryption": false}));
    let ab = run(&a[1], n, &over, ns.clone());
    let asp = run(&a[1], n, &over, serde_json::json!({}));
    let mut tb = ns.clone();
    tb["cipher"] = "tdes".into();
    let tb = run(&a[1], n, &over, tb);
    let ts = run(&a[1], n, &over, serde_json::json!({"cipher": "tdes"}));
    let mut cb = ns.clone();
    cb["mode"] = "counter".into();
    let cb = run(&a[1], n, &over, cb);
    let cm = run(&a[1], n, &over, serde_json::json!({"mode": "counter", "ct_speculation": false}));
    let bm = asp.bitmap_misses as f64 / (asp.bitmap_hits + asp.bitmap_misses).max(1) as f64;
    println!(
        "dependent misses {} | ipc plain {:.4} aes {:.4} | aes {:+.1}% tdes {:+.1}% ctrmac {:+.1}% | bm miss {:.3} ({} misses, {} pf) | mem {:.0}/{:.0} crypto {:.0}/{:.0} dram {}/{} (plain mem {:.0})",
        plain.dependent_misses,
        plain.ipc,
        ab.ipc,
        100.0 * (asp.ipc / ab.ipc - 1.0),
        100.0 * (ts.ipc / tb.ipc - 1.0),
        100.0 * (cm.ipc / cb.ipc - 1.0),
        bm,
        asp.bitmap_misses,
        serde_json::to_value(&asp).unwrap().get("bitmap_prefetches").cloned().unwrap_or_default(),
        ab.mean_memory_cycles,
        asp.mean_memory_cycles,
        ab.mean_crypto_cycles,
        asp.mean_crypto_cycles,
        ab.dram_accesses,
        asp.dram_accesses,
        plain.mean_memory_cycles,
    );
}
