//! Ctrl-C: a run stops within a few thousand cycles of `veil_core::interrupt::request()`.
//! Its own test binary, because the stop flag is process-wide.

use std::time::{Duration, Instant};

use veil_memnet::{simulate, SimConfig, SimError};

#[test]
fn a_requested_interrupt_stops_a_long_run_promptly() {
    let mut cfg = SimConfig::default();
    cfg.sim.mode = "fixed".into();
    cfg.sim.warmup_cycles = 0;
    cfg.sim.measure_cycles = 2_000_000_000; // hours of simulation if nothing stops it
    veil_core::interrupt::clear();
    let run = std::thread::spawn(move || simulate(&cfg));
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    veil_core::interrupt::request();
    let out = run.join().unwrap();
    let waited = asked.elapsed();
    veil_core::interrupt::clear();
    assert!(matches!(out, Err(SimError::Interrupted)), "got {out:?}");
    assert!(waited < Duration::from_secs(2), "stopped {waited:?} after the request");
}
