//! More configurations checked against BookSim2 draw for draw. Each row was measured with
//! BookSim2 28f4329 built from its public source (dragonfly rows with -DDRAGON_LATENCY), using
//! the reference curves' settings (iq router, separable_input_first allocators, credit_delay
//! 2, routing_delay 0, 1-cycle VA/SA/ST, uniform Bernoulli traffic, injection_rate_uses_flits,
//! seed 1, 3 warm-up periods, latency threshold 500) except sample_period = 2000 and the
//! changes named in the row. BookSim2's torus links have latency 2 (use_noc_latency).

use veil_memnet::{simulate, SimConfig};

/// (what differs from the reference setup, memnet config, offered load, BookSim2 packet
/// latency, BookSim2 cycles simulated)
fn rows() -> Vec<(&'static str, &'static str, f64, f64, u64)> {
    vec![
        ("torus k=8, dim_order", r#"{"topology":{"kind":"torus","k":8,"latency":2}}"#, 0.30, 33.9236, 12098),
        ("torus k=8, dim_order, low load", r#"{"topology":{"kind":"torus","k":8,"latency":2}}"#, 0.05, 29.3839, 12085),
        ("torus k=5, dim_order", r#"{"topology":{"kind":"torus","k":5,"latency":2}}"#, 0.40, 25.5468, 12069),
        ("torus k=4, dim_order", r#"{"topology":{"kind":"torus","k":4,"latency":2}}"#, 0.10, 19.6662, 12041),
        ("mesh k=4, 2 VCs x 4, 1-flit packets",
         r#"{"topology":{"kind":"mesh","k":4},"router":{"num_vcs":2,"vc_buf_size":4},"traffic":{"packet_size":1}}"#, 0.30, 16.5488, 12056),
        ("internal_speedup 1.5", r#"{"router":{"internal_speedup":1.5}}"#, 0.35, 34.2611, 12166),
        ("wait_for_tail_credit 1", r#"{"router":{"wait_for_tail_credit":true}}"#, 0.30, 43.8198, 12173),
        ("routing_delay 1, st_final_delay 2", r#"{"router":{"routing_delay":1,"st_delay":2}}"#, 0.20, 49.8678, 12168),
        ("traffic bitcomp", r#"{"traffic":{"pattern":"bitcomp"}}"#, 0.20, 57.4888, 12178),
        ("2 VCs x 4, 8-flit packets", r#"{"router":{"num_vcs":2,"vc_buf_size":4},"traffic":{"packet_size":8}}"#, 0.20, 47.3392, 12134),
        ("dragonflynew k=3 (p=3, a=6, h=3, 342 nodes), min, 2 VCs x 256, speedup 2",
         r#"{"topology":{"kind":"dragonfly","p":3,"a":6,"h":3,"local_latency":10,"global_latency":100},"routing":"min","router":{"num_vcs":2,"vc_buf_size":256,"internal_speedup":2.0}}"#,
         0.30, 127.439, 12375),
        ("dragonflynew k=2, ugal (3 VCs x 256), speedup 2",
         r#"{"topology":{"kind":"dragonfly","p":2,"a":4,"h":2,"local_latency":10,"global_latency":100},"routing":"ugal","router":{"num_vcs":3,"vc_buf_size":256,"internal_speedup":2.0}}"#,
         0.10, 117.035, 12417),
        ("dragonflynew k=2, ugal (3 VCs x 256), speedup 2, higher load",
         r#"{"topology":{"kind":"dragonfly","p":2,"a":4,"h":2,"local_latency":10,"global_latency":100},"routing":"ugal","router":{"num_vcs":3,"vc_buf_size":256,"internal_speedup":2.0}}"#,
         0.40, 138.902, 12640),
    ]
}

#[test]
fn more_configurations_match_booksim_draw_for_draw() {
    for (what, json, rate, lat, cycles) in rows() {
        let mut c = SimConfig::from_json(json).unwrap();
        c.rng = "booksim".into();
        c.sim.sample_period = 2000;
        c.traffic.rate = rate;
        let r = simulate(&c).unwrap();
        assert!(!r.saturated, "{what}");
        assert_eq!(r.cycles_simulated, cycles, "{what}: cycles");
        assert!((r.avg_packet_latency - lat).abs() < 1e-3, "{what}: latency {} vs BookSim2 {lat}", r.avg_packet_latency);
    }
}

#[test]
fn transpose_saturates_where_booksim_does() {
    // BookSim2: transpose at 0.2 aborts after 3 periods with mean latency 271.933.
    let mut c = SimConfig::booksim_mesh8x8(0.2);
    c.traffic.pattern = "transpose".into();
    c.sim.sample_period = 2000;
    let r = simulate(&c).unwrap();
    assert!(r.saturated);
    assert_eq!(r.cycles_simulated, 6000);
    assert!((r.avg_packet_latency - 271.933).abs() < 1e-3, "{}", r.avg_packet_latency);
}
