//! `cargo run --release -p veil-oram --example oram_run -- '{"engine":"proram",...}'`
fn main() {
    let cfg = std::env::args().nth(1).unwrap_or_else(|| r#"{"engine":"proram","n_blocks":4096,"block_size":262144}"#.into());
    match veil_oram::measure::run_json(&cfg) {
        Ok(r) => println!("{r}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
