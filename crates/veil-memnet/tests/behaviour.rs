//! Behaviour with known answers: pipeline latency, determinism, conservation, deadlock
//! freedom per routing function, the watchdog, saturation detection and bad input.

use veil_memnet::{simulate, SimConfig, SimError, TopologyConfig};

fn quick(mut c: SimConfig) -> SimConfig {
    c.sim.mode = "fixed".into();
    c.sim.warmup_cycles = 1_000;
    c.sim.measure_cycles = 4_000;
    c
}

#[test]
fn mesh_zero_load_latency_is_the_pipeline_formula() {
    // BookSim iq timing, lookahead routing: 3 router cycles + 1 link cycle per hop, so a
    // 4-flit packet through H routers takes 4H + 5 cycles (2 for injection, 2 for ejection, 3
    // for the body flits). Uniform traffic on an 8x8 mesh: H = 2*(k^2-1)/(3k) + 1 = 6.25.
    let mut c = quick(SimConfig::booksim_mesh8x8(0.004));
    c.sim.measure_cycles = 20_000;
    let r = simulate(&c).unwrap();
    assert_eq!(r.max_packet_latency.min(1e9) >= 9.0, true);
    let expect = 4.0 * r.avg_hops + 5.0;
    assert!((r.avg_network_latency - expect).abs() < 0.1, "nlat {} vs {}", r.avg_network_latency, expect);
    assert!((r.avg_hops - 6.25).abs() < 0.25, "hops {}", r.avg_hops);
}

#[test]
fn minimum_latencies_match_booksim() {
    // BookSim2 reports minimum packet latency 9 (mesh) and 8 (dragonfly, internal speedup 2)
    // for these configurations: a packet to its own router.
    let mut c = quick(SimConfig::booksim_mesh8x8(0.05));
    c.histogram = true;
    let r = simulate(&c).unwrap();
    assert_eq!(r.latency_histogram.first().unwrap().0, 9);
    let mut c = quick(SimConfig::booksim_dragonfly72(0.05));
    c.histogram = true;
    let r = simulate(&c).unwrap();
    assert_eq!(r.latency_histogram.first().unwrap().0, 8);
}

#[test]
fn same_seed_same_statistics() {
    let c = quick(SimConfig::booksim_mesh8x8(0.3));
    let mut a = simulate(&c).unwrap();
    let mut b = simulate(&c).unwrap();
    a.wall_seconds = 0.0;
    b.wall_seconds = 0.0;
    assert_eq!(a, b);
    let mut c2 = c.clone();
    c2.seed = 2;
    let mut d = simulate(&c2).unwrap();
    d.wall_seconds = 0.0;
    assert_ne!(a, d);
}

#[test]
fn accepted_equals_offered_below_saturation() {
    for rate in [0.1, 0.3] {
        let r = simulate(&quick(SimConfig::booksim_mesh8x8(rate))).unwrap();
        assert!(!r.saturated);
        assert!((r.accepted_flits_per_node_cycle - rate).abs() / rate < 0.05, "{rate}: {}", r.accepted_flits_per_node_cycle);
        assert!(r.conservation_ok);
        // Channel utilisation: each node injects and ejects the offered load.
        assert!((r.injection_channels.mean - rate).abs() / rate < 0.05);
        assert!((r.ejection_channels.mean - rate).abs() / rate < 0.05);
        // Each packet crosses (hops - 1) network channels: total network flits per cycle.
        let per_chan = rate * 64.0 * (r.avg_hops - 1.0) / r.network_channels.count as f64;
        assert!((r.network_channels.mean - per_chan).abs() / per_chan < 0.05);
        assert!(r.channels.is_empty());
    }
    // Per-channel detail: every channel once, and the same totals.
    let mut c = quick(SimConfig::booksim_mesh8x8(0.2));
    c.channel_detail = true;
    let r = simulate(&c).unwrap();
    assert_eq!(r.channels.len(), 64 + 64 + 224);
    for (kind, agg) in [("injection", &r.injection_channels), ("ejection", &r.ejection_channels), ("local", &r.network_channels)] {
        let v: Vec<f64> = r.channels.iter().filter(|ch| ch.kind == kind).map(|ch| ch.flits_per_cycle).collect();
        assert_eq!(v.len(), agg.count);
        assert!((v.iter().sum::<f64>() / v.len() as f64 - agg.mean).abs() < 1e-9);
        assert_eq!(v.iter().cloned().fold(0.0, f64::max), agg.max);
    }
}

