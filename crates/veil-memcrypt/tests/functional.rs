//! The functional model on whole synthetic traces: real encryption, real MACs, real
//! speculation; every property the paper's security argument rests on is checked.

use veil_crypto::AesCipher;
use veil_memcrypt::fvt::Fvt;
use veil_memcrypt::layout;
use veil_memcrypt::mode::CipherKind;
use veil_memcrypt::record::Kind;
use veil_memcrypt::secure::{Counters, Mode, Scheme, SecureMemory};
use veil_memcrypt::synth::{Synth, SynthConfig};

fn schemes() -> Vec<Scheme> {
    vec![
        Scheme::new(Mode::Direct, CipherKind::Aes128, true).unwrap(),
        Scheme::new(Mode::Direct, CipherKind::Aes256, true).unwrap(),
        Scheme::new(Mode::Direct, CipherKind::Aes128, false).unwrap(),
        Scheme::new(Mode::Direct, CipherKind::Tdes, false).unwrap(),
        Scheme::new(Mode::Counter, CipherKind::Aes128, true).unwrap(),
    ]
}

fn trace(records: u64, p_zero: f64, seed: u64) -> Synth {
    Synth::new(SynthConfig { records, footprint_lines: 4096, cache_lines: 256, p_zero, p_small: 0.2, seed, ..Default::default() })
}

/// Replays a trace through the functional memory; returns (fetches, chunks hit, false hits).
fn replay(scheme: Scheme, records: u64, fvt_size: usize) -> (u64, u64, u64, u64) {
    let mut mem = SecureMemory::new(scheme, 7).unwrap();
    let mut fvt = Fvt::new(fvt_size, 256, 4);
    let (mut fetches, mut hits, mut false_hits, mut frequent) = (0, 0, 0, 0);
    for rec in trace(records, 0.3, 3) {
        let line = rec.addr / 64;
        match rec.kind {
            Kind::Writeback => mem.write_line(line, &rec.data, &fvt).unwrap(),
            Kind::LoadFill | Kind::StoreFill => {
                if !mem.contains(line) {
                    mem.write_line(line, &rec.data, &fvt).unwrap();
                }
                let f = mem.fetch_line(line, &fvt).unwrap();
                assert_eq!(f.plaintext, rec.data, "decryption of line {line:#x}");
                // The timing model's plaintext rule must be what the cryptography finds.
                let w = layout::words(&rec.data);
                assert_eq!(f.mac_hits, f.ct_hits, "a matching ciphertext has a matching MAC");
                fetches += 1;
                hits += f.ct_hits as u64;
                false_hits += f.false_hits as u64;
                frequent += f.frequent_words as u64;
                for x in w {
                    fvt.observe(x);
                }
            }
        }
    }
    (fetches, hits, false_hits, frequent)
}

#[test]
fn whole_trace_decrypts_verifies_and_has_no_false_hits() {
    for s in schemes() {
        let (fetches, hits, false_hits, frequent) = replay(s, 6000, 8);
        assert!(fetches > 3000, "{fetches} fetches");
        assert_eq!(false_hits, 0, "{s:?}");
        assert!(hits > fetches / 4, "{s:?}: speculation must hit on a value-local trace ({hits} of {fetches})");
        assert!(frequent > 0);
    }
}

#[test]
fn speculative_hits_equal_the_plaintext_rule_of_the_timing_model() {
    // Same replay, counting per fetch the chunks the plaintext rule predicts.
    for s in schemes() {
        let mut mem = SecureMemory::new(s, 11).unwrap();
        let mut fvt = Fvt::new(8, 256, 4);
        let mut bms = std::collections::HashMap::new();
        for rec in trace(4000, 0.4, 5) {
            let line = rec.addr / 64;
            let w = layout::words(&rec.data);
            let fresh = layout::bitmap(&w, |v| fvt.contains(v));
            match rec.kind {
                Kind::Writeback => {
                    mem.write_line(line, &rec.data, &fvt).unwrap();
                    bms.insert(line, fresh);
                }
                _ => {
                    if !mem.contains(line) {
                        mem.write_line(line, &rec.data, &fvt).unwrap();
                        bms.insert(line, fresh);
                    }
                    let f = mem.fetch_line(line, &fvt).unwrap();
                    let p = layout::predicted(s.chunk_bytes(), s.reorders(), &w, bms[&line], |v| fvt.contains(v));
                    assert_eq!(f.ct_hits as usize, p.iter().filter(|&&x| x).count(), "{s:?} line {line:#x}");
                    for x in w {
                        fvt.observe(x);
                    }
                }
            }
        }
    }
}

