use std::time::Instant;

use veil_crypto::{engines, throughput, throughput_over};

#[test]
fn every_engine_runs_and_counts_bytes() {
    for (name, doc) in engines() {
        assert!(!doc.is_empty());
        // A clock outside the call bounds the engine's own: the reported rate lies between bytes
        // over this wall time and bytes over the requested minimum time.
        let t0 = Instant::now();
        let t = throughput(name, 4096, 2, 0.01).unwrap();
        let wall = t0.elapsed().as_secs_f64();
        assert!(t.iterations >= 2, "{name}: at least one pass per thread");
        assert_eq!(t.bytes, t.iterations * 4096, "{name}");
        assert!(
            t.seconds >= 0.01 && t.seconds <= wall,
            "{name}: {t:?}, wall {wall}"
        );
        let lo = t.bytes as f64 / wall / 1e9;
        let hi = t.bytes as f64 / 0.01 / 1e9;
        assert!(
            t.gbps >= lo && t.gbps <= hi,
            "{name}: {t:?} outside [{lo}, {hi}]"
        );
    }
}

#[test]
fn min_seconds_is_honoured() {
    let t = throughput("aes-128-ctr", 1 << 16, 1, 0.05).unwrap();
    assert!(t.seconds >= 0.05, "{t:?}");
}

#[test]
fn a_working_set_larger_than_the_caches_streams_from_memory() {
    // 64 MiB of 256 KB buffers, cycled: at least one pass over all 256 of them, and every byte
    // counted is a byte encrypted. Which of the two is faster is a speed claim: it lives in
    // `veil bench oram` (streaming beside in-cache, same run), not here, where a busy machine
    // would make it flaky.
    let in_cache = throughput_over("aes-128-gcm", 1 << 18, 1, 0.2, 1 << 18).unwrap();
    let streaming = throughput_over("aes-128-gcm", 1 << 18, 1, 0.2, 64 << 20).unwrap();
    assert!(
        streaming.iterations >= 256 && streaming.seconds >= 0.2,
        "{streaming:?}"
    );
    for t in [&in_cache, &streaming] {
        assert_eq!(t.bytes, t.iterations * (1 << 18), "{t:?}");
        assert!(
            t.gbps > 0.0 && (t.gbps - t.bytes as f64 / t.seconds / 1e9).abs() < 1e-9 * t.gbps,
            "{t:?}"
        );
    }
    assert!(throughput_over("aes-128-gcm", 16, 1, 0.0, (1 << 32) + 1).is_err());
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
