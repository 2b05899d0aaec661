//! A functional run's OTP engines take their keys from the boot-time key exchange: its packets
//! decrypt with their pair's exchanged key (stepped to the packet's epoch after a counter
//! saturated), and not with another pair's key, a stale epoch's or the master-derived key the
//! engines used before; the boot is deterministic for a seed and differs between seeds.

use veil_crypto::{ctr_xor, AesCipher};
use veil_memnet::keyx::{Keyring, Role};
use veil_memnet::memsys::functional::Captured;
use veil_memnet::memsys::{MemSysConfig, MemSystem, MemSysResult};

/// Two CPUs send most requests to one module (hotspot, UGAL's detours included), with a 10-bit
/// counter so the pairs re-key several times; `injection` ghost_nonminimal routes each request
/// through a module, so module-to-module legs are encrypted too.
fn config(seed: u64, injection: &str) -> MemSysConfig {
    let mut c = MemSysConfig::default();
    c.network.seed = seed;
    c.network.routing = "ugal".into();
    c.injection = injection.into();
    c.cpu.count = 2;
    c.workload.kind = "hotspot".into();
    // Carriers spread a request over more pairs: fewer requests keep the run short.
    c.workload.requests_per_cpu = if injection == "minimal" { 600 } else { 100 };
    c.workload.hotspot_fraction = 0.9;
    c.encryption.uarch = "source_otp".into();
    c.encryption.functional = true;
    c.encryption.check_bits = 8;
    c.encryption.foreign_checks = 2;
    c.encryption.counter_bits = 10;
    c
}

fn run(seed: u64, injection: &str) -> (MemSysResult, Vec<Captured>, Vec<Role>) {
    let mut s = MemSystem::new(&config(seed, injection)).unwrap();
    s.functional_mut().unwrap().capture = usize::MAX;
    let mut r = s.run().unwrap();
    r.wall_seconds = 0.0;
    r.cycles_per_second = 0.0;
    let f = s.functional_mut().unwrap();
    let roles = f.keyring().roles().to_vec();
    (r, std::mem::take(&mut f.captured), roles)
}

/// The encrypted part of a packet (after its 8 plaintext bytes) under key and nonce.
fn open(p: &Captured, key: &[u8; 16], nonce: &[u8]) -> Vec<u8> {
    let mut out = p.wire.clone();
    ctr_xor(key, &nonce[..8], p.counter, &mut out[8..]).unwrap();
    out
}

/// The key derivation the engines used before the boot exchange fed them.
fn master_key(seed: u64, s: u32, d: u32, epoch: u32) -> ([u8; 16], [u8; 8]) {
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..].copy_from_slice(b"memnetky");
    let master = AesCipher::new(&key).unwrap();
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&s.to_le_bytes());
    k[4..8].copy_from_slice(&d.to_le_bytes());
    k[8..12].copy_from_slice(&epoch.to_le_bytes());
    let mut n = k;
    n[12] = 1;
    master.encrypt(&mut k);
    master.encrypt(&mut n);
    (k, n[..8].try_into().unwrap())
}

#[test]
fn functional_packets_decrypt_only_with_their_pairs_exchanged_key() {
    for injection in ["minimal", "ghost_nonminimal"] {
        check_packets(injection);
    }
}

fn check_packets(injection: &str) {
    let (r, packets, roles) = run(1, injection);
    let f = r.functional.as_ref().unwrap();
    assert_eq!(f.mismatches, 0);
    assert_eq!(f.rejected_at_destination, 0);
    assert_eq!(packets.len() as u64, f.packets);
    if injection == "minimal" {
        assert!(r.otp.rekeys > 0, "the 10-bit counter saturates");
        assert!(packets.iter().any(|p| p.epoch >= 2), "some pair re-keyed at least twice");
    }
    let module_legs = packets.iter().filter(|p| roles[p.src as usize] == Role::Module && roles[p.dst as usize] == Role::Module).count();
    assert_eq!(module_legs > 0, injection == "ghost_nonminimal", "{module_legs} module-to-module packets");
    // A fresh boot of the same seed, outside the simulator.
    let mut ring = Keyring::new(1, &roles).unwrap();
    let nodes = roles.len() as u32;
    for (i, p) in packets.iter().enumerate() {
        assert_ne!(p.wire[8..], p.plain[8..], "packet {i} is encrypted");
        let k = ring.direction(p.src, p.dst, p.epoch).unwrap();
        assert_eq!(open(p, &k.key, &k.nonce), p.plain, "packet {i} ({} -> {}, epoch {})", p.src, p.dst, p.epoch);
        // Not with the reverse direction, another destination's or another source's key.
        let other_dst = (p.dst + 1 + (i as u32 % (nodes - 1))) % nodes;
        let other_src = (p.src + 1 + (i as u32 % (nodes - 1))) % nodes;
        for (s, d) in [(p.dst, p.src), (p.src, other_dst), (other_src, p.dst)] {
            if (s, d) != (p.src, p.dst) {
                let o = ring.direction(s, d, p.epoch).unwrap();
                assert_ne!(open(p, &o.key, &o.nonce), p.plain, "packet {i} under {s} -> {d}'s key");
            }
        }
        // Not with the pair's key of an earlier epoch (the ratchet moved on).
        if p.epoch > 0 {
            let old = ring.direction(p.src, p.dst, p.epoch - 1).unwrap();
            assert_ne!(open(p, &old.key, &old.nonce), p.plain, "packet {i} under epoch {}", p.epoch - 1);
        }
        // Not with the master-derived key of before.
        let (mk, mn) = master_key(1, p.src, p.dst, p.epoch);
        assert_ne!(open(p, &mk, &mn), p.plain, "packet {i} under the master-derived key");
    }
    println!("{injection}: {} packets ({module_legs} module-to-module), {} exchanges", packets.len(), ring.exchanges);
}

#[test]
fn the_boot_is_deterministic_for_a_seed_and_differs_between_seeds() {
    let (a, pa, roles) = run(3, "minimal");
    let (b, pb, _) = run(3, "minimal");
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    assert_eq!(pa.len(), pb.len());
    assert!(pa.iter().zip(&pb).all(|(x, y)| x.wire == y.wire));
    let mut r3 = Keyring::new(3, &roles).unwrap();
    let mut r4 = Keyring::new(4, &roles).unwrap();
    let mut keys = std::collections::HashSet::new();
    for s in 0..6u32 {
        for d in 0..6u32 {
            let (k3, k4) = (r3.direction(s, d, 0).unwrap(), r4.direction(s, d, 0).unwrap());
            assert_ne!(k3.key, k4.key, "{s} -> {d}");
            assert_ne!(k3.nonce, k4.nonce, "{s} -> {d}");
            keys.insert(k3.key);
        }
    }
    assert_eq!(keys.len(), 36, "every direction of every pair has its own key");
}
