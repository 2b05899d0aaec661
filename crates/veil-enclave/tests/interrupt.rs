//! Ctrl-C: a simulation stops within a few thousand events of `veil_core::interrupt::request()`.
//! Its own test binary, because the stop flag is process-wide.

use std::time::{Duration, Instant};

use veil_enclave::{simulate, Config};

#[test]
fn a_requested_interrupt_stops_a_long_simulation_promptly() {
    let cfg = Config { requests: 20_000_000, ..Config::default() };
    veil_core::interrupt::clear();
    let run = std::thread::spawn(move || simulate(&cfg));
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    veil_core::interrupt::request();
    let out = run.join().unwrap();
    let waited = asked.elapsed();
    veil_core::interrupt::clear();
    assert_eq!(out.map(|r| r.requests_completed), Err("interrupted".to_string()));
    assert!(waited < Duration::from_secs(2), "stopped {waited:?} after the request");
}
