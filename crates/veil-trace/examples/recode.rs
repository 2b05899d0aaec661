//! `cargo run --release -p veil-trace --example recode -- SRC DST CODEC`: rewrites a trace with
//! another block codec (`raw`, `lz4`, `zstd`, `zstd:LEVEL`).
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 3 {
        eprintln!("usage: recode SRC DST CODEC");
        std::process::exit(2);
    }
    let codec = veil_trace::Codec::parse(&a[2]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    match veil_trace::recode(&a[0], &a[1], codec) {
        Ok(s) => println!("{} records in {} blocks", s.records, s.blocks),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    }
}
