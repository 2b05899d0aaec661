//! Routers stepped on several threads give exactly the serial run's results: every random
//! draw is made serially in router order after the parallel step, so BookSim2-compatible
//! runs stay draw for draw too.

use veil_memnet::sim::Engine;
use veil_memnet::{SimConfig, SimResult, TopologyConfig};

fn short(mut c: SimConfig) -> SimConfig {
    c.sim.mode = "fixed".into();
    c.sim.warmup_cycles = 1_000;
    c.sim.measure_cycles = 3_000;
    c.histogram = true;
    c.channel_detail = true;
    c
}

fn run(cfg: &SimConfig, threads: usize) -> (SimResult, usize) {
    let mut e = Engine::new(cfg).expect("config");
    e.force_threads(threads);
    let used = e.threads();
    let mut r = e.run().expect("run");
    assert_eq!(r.threads, used);
    r.wall_seconds = 0.0;
    r.threads = 0;
    (r, used)
}

fn same_for_1_2_3_threads(cfg: SimConfig) -> SimResult {
    let (one, t1) = run(&cfg, 1);
    assert_eq!(t1, 1);
    assert!(one.packets_delivered > 1_000, "too little traffic to compare: {}", one.packets_delivered);
    for n in [2, 3] {
        let (par, tn) = run(&cfg, n);
        assert_eq!(tn, n, "the run did not step on {n} threads");
        assert_eq!(one, par, "{n} threads changed the results");
    }
    one
}

#[test]
fn mesh_booksim_draws_identical_on_threads() {
    let r = same_for_1_2_3_threads(short(SimConfig::booksim_mesh8x8(0.3)));
    assert!(r.conservation_ok);
}

#[test]
fn dragonfly_speedup_two_identical_on_threads() {
    same_for_1_2_3_threads(short(SimConfig::booksim_dragonfly72(0.45)));
}

#[test]
fn dragonfly_ugal_streams_identical_on_threads() {
    let mut c = short(SimConfig::booksim_dragonfly72(0.3));
    c.routing = "ugal".into();
    c.router.num_vcs = 3;
    c.rng = "streams".into();
    same_for_1_2_3_threads(c);
}

/// Torus DOR draws while routing (the lookahead step), so here the serial merge is what
/// keeps BookSim2's global generator in order.
#[test]
fn torus_draws_while_routing_identical_on_threads() {
    let mut c = short(SimConfig::booksim_mesh8x8(0.3));
    c.topology = TopologyConfig::Torus { k: 6, n: 2, latency: 1, flit_cycles: 1 };
    c.router.num_vcs = 4;
    same_for_1_2_3_threads(c);
}

#[test]
fn route_stage_steps_serially() {
    let mut c = short(SimConfig::booksim_mesh8x8(0.2));
    c.router.routing_delay = 1;
    let (one, _) = run(&c, 1);
    let (two, used) = run(&c, 2);
    assert_eq!(used, 1, "a route computation stage draws inside routers: must stay serial");
    assert_eq!(one, two);
}

#[test]
fn small_networks_stay_serial_by_default() {
    let mut c = SimConfig::booksim_mesh8x8(0.1);
    c.threads = Some(2);
    assert_eq!(Engine::new(&c).unwrap().threads(), 1, "64 routers is below the threshold");
    let mut c = SimConfig::booksim_dragonfly72(0.1);
    if let TopologyConfig::Dragonfly { p, a, h, .. } = &mut c.topology {
        (*p, *a, *h) = (4, 8, 4);
    }
    c.threads = Some(2);
    assert_eq!(Engine::new(&c).unwrap().threads(), 2, "264 routers is above it");
}

#[test]
fn bad_thread_counts_are_config_errors() {
    for n in [0, 1025] {
        let mut c = SimConfig::default();
        c.threads = Some(n);
        let e = Engine::new(&c).err().expect("must be rejected");
        assert!(e.0.starts_with("threads:"), "{}", e.0);
    }
    let mut c = SimConfig::default();
    c.threads = Some(1024);
    assert!(Engine::new(&c).is_ok());
}

/// An observer attached mid-run sends a threaded engine back to serial stepping; the events
/// its shares held must carry over so that everything after is what a serial run does.
#[test]
fn observer_attached_mid_run_sees_what_a_serial_run_sees() {
    use std::any::Any;
    use veil_memnet::observe::Observations;
    let mut cfg = SimConfig::booksim_dragonfly72(0.45);
    cfg.sim.mode = "fixed".into();
    let watch = |threads: usize| {
        let mut e = Engine::new(&cfg).expect("config");
        e.force_threads(threads);
        for _ in 0..700 {
            e.step().expect("step");
        }
        e.observe(Box::new(Observations::new(1 << 20)));
        for _ in 0..1_300 {
            e.step().expect("step");
        }
        let o = e.take_observer().and_then(|o| (o as Box<dyn Any>).downcast::<Observations>().ok()).expect("observations");
        (o.ch_cycle, o.ch_id, o.inj_cycle, o.inj_src, o.inj_dst, e.flits_in_flight())
    };
    let one = watch(1);
    assert!(one.0.len() > 10_000, "too few channel traversals to compare: {}", one.0.len());
    assert_eq!(one, watch(3), "attaching an observer to a threaded run changed what follows");
}
