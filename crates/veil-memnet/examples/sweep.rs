//! `cargo run --release --example sweep -- mesh|dragonfly RATE...`: one line per load.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map(String::as_str).unwrap_or("mesh");
    for r in &args[1..] {
        let rate: f64 = r.parse().expect("rate");
        let mut cfg = match which {
            "mesh" => veil_memnet::SimConfig::booksim_mesh8x8(rate),
            "dragonfly" => veil_memnet::SimConfig::booksim_dragonfly72(rate),
            json => {
                let mut c = veil_memnet::SimConfig::from_json(json).expect("config");
                c.traffic.rate = rate;
                c
            }
        };
        if let Ok(s) = std::env::var("SEED") {
            cfg.seed = s.parse().expect("SEED");
        }
        match veil_memnet::simulate(&cfg) {
            Ok(x) => println!(
                "{rate:.2} plat={:.4} nlat={:.4} acc={:.3} hops={:.2} sat={} cycles={} wall={:.2}s",
                x.avg_packet_latency, x.avg_network_latency, x.accepted_flits_per_node_cycle, x.avg_hops, x.saturated as u8,
                x.cycles_simulated, x.wall_seconds
            ),
            Err(e) => println!("{rate:.2} error: {e}"),
        }
    }
}