#[test]
fn saturation_is_detected() {
    let mut c = SimConfig::booksim_mesh8x8(0.6);
    c.sim.sample_period = 2_000;
    let r = simulate(&c).unwrap();
    assert!(r.saturated);
    // A saturated mesh still delivers about its capacity.
    assert!(r.accepted_flits_per_node_cycle > 0.3 && r.accepted_flits_per_node_cycle < 0.5);
}

fn run_ok(c: SimConfig) -> veil_memnet::SimResult {
    let r = simulate(&c).unwrap_or_else(|e| panic!("{e}"));
    assert!(!r.saturated, "saturated: {r:?}");
    assert!(r.conservation_ok);
    r
}

#[test]
fn torus_dor_with_dateline_is_deadlock_free_and_shorter_than_mesh() {
    let mut c = quick(SimConfig::booksim_mesh8x8(0.35));
    c.topology = TopologyConfig::Torus { k: 8, n: 2, latency: 1, flit_cycles: 1 };
    let r = run_ok(c);
    // Torus average distance k/4 per dimension (+1 router): 2*2 + 1 = 5.
    assert!((r.avg_hops - 5.0).abs() < 0.1, "{}", r.avg_hops);
}

#[test]
fn torus_without_vc_classes_deadlocks_and_the_watchdog_reports_it() {
    let mut c = quick(SimConfig::booksim_mesh8x8(0.9));
    c.topology = TopologyConfig::Torus { k: 8, n: 1, latency: 1, flit_cycles: 1 };
    c.traffic.pattern = "uniform".into();
    c.router.num_vcs = 1;
    c.router.vc_buf_size = 2;
    c.vc_classes = false;
    c.traffic.packet_size = 8;
    c.traffic.rate = 0.9;
    c.sim.watchdog_cycles = 2_000;
    match simulate(&c) {
        Err(SimError::Deadlock { .. }) => {}
        other => panic!("expected a deadlock report, got {other:?}"),
    }
}

#[test]
fn dragonfly_routings_deliver_everything() {
    for routing in ["min", "valiant", "ugal"] {
        let mut c = quick(SimConfig::booksim_dragonfly72(0.3));
        c.routing = routing.into();
        c.router.num_vcs = 3;
        c.router.vc_buf_size = 32;
        c.topology = TopologyConfig::Dragonfly {
            p: 2, a: 4, h: 2, g: None, local_latency: 2, global_latency: 5, local_flit_cycles: 1, global_flit_cycles: 1,
        };
        let r = run_ok(c);
        match routing {
            "min" => assert!(r.avg_hops <= 4.0),
            "valiant" => assert!(r.avg_hops > 4.0, "{}", r.avg_hops),
            _ => {}
        }
    }
}

#[test]
fn dragonfly_adversarial_traffic_valiant_beats_min() {
    // Every node of group G sends to group G+1 (shift by one group = 8 nodes): minimal routing
    // puts the group's whole load on one global link (capacity 1/8 flit/node/cycle), Valiant
    // spreads it over all global links.
    let mk = |routing: &str| {
        let mut c = SimConfig::booksim_dragonfly72(0.2);
        c.sim.sample_period = 2_000;
        c.routing = routing.into();
        c.router.num_vcs = 3;
        // UGAL (BookSim's, biased to minimal by 30 flits) needs queues deep enough to see the
        // congestion.
        c.router.vc_buf_size = 64;
        c.traffic.pattern = "shift".into();
        c.traffic.shift = 8;
        c.topology = TopologyConfig::Dragonfly {
            p: 2, a: 4, h: 2, g: None, local_latency: 2, global_latency: 5, local_flit_cycles: 1, global_flit_cycles: 1,
        };
        simulate(&c).unwrap()
    };
    let min = mk("min");
    assert!(min.saturated);
    assert!(min.accepted_flits_per_node_cycle < 0.14, "{}", min.accepted_flits_per_node_cycle);
    let val = mk("valiant");
    assert!(!val.saturated && val.conservation_ok);
    // UGAL-L sees the congested minimal port at the source and diverts.
    let ugal = mk("ugal");
    assert!(!ugal.saturated && ugal.conservation_ok);
    assert!(ugal.avg_hops > min.avg_hops, "ugal took no detours");
    let mut c = SimConfig::booksim_dragonfly72(0.1);
    c.traffic.pattern = "nonsense".into();
    assert!(matches!(simulate(&c), Err(SimError::Config(_))));
}

