//! What the adversary sees under `constant_rate` and `broadcast` (`veil memnet leak`'s runs:
//! the default 64-module system, `source_otp`, observation on), pinned to values recorded on
//! 28 Nov 2026 before any work on their speed: a change that makes these runs faster must
//! leave every injection and channel traversal where it was.

use veil_memnet::memsys::observed::memsys_observed;
use veil_memnet::memsys::MemSysConfig;

/// FNV-1a over the little-endian bytes of every recorded event (stable across Rust versions,
/// unlike `DefaultHasher`).
fn fnv(o: &veil_memnet::memsys::observed::Observed) -> u64 {
    o.obs.fnv1a()
}

/// (runtime cycles, dummies, injections, channel traversals, FNV-1a of every event).
type Seen = (u64, u64, usize, usize, u64);

fn run(alg: &str, seed: u64) -> Seen {
    let mut c = MemSysConfig::default();
    c.cpu.count = 4;
    c.workload.requests_per_cpu = 10;
    c.workload.insts_per_miss = 200.0;
    c.encryption.uarch = "source_otp".into();
    c.injection = alg.into();
    c.network.seed = seed;
    let o = memsys_observed(&c).unwrap();
    assert!(o.obs.complete_until == u64::MAX, "the recording was cut");
    (o.result.runtime_cycles, o.result.dummies, o.obs.inj_cycle.len(), o.obs.ch_cycle.len(), fnv(&o))
}

#[test]
fn constant_rate_and_broadcast_observations_are_unchanged() {
    let got: Vec<_> = [("constant_rate", 0), ("constant_rate", 2), ("broadcast", 0), ("broadcast", 2)]
        .iter()
        .map(|&(a, s)| (a, s, run(a, s)))
        .collect();
    let want: [(&str, u64, Seen); 4] = [
        ("constant_rate", 0, (47628, 24658, 24738, 111561, 11627120460646975831)),
        ("constant_rate", 2, (47240, 24443, 24523, 110582, 13845304910949421957)),
        ("broadcast", 0, (1755, 2420, 5120, 15280, 8458101716304839791)),
        ("broadcast", 2, (1664, 2420, 5120, 15280, 2386592790477682935)),
    ];
    assert_eq!(got, want);
}
