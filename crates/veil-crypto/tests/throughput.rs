use veil_crypto::{engines, throughput};

#[test]
fn every_engine_runs_and_counts_bytes() {
    for (name, doc) in engines() {
        assert!(!doc.is_empty());
        let t = throughput(name, 4096, 2, 0.0).unwrap();
        assert!(t.iterations >= 2, "{name}: at least one pass per thread");
        assert_eq!(t.bytes, t.iterations * 4096, "{name}");
        assert!(t.seconds > 0.0 && (t.gbps - t.bytes as f64 / t.seconds / 1e9).abs() < 1e-9);
    }
}

#[test]
fn min_seconds_is_honoured() {
    let t = throughput("aes-128-ctr", 1 << 16, 1, 0.05).unwrap();
    assert!(t.seconds >= 0.05, "{t:?}");
}

#[test]
fn bad_arguments_are_errors() {
    let e = throughput("rot13", 64, 1, 0.0).unwrap_err().to_string();
    assert!(
        e.starts_with("unknown engine 'rot13'; known engines: aes-128-ecb, "),
        "{e}"
    );
    assert!(e.contains("tdes-ecb"));
    assert!(throughput("aes-128-ecb", 17, 1, 0.0)
        .unwrap_err()
        .to_string()
        .contains("multiple of 16"));
    assert!(throughput("xts-aes-128-line", 96, 1, 0.0)
        .unwrap_err()
        .to_string()
        .contains("multiple of 64"));
    assert!(throughput("aes-128-gcm", 0, 1, 0.0).is_err());
    assert!(throughput("aes-128-gcm", 16, 0, 0.0).is_err());
    assert!(throughput("aes-128-gcm", 16, 1, f64::NAN).is_err());
    assert!(throughput("aes-128-gcm", 16, 1, -1.0).is_err());
}
