//! `cargo run --release -p veil-trace --example trace_stats -- FILE`: a trace's statistics as
//! JSON, and how fast it was read (records/s, with `next_into`).
fn main() {
    let path = std::env::args().nth(1).expect("usage: trace_stats FILE");
    let t0 = std::time::Instant::now();
    let mut r = veil_trace::TraceReader::open(&path).unwrap_or_else(|e| fail(e));
    let mut rec = veil_trace::Record::default();
    let mut n = 0u64;
    while r.next_into(&mut rec).unwrap_or_else(|e| fail(e)) {
        n += 1;
    }
    let dt = t0.elapsed().as_secs_f64();
    let s = veil_trace::stats::compute(&path, &[8, 16, 32]).unwrap_or_else(|e| fail(e));
    println!("{}", serde_json::to_string_pretty(&s).unwrap());
    eprintln!("read {n} records in {dt:.3} s: {:.1} M records/s", n as f64 / dt / 1e6);
}

fn fail(e: veil_trace::TraceError) -> ! {
    eprintln!("{e}");
    std::process::exit(1)
}
