//! Prints the full results of a grid (both policies, every model, the worker counts in `WS`) as
//! JSON lines, for checking that a speed change leaves results identical to the bit:
//! `REQ=1000 WS=4,8,16,32,64 cargo run --release -p veil-enclave --example dump > after.jsonl`
//! (that grid is `veil bench enclave`'s sweep), then `cmp before.jsonl after.jsonl`.
use veil_enclave::{simulate_many, Config, Model, Policy};

fn main() {
    let req: u32 = std::env::var("REQ").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    let ws: Vec<u32> = std::env::var("WS")
        .ok()
        .map(|s| s.split(',').map(|x| x.parse().expect("WS: comma-separated worker counts")).collect())
        .unwrap_or(vec![8, 64]);
    let mut cfgs = Vec::new();
    for p in [Policy::Sgx, Policy::Sev] {
        for m in Model::ALL.iter().copied() {
            for &w in &ws {
                let mut c = Config::default();
                c.policy = p;
                c.model = m;
                c.workers = w;
                c.requests = req;
                cfgs.push(c);
            }
        }
    }
    let t0 = std::time::Instant::now();
    for r in simulate_many(&cfgs) {
        println!("{}", serde_json::to_string(&r.expect("a default config runs")).expect("results serialise"));
    }
    eprintln!("{} simulations in {:.2}s", cfgs.len(), t0.elapsed().as_secs_f64());
}
