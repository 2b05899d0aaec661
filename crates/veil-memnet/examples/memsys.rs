//! Runs one memory-system simulation and prints its result as JSON.
//! `cargo run --release -p veil-memnet --example memsys -- [requests_per_cpu] [uarch] [workload]`
//! or a JSON `MemSysConfig` as the only argument.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg: veil_memnet::memsys::MemSysConfig = match args.first() {
        Some(a) if a.trim_start().starts_with('{') => serde_json::from_str(a).expect("config JSON"),
        _ => {
            let mut c = veil_memnet::memsys::MemSysConfig::default();
            if let Some(n) = args.first() {
                c.workload.requests_per_cpu = n.parse().expect("requests per CPU");
            }
            if let Some(u) = args.get(1) {
                c.encryption.uarch = u.clone();
            }
            if let Some(w) = args.get(2) {
                c.workload.kind = w.clone();
            }
            c
        }
    };
    match veil_memnet::memsys::simulate(&cfg) {
        Ok(mut r) => {
            r.cores.clear();
            println!("{}", serde_json::to_string_pretty(&r).unwrap());
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
