//! Which mechanism sets EX-L's 32 -> 64-worker change: each row switches one off (or adds the
//! clients) and prints BL's and EX-L's gain from 32 to 64 workers and EX-L's 64-worker slowdown,
//! per policy. `cargo run --release --example exl_decrease [requests]`.
use veil_enclave::{simulate_many, Config, Model, Placement, Policy};

fn main() {
    let requests: u32 = std::env::args().nth(1).map(|a| a.parse().expect("requests")).unwrap_or(1000);
    // Optional second argument: the first row to run (the earlier rows are skipped).
    let from: usize = std::env::args().nth(2).map(|a| a.parse().expect("row")).unwrap_or(0);
    let rows: Vec<(&str, Box<dyn Fn(&mut Config)>)> = vec![
        ("model as calibrated (clients off-chip)", Box::new(|_| {})),
        ("0-cycle context switch", Box::new(|c| c.ctx_switch_ns = 0.0)),
        ("no switch footprint (ctx_switch_kb 0)", Box::new(|c| c.ctx_switch_kb = 0)),
        ("0-cycle switch and no footprint", Box::new(|c| { c.ctx_switch_ns = 0.0; c.ctx_switch_kb = 0 })),
        ("responder timer 1 us (shorter waits, more swaps)", Box::new(|c| c.responder_sleep_us = 1.0)),
        ("responder timer 40 us", Box::new(|c| c.responder_sleep_us = 40.0)),
        ("clients on the chip (wake-affine)", Box::new(|c| c.placement = Placement::WakeAffine)),
        ("clients on the chip, 20,000 more client cycles", Box::new(|c| { c.placement = Placement::WakeAffine; c.client_work_cycles += 20_000.0 })),
        ("clients on the chip, 60,000 more client cycles", Box::new(|c| { c.placement = Placement::WakeAffine; c.client_work_cycles += 60_000.0 })),
    ];
    let rows: Vec<_> = rows.into_iter().skip(from).collect();
    let mut cfgs = Vec::new();
    for (_, f) in &rows {
        for p in [Policy::Sgx, Policy::Sev] {
            for m in [Model::Bl, Model::ExL, Model::SseHp] {
                for w in [32, 64] {
                    let mut c = Config { model: m, policy: p, workers: w, requests, ..Config::default() };
                    f(&mut c);
                    cfgs.push(c);
                }
            }
        }
    }
    let r: Vec<_> = simulate_many(&cfgs).into_iter().map(|r| r.unwrap()).collect();
    println!("| mechanism | policy | BL 64/32 | EX-L 64/32 | SSE-HP 64/32 | EX-L/BL at 32 | EX-L slowdown 64 | SSE-HP slowdown 64 |");
    println!("|---|---|---|---|---|---|---|---|");
    for (i, (name, _)) in rows.iter().enumerate() {
        for (j, p) in ["SGX-like", "SEV-like"].iter().enumerate() {
            let b = (i * 2 + j) * 6;
            let t = |k: usize| r[b + k].completion_cycles as f64;
            println!(
                "| {name} | {p} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                t(0) / t(1), t(2) / t(3), t(4) / t(5), t(0) / t(2), t(3) / t(1), t(5) / t(1)
            );
        }
    }
}
