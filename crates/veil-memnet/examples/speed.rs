//! The bench workloads from the command line, for profiling:
//! `cargo run --release -p veil-memnet --example speed -- mesh|df1056|df72 [threads] [measure_cycles]`.
//! Prints the result's key numbers (equal across thread counts) and the wall time.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map(String::as_str).unwrap_or("mesh");
    let mut cfg = match which {
        "mesh" => veil_memnet::SimConfig::booksim_mesh8x8(0.25),
        "df72" => veil_memnet::SimConfig::booksim_dragonfly72(0.45),
        "df1056" => {
            let mut c = veil_memnet::SimConfig::booksim_dragonfly72(0.45);
            if let veil_memnet::TopologyConfig::Dragonfly { p, a, h, .. } = &mut c.topology {
                (*p, *a, *h) = (4, 8, 4);
            }
            c
        }
        other => panic!("unknown workload {other} (mesh, df72, df1056)"),
    };
    cfg.sim.mode = "fixed".into();
    cfg.sim.warmup_cycles = std::env::var("WARMUP").map(|s| s.parse().expect("WARMUP")).unwrap_or(10_000);
    cfg.sim.measure_cycles = args.get(2).map(|s| s.parse().expect("cycles")).unwrap_or(50_000);
    if let Some(t) = args.get(1) {
        cfg.threads = Some(t.parse().expect("threads"));
    }
    let mut e = veil_memnet::sim::Engine::new(&cfg).expect("config");
    if std::env::var_os("FORCE_THREADS").is_some() {
        // Below the size threshold too: to measure where threads start to pay.
        e.force_threads(cfg.threads());
    }
    let x = e.run().expect("simulation");
    println!(
        "{which} threads={} plat={:.6} nlat={:.6} acc={:.6} hops={:.4} packets={} cycles={} wall={:.3}s",
        x.threads,
        x.avg_packet_latency, x.avg_network_latency, x.accepted_flits_per_node_cycle, x.avg_hops, x.packets_delivered,
        x.cycles_simulated, x.wall_seconds
    );
}
