//! Runs one JSON config (file argument) and prints the result: `cargo run --release --example one cfg.json`.
fn main() {
    let p = std::env::args().nth(1).expect("config file");
    let t0 = std::time::Instant::now();
    let out = veil_enclave::simulate_json(&std::fs::read_to_string(p).unwrap());
    eprintln!("{:.3}s", t0.elapsed().as_secs_f64());
    println!("{}", out.unwrap_or_else(|e| e));
}