#[test]
fn flatfly_and_file_topologies_deliver_everything() {
    for routing in ["min", "valiant", "ugal"] {
        let mut c = quick(SimConfig::booksim_mesh8x8(0.3));
        c.topology = TopologyConfig::Flatfly { k: 4, c: 2, latency: 1, flit_cycles: 1, noc_latency: false };
        c.routing = routing.into();
        let r = run_ok(c);
        if routing == "min" {
            // Two dimensions, each differs with probability 3/4: 1 + 1.5 routers.
            assert!((r.avg_hops - 2.5).abs() < 0.1, "{}", r.avg_hops);
        }
    }
    let ring = "terminals 2\n0: 1 3\n1: 2 0\n2: 3 1\n3: 0 2@4\n";
    let mut c = quick(SimConfig::booksim_mesh8x8(0.2));
    c.topology = TopologyConfig::File { path: None, text: Some(ring.into()) };
    c.routing = "min".into();
    let r = run_ok(c);
    assert!(r.avg_hops > 1.0 && r.avg_hops < 3.0);
}

#[test]
fn traffic_patterns_and_request_reply() {
    for pat in ["transpose", "bitcomp", "randperm", "hotspot", "neighbor"] {
        // Hotspot: 20% of 64 nodes' packets to node 0 must stay below its ejection capacity.
        let mut c = quick(SimConfig::booksim_mesh8x8(0.05));
        c.traffic.pattern = pat.into();
        run_ok(c);
    }
    let mut c = quick(SimConfig::booksim_mesh8x8(0.05));
    c.traffic.request_reply = true;
    c.traffic.packet_size = 1;
    c.traffic.reply_size = 5;
    let r = run_ok(c);
    assert!(r.avg_packet_latency > 20.0);
}

#[test]
fn batch_mode_finishes_all_packets() {
    let mut c = SimConfig::booksim_mesh8x8(0.0);
    c.traffic.injection = "batch".into();
    c.traffic.batch_size = 50;
    c.traffic.max_outstanding = 4;
    let r = simulate(&c).unwrap();
    assert!(r.conservation_ok);
    assert_eq!(r.packets_measured, 64 * 50);
    assert!(r.batch_cycles.unwrap() > 50 * 4);
}

#[test]
fn memory_does_not_grow_with_simulated_cycles() {
    let mk = |cycles| {
        let mut c = quick(SimConfig::booksim_mesh8x8(0.3));
        c.sim.measure_cycles = cycles;
        let mut e = veil_memnet::sim::Engine::new(&c).unwrap();
        e.run().unwrap();
        e.packet_slots()
    };
    let (a, b) = (mk(5_000), mk(40_000));
    assert!(b as f64 <= a as f64 * 1.5 + 64.0, "{a} -> {b}");
}

fn config_error(c: SimConfig) -> String {
    match simulate(&c) {
        Err(SimError::Config(e)) => e.0,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn bad_input_names_the_problem() {
    let mut c = SimConfig::booksim_dragonfly72(0.1);
    c.routing = "dor".into();
    assert_eq!(config_error(c), "routing: 'dor' does not fit topology 'dragonfly'");
    let mut c = SimConfig::booksim_mesh8x8(0.1);
    c.router.num_vcs = 0;
    assert!(config_error(c).contains("num_vcs"));
    let mut c = SimConfig::booksim_dragonfly72(0.1);
    c.topology = TopologyConfig::Dragonfly {
        p: 2, a: 4, h: 2, g: Some(10), local_latency: 1, global_latency: 1, local_flit_cycles: 1, global_flit_cycles: 1,
    };
    assert!(config_error(c).contains("cannot be built"));
    let mut c = SimConfig::booksim_mesh8x8(0.1);
    c.topology = TopologyConfig::File { path: None, text: Some("0: 1\n1 0\n".into()) };
    c.routing = "min".into();
    assert!(config_error(c).contains("line 2"));
    let mut c = SimConfig::booksim_mesh8x8(0.1);
    c.topology = TopologyConfig::Torus { k: 4, n: 2, latency: 1, flit_cycles: 1 };
    c.router.num_vcs = 1;
    assert!(config_error(c).contains("needs at least 2 VCs"));
    assert!(SimConfig::from_json("{\"bogus\": 1}").is_err());
}

#[test]
fn livelock_watchdog_reports_old_packets() {
    // Near saturation some packets wait hundreds of cycles while the network keeps moving:
    // with a 60-cycle age limit the watchdog must report it rather than keep going.
    let mut c = quick(SimConfig::booksim_mesh8x8(0.40));
    c.sim.max_packet_age = 60;
    match simulate(&c) {
        Err(SimError::Livelock { packet_age, .. }) => assert!(packet_age > 60),
        other => panic!("expected a livelock report, got {other:?}"),
    }
}
