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
    // 16 pad blocks per key: four 64-byte packets.
    let limit = 16;
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
        assert_eq!(receiver.pair(c, d).forward.open(&mut got), ctr);
        assert_eq!(got, plain);
    }
    // Each pair sent 5 packets of 4 blocks with 16 blocks per key: every pair re-keyed once.
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

/// The counter blocks a sealed all-zero payload used, read back from the pad itself: each full
/// 16-byte block of the pad is AES(key, counter block), so decrypting it under the key gives the
/// block the engine really encrypted (not the counter it reports). A partial last block is
/// checked against the next block after the full ones.
fn used_blocks(key: &[u8; 16], pad: &[u8]) -> Vec<[u8; 16]> {
    use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
    let aes = aes::Aes128::new(key.into());
    let mut blocks: Vec<[u8; 16]> = Vec::new();
    for chunk in pad.chunks(16) {
        if chunk.len() == 16 {
            let mut b = aes::Block::clone_from_slice(chunk);
            aes.decrypt_block(&mut b);
            blocks.push(b.into());
        } else {
            // The tail's block follows the last full one (or is the packet's first block).
            let next = match blocks.last() {
                Some(prev) => {
                    let mut n = *prev;
                    let c = u32::from_be_bytes(n[12..].try_into().unwrap()).wrapping_add(1);
                    n[12..].copy_from_slice(&c.to_be_bytes());
                    n
                }
                None => panic!("a packet under 16 bytes has no full block to read the counter from"),
            };
            let mut e = aes::Block::from(next);
            aes.encrypt_block(&mut e);
            assert_eq!(&e[..chunk.len()], chunk, "the tail's pad is not the block after the full ones");
            blocks.push(next);
        }
    }
    blocks
}

#[test]
fn no_pad_block_is_used_twice_across_consecutive_packets() {
    use aes::cipher::{BlockEncrypt, KeyInit};
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 1, &mut rng);
    let lengths = [1usize, 15, 16, 17, 64, 1000, 0, 31, 32, 33, 80, 5, 48, 200, 16, 1];
    // A small key range (re-keying every few packets) and a large one (no re-keying).
    for limit in [70u32, 1 << 20] {
        let booted = keyx::boot(&cpus, &modules, &m.public(), limit).unwrap();
        let f = &booted.pairs[0].forward;
        let (mut tx, mut tx2, mut rx) = (f.clone(), f.clone(), f.clone());
        let mut seen = std::collections::HashSet::new();
        let mut total = 0usize;
        for round in 0..12 {
            for (i, &len) in lengths.iter().enumerate() {
                let mut pad = vec![0u8; len];
                let ctr = tx.seal(&mut pad);
                let blocks = if len == 0 {
                    vec![]
                } else if len < 16 {
                    // One partial block: it must be the block `nonce || ctr` under the current key.
                    let mut iv = [0u8; 16];
                    iv[..12].copy_from_slice(&tx.nonce);
                    iv[12..].copy_from_slice(&ctr.to_be_bytes());
                    let mut e = aes::Block::from(iv);
                    aes::Aes128::new((&tx.key).into()).encrypt_block(&mut e);
                    assert_eq!(&e[..len], &pad[..], "packet {i}'s pad is not AES(key, nonce || counter)");
                    vec![iv]
                } else {
                    used_blocks(&tx.key, &pad)
                };
                for b in blocks {
                    assert!(seen.insert((tx.key, b)), "limit {limit}, round {round}, packet {i} ({len} bytes) reuses a pad block");
                    total += 1;
                }
                // The same packet's plaintext, sealed by a second sender in step with the first,
                // opens at the receiver (which steps its own counter and re-keys at the same point).
                let plain: Vec<u8> = (0..len).map(|b| (b * 31 + i + round) as u8).collect();
                let mut wire = plain.clone();
                assert_eq!(tx2.seal(&mut wire), ctr);
                let expect: Vec<u8> = plain.iter().zip(&pad).map(|(p, k)| p ^ k).collect();
                assert_eq!(wire, expect);
                assert_eq!(rx.open(&mut wire), ctr);
                assert_eq!(wire, plain);
                assert_eq!((rx.key, rx.counter, rx.epoch), (tx.key, tx.counter, tx.epoch));
            }
        }
        let expected: usize = 12 * lengths.iter().map(|l| l.div_ceil(16)).sum::<usize>();
        assert_eq!(total, expected);
        if limit == 70 {
            assert!(tx.epoch >= 10, "the small range re-keys (epoch {})", tx.epoch);
        } else {
            assert_eq!(tx.epoch, 0);
        }
    }
}

