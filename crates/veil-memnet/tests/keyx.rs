//! The boot-time key exchange (paper §III): refused counterfeits, a detected man in the
//! middle, fresh keys per boot, and packets that decrypt only with their pair's key.

use aws_lc_rs::rand::SystemRandom;
use veil_memnet::keyx::{self, Device, KeyxError, Manufacturer, Role};

fn parts(m: &Manufacturer, cpus: u32, modules: u32, rng: &mut SystemRandom) -> (Vec<Device>, Vec<Device>) {
    let c = (0..cpus).map(|i| m.make(Role::Cpu, i, rng).unwrap()).collect();
    let d = (0..modules).map(|i| m.make(Role::Module, i, rng).unwrap()).collect();
    (c, d)
}

#[test]
fn an_uncertified_module_is_refused() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, mut modules) = parts(&m, 2, 3, &mut rng);
    modules[1] = Device::uncertified(Role::Module, 1, &mut rng).unwrap();
    match keyx::boot(&cpus, &modules, &m.public(), 1 << 20) {
        Err(KeyxError::Certificate(s)) => assert!(s.contains("Module 1: not signed by the manufacturer"), "{s}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Certified by another manufacturer: refused too; a CPU certificate shown as a module's as well.
    let other = Manufacturer::new(&mut rng).unwrap();
    modules[1] = other.make(Role::Module, 1, &mut rng).unwrap();
    assert!(matches!(keyx::boot(&cpus, &modules, &m.public(), 1 << 20), Err(KeyxError::Certificate(_))));
    modules[1] = m.make(Role::Cpu, 1, &mut rng).unwrap();
    assert!(matches!(keyx::boot(&cpus, &modules, &m.public(), 1 << 20), Err(KeyxError::Certificate(_))));
}

#[test]
fn a_man_in_the_middle_is_detected() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 1, &mut rng);
    let pk = m.public();
    // He replaces either ephemeral key with his own (to learn the pair's secret): detected.
    for step in [1u8, 2] {
        let mallory = aws_lc_rs::agreement::EphemeralPrivateKey::generate(&aws_lc_rs::agreement::X25519, &rng).unwrap();
        let his = mallory.compute_public_key().unwrap().as_ref().to_vec();
        let r = keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| {
            if s == step {
                if step == 1 {
                    w.initiator_ephemeral = his.clone();
                } else {
                    w.responder_ephemeral = his.clone();
                }
            }
        });
        assert!(matches!(r, Err(KeyxError::Transcript(_))), "step {step}: {:?}", r.map(|_| ()));
    }
    // He presents his own genuine-looking part (a certified module of the same manufacturer, another
    // id) in the middle: the CPU expected module 0.
    let imposter = m.make(Role::Module, 7, &mut rng).unwrap();
    let ic = imposter.cert.clone();
    let r = keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| {
        if s == 2 {
            w.responder_cert = ic.clone();
        }
    });
    assert!(matches!(r, Err(KeyxError::Certificate(_)) | Err(KeyxError::Transcript(_))));
    // Untouched, both ends derive the same keys.
    let (a, b) = keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |_, _| {}).unwrap();
    assert_eq!(a, b);
}

#[test]
fn two_boots_give_different_keys_and_pairs_differ() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 2, 4, &mut rng);
    let a = keyx::boot(&cpus, &modules, &m.public(), 1 << 20).unwrap();
    let b = keyx::boot(&cpus, &modules, &m.public(), 1 << 20).unwrap();
    let mut keys = std::collections::HashSet::new();
    for (x, y) in a.pairs.iter().zip(&b.pairs) {
        assert_ne!(x.forward.key, y.forward.key);
        assert_ne!(x.backward.nonce, y.backward.nonce);
        keys.insert(x.forward.key);
        keys.insert(x.backward.key);
    }
    assert_eq!(keys.len(), 2 * 8, "every pair and direction has its own key");
}

#[test]
fn packets_decrypt_only_with_their_pairs_key_and_rekey_at_saturation() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 2, 3, &mut rng);
    let limit = 4;
    let mut sender = keyx::boot(&cpus, &modules, &m.public(), limit).unwrap();
    // The module ends hold the same keys (the exchange's two views are equal).
    let mut receiver = keyx::Booted { pairs: sender.pairs.clone(), modules: 3 };
    let mut seen_keys = std::collections::HashSet::new();
    for i in 0..30u32 {
        let (c, d) = ((i % 2) as usize, (i % 3) as usize);
        let plain: Vec<u8> = (0..64).map(|b| (b as u32 * 7 + i) as u8).collect();
        let mut packet = plain.clone();
        let ctr = sender.pair(c, d).forward.seal(&mut packet);
        seen_keys.insert(sender.pair(c, d).forward.key);
        assert_ne!(packet, plain);
        // Every other pair's current key gives garbage.
        for (j, other) in receiver.pairs.iter().enumerate() {
            if j != c * 3 + d {
                let mut p = packet.clone();
                let k = &other.forward;
                keyx::otp(&k.key, &k.nonce, ctr, &mut p);
                assert_ne!(p, plain);
            }
        }
        // The pair's receiver, stepping its own counter (and re-keying at the same point), recovers it.
        let mut got = packet.clone();
        assert_eq!(receiver.pair(c, d).forward.seal(&mut got), ctr);
        assert_eq!(got, plain);
    }
    // Each pair sent 5 packets with a limit of 4 pads per key: every pair re-keyed once.
    assert!(sender.pairs.iter().all(|p| p.forward.epoch == 1));
    assert_eq!(seen_keys.len(), 12);
}

#[test]
fn a_module_to_module_exchange_checks_both_roles() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 2, &mut rng);
    let pk = m.public();
    let both = (Role::Module, Role::Module);
    let (a, b) = keyx::exchange_between(&modules[0], &modules[1], both, &pk, 1 << 20, &mut rng, &mut |_, _| {}).unwrap();
    assert_eq!(a, b);
    // A CPU answering where module 1 was expected, or a module certificate swapped for another's: refused.
    let r = keyx::exchange_between(&modules[0], &cpus[0], both, &pk, 1 << 20, &mut rng, &mut |_, _| {});
    assert!(matches!(r, Err(KeyxError::Certificate(_))), "{:?}", r.map(|_| ()));
    let c0 = modules[0].cert.clone();
    let r = keyx::exchange_between(&modules[0], &modules[1], both, &pk, 1 << 20, &mut rng, &mut |w, s| {
        if s == 2 {
            w.responder_cert = c0.clone();
        }
    });
    assert!(matches!(r, Err(KeyxError::Certificate(_))), "{:?}", r.map(|_| ()));
}
