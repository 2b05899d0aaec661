//! Traces in veil-trace's file format: the functional check and the timing model read them, and
//! a trace with the wrong line size is refused with one line naming it.

use veil_memcrypt::input::{check_run, simulate_run, Run};
use veil_memcrypt::synth::{Synth, SynthConfig};
use veil_memcrypt::{Config, Error};

fn write_trace(path: &std::path::Path, line_size: u32) {
    let s = SynthConfig { records: 5000, footprint_lines: 2048, cache_lines: 128, run_lines: 8, ..Default::default() };
    veil_memcrypt::input::write_synth_trace(&path.to_string_lossy(), line_size, &s).unwrap();
}

#[test]
fn a_trace_file_checks_clean_and_times() {
    let dir = std::env::temp_dir().join(format!("veil-memcrypt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.vtrace");
    write_trace(&p, 64);
    for cipher in ["tdes", "aes128"] {
        let run = Run {
            config: Config { cipher: cipher.into(), ..Default::default() },
            trace: Some(p.to_string_lossy().into()),
            synth: None,
            max_records: 0,
            skip_records: 0,
            sampling: None,
        };
        let c = check_run(&run, &|| false).unwrap();
        assert!(c.fetches > 3000);
        assert_eq!((c.external_updates, c.integrity_failures, c.false_hits), (0, 0, 0), "{cipher}");
        assert!(c.ct_hits > 0 && c.mac_hits == c.ct_hits);
        let r = simulate_run(&run, &|| false).unwrap();
        assert_eq!(r.load_fills + r.store_fills, c.fetches);
    }
    let p32 = dir.join("t32.vtrace");
    write_trace(&p32, 32);
    let run = Run { config: Config::default(), trace: Some(p32.to_string_lossy().into()), synth: None, max_records: 0, skip_records: 0, sampling: None };
    match simulate_run(&run, &|| false) {
        Err(Error::Config(m)) => assert!(m.starts_with("trace:") && m.contains("32-byte lines"), "{m}"),
        other => panic!("expected a config error, got {other:?}"),
    }
    assert!(matches!(simulate_run(&run, &|| true), Err(Error::Config(_))), "line size is checked before running");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_trace_read_again_gives_the_same_results_and_a_rewritten_one_its_own() {
    // The second run of a trace prefix comes from the decoded records the first one kept.
    let dir = std::env::temp_dir().join(format!("veil-memcrypt-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.vtrace");
    let run = |cfg: Config| Run { config: cfg, trace: Some(p.to_string_lossy().into()), synth: None, max_records: 4000, skip_records: 0, sampling: None };
    let json = |r: &veil_memcrypt::Results| serde_json::to_string(r).unwrap();
    write_trace(&p, 64);
    let first = simulate_run(&run(Config::default()), &|| false).unwrap();
    assert_eq!(first.records, 4000);
    let again = simulate_run(&run(Config::default()), &|| false).unwrap();
    assert_eq!(json(&first), json(&again));
    let tdes = Config { cipher: "tdes".into(), ..Default::default() };
    let c = check_run(&run(tdes), &|| false).unwrap();
    assert_eq!((c.false_hits, c.integrity_failures, c.external_updates), (0, 0, 0));
    // Another stream under the same name: its own results, not the kept ones.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let s = SynthConfig { records: 5000, footprint_lines: 4096, cache_lines: 256, seed: 9, ..Default::default() };
    veil_memcrypt::input::write_synth_trace(&p.to_string_lossy(), 64, &s).unwrap();
    let other = simulate_run(&run(Config::default()), &|| false).unwrap();
    let direct = veil_memcrypt::simulate(&Config::default(), Synth::new(s).take(4000).map(Ok), &|| false).unwrap();
    assert_eq!(json(&other), json(&direct));
    assert_ne!(json(&other), json(&first));
    // Stopped on its first record: Ctrl-C reaches a run served from memory too.
    assert!(matches!(simulate_run(&run(Config::default()), &|| true), Err(Error::Interrupted)));
    std::fs::remove_dir_all(&dir).ok();
}