#[test]
#[should_panic(expected = "does not fit a key's range")]
fn a_packet_longer_than_a_keys_range_is_refused() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 1, &mut rng);
    let mut k = keyx::boot(&cpus, &modules, &m.public(), 4).unwrap().pairs[0].forward.clone();
    // 5 blocks under a 4-block range: sealing it would wrap onto blocks already used.
    k.seal(&mut [0u8; 65]);
}

fn refused(r: Result<(keyx::PairKeys, keyx::PairKeys), KeyxError>) -> KeyxError {
    match r {
        Err(e) => e,
        Ok(_) => panic!("the exchange was accepted"),
    }
}

#[test]
fn a_tampered_attestation_is_refused() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 1, &mut rng);
    let pk = m.public();
    // One bit of either certificate (its signature, device key, id or role) or of either
    // transcript signature changed in flight.
    type Edit = fn(&mut keyx::Wire);
    let edits: [(u8, &str, Edit); 7] = [
        (1, "initiator certificate signature", |w| w.initiator_cert.signature[3] ^= 1),
        (1, "initiator device key", |w| w.initiator_cert.public[0] ^= 1),
        (2, "responder certificate signature", |w| w.responder_cert.signature[60] ^= 0x80),
        (2, "responder device key", |w| w.responder_cert.public[31] ^= 1),
        (2, "responder role", |w| w.responder_cert.role = Role::Cpu),
        (2, "responder transcript signature", |w| w.responder_signature[0] ^= 1),
        (3, "initiator transcript signature", |w| w.initiator_signature[63] ^= 1),
    ];
    for (step, what, edit) in edits {
        let e = refused(keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| {
            if s == step {
                edit(w)
            }
        }));
        assert!(matches!(e, KeyxError::Certificate(_) | KeyxError::Transcript(_)), "{what}: {e}");
    }
}

#[test]
fn a_wrong_peer_key_is_refused() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 1, &mut rng);
    // The parts check certificates against another manufacturer's key: nothing verifies.
    let other = Manufacturer::new(&mut rng).unwrap();
    let e = refused(keyx::exchange(&cpus[0], &modules[0], &other.public(), 1 << 20, &mut rng, &mut |_, _| {}));
    assert!(matches!(e, KeyxError::Certificate(_)), "{e}");
    // A part that shows module 0's genuine certificate but holds another device key (it cannot
    // sign the transcript with the certified key).
    let thief = Device::uncertified(Role::Module, 0, &mut rng).unwrap();
    let stolen = modules[0].cert.clone();
    let e = refused(keyx::exchange(&cpus[0], &thief, &m.public(), 1 << 20, &mut rng, &mut |w, s| {
        if s == 2 {
            w.responder_cert = stolen.clone();
        }
    }));
    assert!(matches!(e, KeyxError::Transcript(_)), "{e}");
    // A genuine certificate whose device key is swapped for the attacker's: the manufacturer's
    // signature no longer covers it.
    let e = refused(keyx::exchange(&cpus[0], &thief, &m.public(), 1 << 20, &mut rng, &mut |w, s| {
        if s == 2 {
            let public = w.responder_cert.public.clone();
            w.responder_cert = keyx::Certificate { public, ..stolen.clone() };
        }
    }));
    assert!(matches!(e, KeyxError::Certificate(_)), "{e}");
}

#[test]
fn a_replayed_handshake_is_refused() {
    let mut rng = SystemRandom::new();
    let m = Manufacturer::new(&mut rng).unwrap();
    let (cpus, modules) = parts(&m, 1, 1, &mut rng);
    let pk = m.public();
    // An earlier boot's exchange, recorded off the link.
    let mut old = None;
    keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| {
        if s == 3 {
            old = Some(w.clone());
        }
    })
    .unwrap();
    let old = old.unwrap();
    // Replayed to the module: the CPU's old ephemeral key and old signature (the module's fresh
    // ephemeral key is not in the old transcript).
    let o = old.clone();
    let e = refused(keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| match s {
        1 => w.initiator_ephemeral = o.initiator_ephemeral.clone(),
        3 => w.initiator_signature = o.initiator_signature.clone(),
        _ => {}
    }));
    assert!(matches!(e, KeyxError::Transcript(_)), "{e}");
    // Replayed to the CPU: the module's old answer (its ephemeral key and signature).
    let o = old.clone();
    let e = refused(keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| {
        if s == 2 {
            w.responder_ephemeral = o.responder_ephemeral.clone();
            w.responder_signature = o.responder_signature.clone();
        }
    }));
    assert!(matches!(e, KeyxError::Transcript(_)), "{e}");
    // Only the CPU's final signature replayed.
    let e = refused(keyx::exchange(&cpus[0], &modules[0], &pk, 1 << 20, &mut rng, &mut |w, s| {
        if s == 3 {
            w.initiator_signature = old.initiator_signature.clone();
        }
    }));
    assert!(matches!(e, KeyxError::Transcript(_)), "{e}");
}