#[test]
fn a_flipped_bit_in_line_mac_or_bitmap_is_detected() {
    for s in schemes() {
        let mut mem = SecureMemory::new(s, 3).unwrap();
        let mut fvt = Fvt::new(8, 256, 1);
        fvt.observe(0);
        fvt.observe(1);
        let mut pt = [0u8; 64];
        pt[8] = 1;
        pt[40] = 0x5a;
        for line in 0..64u64 {
            mem.write_line(line, &pt, &fvt).unwrap();
        }
        mem.write_line(5, &pt, &fvt).unwrap(); // a second version of one line
        let n = s.chunks();
        for line in [0u64, 5, 63] {
            for bit in (0..512).step_by(37) {
                mem.stored_mut(line).unwrap().ct[bit / 8] ^= 1 << (bit % 8);
                assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} ct bit {bit}");
                mem.stored_mut(line).unwrap().ct[bit / 8] ^= 1 << (bit % 8);
            }
            for c in 0..n {
                for bit in [0, 13, 63] {
                    mem.stored_mut(line).unwrap().tags[c][bit / 8] ^= 1 << (bit % 8);
                    assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} tag {c} bit {bit}");
                    mem.stored_mut(line).unwrap().tags[c][bit / 8] ^= 1 << (bit % 8);
                }
            }
            // The record's copy of the nonce carries no authority: verification uses the
            // on-chip nonce, so rewriting the copy changes nothing.
            mem.stored_mut(line).unwrap().nonce ^= 1;
            assert_eq!(mem.fetch_line(line, &fvt).unwrap().plaintext, pt, "{s:?} record nonce");
            mem.stored_mut(line).unwrap().nonce ^= 1;
            if s.reorders() {
                for bit in (0..512).step_by(41) {
                    mem.bitmap_line_mut(line).unwrap().ct[bit / 8] ^= 1 << (bit % 8);
                    assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} bitmap bit {bit}");
                    mem.bitmap_line_mut(line).unwrap().ct[bit / 8] ^= 1 << (bit % 8);
                }
                mem.bitmap_line_mut(line).unwrap().tags[0][0] ^= 1;
                assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} bitmap tag");
                mem.bitmap_line_mut(line).unwrap().tags[0][0] ^= 1;
            }
        }
    }
}

#[test]
fn replaying_a_whole_old_record_is_detected() {
    // Write, save the record (ciphertext, MACs, nonce: all of it verified when it was current),
    // write again, put the old record back, read: the on-chip nonce has moved on, so the old
    // MACs fail. The same for a page's bitmap line under re-ordering.
    for (s, store) in schemes().into_iter().flat_map(|s| [(s, "on_chip"), (s, "tree")]) {
        let mut mem = SecureMemory::with_counters(s, 11, Counters::new(store, 4, 11).unwrap()).unwrap();
        let mut fvt = Fvt::new(8, 256, 1);
        fvt.observe(0);
        let old = [0u8; 64];
        let mut new = [0u8; 64];
        new[3] = 0x77;
        new[60] = 0x10;
        let line = 130u64;
        mem.write_line(line, &old, &fvt).unwrap();
        assert_eq!(mem.fetch_line(line, &fvt).unwrap().plaintext, old);
        let saved = mem.stored(line).unwrap().clone();
        let saved_bm = mem.bitmap_line(line).cloned();
        let saved_tree = mem.counter_tree_mut().map(|t| (t.blocks.clone(), t.nodes.clone()));
        mem.write_line(line, &new, &fvt).unwrap();
        if let Some((blocks, nodes)) = &saved_tree {
            // Counters in memory: the attacker replays the record with its counter block and
            // every tree node as they were; the on-chip root has moved on.
            let t = mem.counter_tree_mut().unwrap();
            let now = (std::mem::replace(&mut t.blocks, blocks.clone()), std::mem::replace(&mut t.nodes, nodes.clone()));
            let current = mem.stored(line).unwrap().clone();
            *mem.stored_mut(line).unwrap() = saved.clone();
            assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} tree: replayed record, counters and tree verified");
            *mem.stored_mut(line).unwrap() = current;
            let t = mem.counter_tree_mut().unwrap();
            (t.blocks, t.nodes) = now;
        }
        assert_eq!(mem.fetch_line(line, &fvt).unwrap().plaintext, new);
        let current = mem.stored(line).unwrap().clone();
        *mem.stored_mut(line).unwrap() = saved;
        assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} {store}: replayed data record verified");
        *mem.stored_mut(line).unwrap() = current;
        assert_eq!(mem.fetch_line(line, &fvt).unwrap().plaintext, new);
        if let Some(bm) = saved_bm {
            assert!(s.reorders());
            // The second write changed the line's bitmap, so its bitmap line was rewritten.
            assert_ne!(mem.bitmap_line(line).unwrap(), &bm);
            *mem.bitmap_line_mut(line).unwrap() = bm;
            assert!(mem.fetch_line(line, &fvt).is_err(), "{s:?} {store}: replayed bitmap line verified");
        } else {
            assert!(!s.reorders());
        }
    }
}

