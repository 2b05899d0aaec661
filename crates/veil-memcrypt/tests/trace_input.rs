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
    let run = Run { config: Config::default(), trace: Some(p32.to_string_lossy().into()), synth: None, max_records: 0 };
    match simulate_run(&run, &|| false) {
        Err(Error::Config(m)) => assert!(m.starts_with("trace:") && m.contains("32-byte lines"), "{m}"),
        other => panic!("expected a config error, got {other:?}"),
    }
    assert!(matches!(simulate_run(&run, &|| true), Err(Error::Config(_))), "line size is checked before running");
    std::fs::remove_dir_all(&dir).unwrap();
}
