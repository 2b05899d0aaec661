//! `cargo run --release -p veil-trace --example replay -- L1_STREAM OUT [QUANTUM]`: replays a
//! per-thread L1 stream (the Valgrind tool's `--stream=l1 --out=FILE`) through the shared LLC
//! and writes the standard trace; prints the summary and the replay's time.
fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(input), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: replay L1_STREAM OUT [QUANTUM]");
        std::process::exit(2)
    };
    let quantum = match args.next().map(|q| q.parse::<u64>()) {
        None => veil_trace::replay::DEFAULT_QUANTUM,
        Some(Ok(q)) => q,
        Some(Err(_)) => {
            eprintln!("QUANTUM: not a number of instructions");
            std::process::exit(2)
        }
    };
    let t0 = std::time::Instant::now();
    match veil_trace::replay::replay_file(&input, &out, quantum, veil_trace::Codec::Lz4) {
        Ok(s) => {
            println!("{}", serde_json::to_string_pretty(&s).unwrap());
            eprintln!("replayed in {:.3} s", t0.elapsed().as_secs_f64());
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}
