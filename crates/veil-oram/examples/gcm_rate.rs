//! AES-GCM rates behind `veil bench oram`'s bound, for a machine without the Python side: one
//! core sealing a 256 KB buffer that stays in cache, THREADS cores doing so together, and one
//! core cycling 256 KB buffers through 256 MiB (from memory, as a store larger than the caches
//! has it). With `oram_run`'s throughput, the bound is cores x speed / (5 M / T + 2) B.
//! `cargo run --release -p veil-oram --example gcm_rate -- THREADS`
fn main() {
    let threads: usize = match std::env::args().nth(1).map(|s| s.parse()) {
        Some(Ok(t)) if t > 0 => t,
        _ => {
            eprintln!("usage: gcm_rate THREADS (a positive number of threads)");
            std::process::exit(2);
        }
    };
    let b = 256 * 1024;
    let rate = |threads: usize, working_set: usize| {
        veil_crypto::throughput_over("aes-128-gcm", b, threads, 0.5, working_set).map(|t| t.gbps).unwrap_or_else(|e| {
            eprintln!("gcm_rate: {e}");
            std::process::exit(2);
        })
    };
    let (one, together, memory) = (rate(1, b), rate(threads, b), rate(1, 256 << 20));
    println!(
        "AES-128-GCM, {b}-byte buffers: one core in cache {one:.2} GB/s; {threads} cores together in cache \
         {together:.2} GB/s ({:.2}x of {threads} x one); one core from memory {memory:.2} GB/s",
        together / (one * threads as f64)
    );
}
