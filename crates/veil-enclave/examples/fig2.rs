//! Prints the Fig. 2 sweep and the 64-worker Fig. 3 breakdown: `cargo run --release --example fig2 [key=value ...]`.
use veil_enclave::{simulate_many, Config, Model, Policy, CAT_NAMES};

fn main() {
    let mut base = Config::default();
    let mut json = serde_json::to_value(&base).unwrap();
    for a in std::env::args().skip(1) {
        let (k, v) = a.split_once('=').expect("key=value");
        json[k] = serde_json::from_str(v).unwrap_or(serde_json::Value::String(v.into()));
    }
    base = serde_json::from_value(json).unwrap();
    let t0 = std::time::Instant::now();
    let mut cfgs = Vec::new();
    for p in [Policy::Sgx, Policy::Sev] {
        for m in Model::ALL.iter().copied().map(Some).chain([None]) {
            let ws: Vec<u32> = if std::env::var("FAST").is_ok() { vec![64, 64, 64, 32, 64] } else { vec![4, 8, 16, 32, 64] };
            for w in ws {
                let mut c = base.clone();
                c.policy = p;
                c.workers = w;
                match m {
                    Some(m) => c.model = m,
                    None => { c.model = Model::ExL; c.ctx_switch_ns = 0.0; }
                }
                cfgs.push(c);
            }
        }
    }
    let rs: Vec<_> = simulate_many(&cfgs).into_iter().map(|r| r.unwrap()).collect();
    eprintln!("{} sims in {:.2}s", rs.len(), t0.elapsed().as_secs_f64());
    for (i, r) in rs.iter().enumerate() {
        if i % 5 == 0 { print!("\n{:4} {:8}{}", r.policy, r.model, if cfgs[i].ctx_switch_ns == 0.0 {"0"} else {" "}); }
        print!(" {:8.1}", r.throughput_krps);
    }
    println!();
    for p in 0..2 {
        let bl = &rs[p * 30 + 4];
        println!("--- {} 64w: slowdowns and breakdown (norm. BL mean worker time)", bl.policy);
        for mi in 0..6 {
            let r = &rs[p * 30 + mi * 5 + 4];
            let s = r.completion_cycles as f64 / bl.completion_cycles as f64;
            let r32 = &rs[p * 30 + mi * 5 + 3];
            print!("{:8}{} slow {:.3} 64/32 {:.2} |", r.model, mi/5, s, r.throughput_krps / r32.throughput_krps);
            for (k, n) in CAT_NAMES.iter().enumerate() { let _ = k; print!(" {}={:.3}", &n[..4], r.breakdown[n] / bl.mean_worker_cycles); }
            print!(" | pick {:.0}", r.counters.pickup_wait_cycles as f64 / r.counters.calls_posted.max(1) as f64);
            println!(" | L1D {:+.0}% L2 {:+.1}% shar x{:.2} ctx {} sleeps {} empty {}",
              100.0 * (r.l1d_misses as f64 / bl.l1d_misses as f64 - 1.0), 100.0 * (r.l2_misses as f64 / bl.l2_misses as f64 - 1.0),
              r.sharing_misses as f64 / bl.sharing_misses as f64, r.counters.ctx_switches, r.counters.responder_sleeps, r.counters.responder_empty_checks);
        }
    }
}