#[test]
fn same_plaintext_at_two_addresses_or_two_writebacks_encrypts_differently() {
    for s in schemes() {
        let mut mem = SecureMemory::new(s, 9).unwrap();
        let fvt = Fvt::new(8, 256, 4);
        let pt = [0u8; 64];
        mem.write_line(100, &pt, &fvt).unwrap();
        mem.write_line(101, &pt, &fvt).unwrap();
        let a = mem.stored(100).unwrap().clone();
        let b = mem.stored(101).unwrap().clone();
        mem.write_line(100, &pt, &fvt).unwrap();
        let a2 = mem.stored(100).unwrap().clone();
        assert_eq!(a2.nonce, a.nonce + 1);
        let cb = s.chunk_bytes();
        let chunks = |x: &[u8; 64]| x.chunks(cb).map(|c| c.to_vec()).collect::<Vec<_>>();
        let (ca, cb_, ca2) = (chunks(&a.ct), chunks(&b.ct), chunks(&a2.ct));
        // No chunk of one equals any chunk of another, nor two chunks of one line.
        let mut all = [ca, cb_, ca2].concat();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "{s:?}: repeated ciphertext chunk");
    }
}

/// Pearson chi-square of byte counts against uniform, and its upper-tail p-value by the
/// Wilson-Hilferty approximation.
fn chi2_p(counts: &[u64; 256]) -> f64 {
    let total: u64 = counts.iter().sum();
    let e = total as f64 / 256.0;
    let x2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    let k = 255.0;
    let z = ((x2 / k).powf(1.0 / 3.0) - (1.0 - 2.0 / (9.0 * k))) / (2.0 / (9.0 * k)).sqrt();
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // Numerical Recipes' erfc (Chebyshev, relative error < 1.2e-7).
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * (-z * z - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
        .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[test]
fn ciphertext_shows_no_frequent_value_bias_and_the_test_catches_a_biased_scheme() {
    // A memory image where 60% of words are zero and 20% small constants.
    let mut recs: Vec<([u8; 64], u64)> = Vec::new();
    for rec in trace(20000, 0.6, 21) {
        recs.push((rec.data, rec.addr / 64));
    }
    let plain_zero = recs.iter().flat_map(|(d, _)| d.chunks(8)).filter(|c| c.iter().all(|&b| b == 0)).count();
    assert!(plain_zero > recs.len() * 8 / 2, "the plaintext is strongly biased");
    for s in schemes() {
        let mut mem = SecureMemory::new(s, 13).unwrap();
        let mut fvt = Fvt::new(8, 256, 4);
        let mut counts = [0u64; 256];
        let mut seen = std::collections::HashSet::new();
        let mut dups = 0;
        for (d, line) in &recs {
            mem.write_line(*line, d, &fvt).unwrap();
            for x in layout::words(d) {
                fvt.observe(x);
            }
            let st = mem.stored(*line).unwrap();
            for c in st.ct.chunks(8) {
                counts[c[0] as usize] += 1;
                if !seen.insert(u64::from_le_bytes(c.try_into().unwrap())) {
                    dups += 1;
                }
            }
        }
        let p = chi2_p(&counts);
        assert!(p > 1e-4, "{s:?}: ciphertext byte frequencies biased (p = {p:e})");
        assert_eq!(dups, 0, "{s:?}: a 64-bit ciphertext value repeated");
    }
    // The same statistics on a deliberately weak scheme (AES-ECB, no tweak) must fail.
    let ecb = AesCipher::new(&[7u8; 16]).unwrap();
    let mut counts = [0u64; 256];
    for (d, _) in &recs {
        let mut b = *d;
        ecb.encrypt_ecb(&mut b).unwrap();
        for c in b.chunks(8) {
            counts[c[0] as usize] += 1;
        }
    }
    assert!(chi2_p(&counts) < 1e-10, "the chi-square test must reject ECB");
}

#[test]
fn counter_mode_refuses_tdes_and_ocb_keys_must_differ() {
    assert!(Scheme::new(Mode::Counter, CipherKind::Tdes, false).is_err());
    assert!(veil_memcrypt::mode::DirectMode::new(CipherKind::Aes128, &[1; 16], &[1; 16]).is_err());
}
