//! Probes the contention model: BL, EX-L and SSE-HP at 32 and 64 workers under each setting
//! given as `key=value,key=value` arguments (one setting per argument; none = defaults).
//! `cargo run --release -p veil-enclave --example contention -- mem_controllers=4 flit_bytes=0`
use veil_enclave::{simulate_many, Config, Model, Policy};

fn main() {
    let mut settings: Vec<String> = std::env::args().skip(1).collect();
    if settings.is_empty() {
        settings.push(String::new());
    }
    let policies: Vec<Policy> = match std::env::var("POLICY").as_deref() {
        Ok("sev") => vec![Policy::Sev],
        Ok("sgx") => vec![Policy::Sgx],
        _ => vec![Policy::Sgx, Policy::Sev],
    };
    for s in &settings {
        let mut json = serde_json::to_value(Config::default()).unwrap();
        for kv in s.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv.split_once('=').expect("key=value");
            json[k] = serde_json::from_str(v).unwrap_or(serde_json::Value::String(v.into()));
        }
        let base: Config = serde_json::from_value(json).unwrap();
        for &p in &policies {
            let mut cfgs = Vec::new();
            for m in [Model::Bl, Model::ExL, Model::SseHp] {
                for w in [32, 64] {
                    let mut c = base.clone();
                    c.policy = p;
                    c.model = m;
                    c.workers = w;
                    cfgs.push(c);
                }
            }
            let t0 = std::time::Instant::now();
            let r: Vec<_> = simulate_many(&cfgs).into_iter().map(|r| r.unwrap()).collect();
            let g = |i: usize| r[i + 1].throughput_krps / r[i].throughput_krps;
            println!(
                "{:40} {} BL 64/32 {:.3} EX-L 64/32 {:.3} SSE 64/32 {:.3} | EX-L/BL@32 {:.3} | slow64 EX-L {:.3} SSE {:.3} | BL64 dram {:.1} GB/s q {:.1} link util {:.3} wait/miss {:.2} late {} | {:.1}s",
                s, p.name(), g(0), g(2), g(4), r[2].throughput_krps / r[0].throughput_krps,
                r[3].completion_cycles as f64 / r[1].completion_cycles as f64, r[5].completion_cycles as f64 / r[1].completion_cycles as f64,
                r[1].dram_gbps, r[1].dram_queue_cycles, r[1].link_utilization, r[1].link_wait_per_miss, r[1].queue_late, t0.elapsed().as_secs_f64()
            );
        }
    }
}
