//! Split counters in the functional model: counters grouped per block as the timing model
//! groups them, a minor-counter overflow that bumps the major counter and re-encrypts every other
//! stored line of the block with the real ciphers, and replay protection across it; and the
//! two models counting the same overflows on the same records.

use veil_memcrypt::check::Checker;
use veil_memcrypt::fvt::Fvt;
use veil_memcrypt::mode::CipherKind;
use veil_memcrypt::record::{Kind, Record};
use veil_memcrypt::secure::{Counters, Mode, Scheme, SecureMemory};
use veil_memcrypt::synth::{Synth, SynthConfig};
use veil_memcrypt::tree::BlockOrg;
use veil_memcrypt::{simulate, Config};

fn schemes() -> Vec<Scheme> {
    vec![
        Scheme::new(Mode::Direct, CipherKind::Aes256, true).unwrap(),
        Scheme::new(Mode::Direct, CipherKind::Aes128, false).unwrap(),
        Scheme::new(Mode::Direct, CipherKind::Tdes, false).unwrap(),
        Scheme::new(Mode::Counter, CipherKind::Aes128, true).unwrap(),
    ]
}

/// Split blocks of 2-bit minors: a line's 4th write since its block's last overflow overflows.
fn split2(s: Scheme) -> SecureMemory {
    SecureMemory::with_counters(s, 5, Counters::with_block("tree", 8, BlockOrg::Split { minor_bits: 2 }, 5).unwrap()).unwrap()
}

/// A line's bytes, distinct per line and version, with some frequent (zero) words.
fn data(line: u64, version: u64) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[..8].copy_from_slice(&(line * 1000 + version + 1).to_le_bytes());
    d[40..48].copy_from_slice(&(line ^ 0x5555_0000).to_le_bytes());
    d
}

fn fvt() -> Fvt {
    let mut f = Fvt::new(8, 256, 1);
    f.observe(0);
    f
}

#[test]
fn an_overflow_reencrypts_the_block_and_every_line_decrypts_bit_exact() {
    for s in schemes() {
        let mut mem = split2(s);
        let fvt = fvt();
        // Page 0 (lines 0..64) and one line of page 1, as the loader laid them down.
        for l in (0..64).chain([64]) {
            mem.load_line(l, &data(l, 0), &fvt).unwrap();
        }
        let before: Vec<_> = (0..65).map(|l| mem.stored(l).unwrap().clone()).collect();
        for v in 1..=3 {
            mem.write_line(5, &data(5, v), &fvt).unwrap();
        }
        // Three writes: minor 3 of 3, no overflow; nothing else re-encrypted.
        assert_eq!(mem.overflows(), (0, 0), "{s:?}");
        assert_eq!(mem.stored(5).unwrap().nonce, 3);
        assert_eq!(mem.stored(6).unwrap(), &before[6]);
        mem.write_line(5, &data(5, 4), &fvt).unwrap();
        // The fourth overflows: major 1, every minor 0, so every line of page 0 has nonce 1 << 2;
        // the 63 other lines were re-encrypted, page 1's line was not.
        assert_eq!(mem.overflows(), (1, 63), "{s:?}");
        for l in 0..64 {
            let st = mem.stored(l).unwrap();
            assert_eq!(st.nonce, 4, "{s:?} line {l}");
            assert_ne!(st.ct, before[l as usize].ct, "{s:?} line {l}: not re-encrypted");
            let want = if l == 5 { data(5, 4) } else { data(l, 0) };
            assert_eq!(mem.fetch_line(l, &fvt).unwrap().plaintext, want, "{s:?} line {l}");
        }
        assert_eq!(mem.stored(64).unwrap(), &before[64]);
        assert_eq!(mem.fetch_line(64, &fvt).unwrap().plaintext, data(64, 0));
        // The minors start again: three more writes of another line, then its fourth overflows.
        for v in 1..=4 {
            mem.write_line(9, &data(9, v), &fvt).unwrap();
        }
        assert_eq!(mem.overflows(), (2, 126), "{s:?}");
        assert_eq!(mem.stored(9).unwrap().nonce, 8);
        for l in 0..64 {
            let want = match l {
                5 => data(5, 4),
                9 => data(9, 4),
                _ => data(l, 0),
            };
            assert_eq!(mem.fetch_line(l, &fvt).unwrap().plaintext, want, "{s:?} line {l}");
        }
    }
}

#[test]
fn a_replay_after_an_overflow_is_rejected() {
    for s in schemes() {
        let mut mem = split2(s);
        let fvt = fvt();
        for l in 0..64 {
            mem.load_line(l, &data(l, 0), &fvt).unwrap();
        }
        mem.write_line(7, &data(7, 1), &fvt).unwrap();
        // Line 7's record, and the counter block and tree as they stand (all verified now).
        let old7 = mem.stored(7).unwrap().clone();
        let old_tree = mem.counter_tree_mut().map(|t| (t.blocks.clone(), t.nodes.clone())).unwrap();
        for v in 1..=4 {
            mem.write_line(5, &data(5, v), &fvt).unwrap();
        }
        assert_eq!(mem.overflows(), (1, 63));
        let now7 = mem.stored(7).unwrap().clone();
        // The old record of a re-encrypted line: its MACs were made under the old nonce.
        *mem.stored_mut(7).unwrap() = old7.clone();
        assert!(mem.fetch_line(7, &fvt).is_err(), "{s:?}: old record of a re-encrypted line verified");
        // With the old counter block and every tree node as well: the on-chip root has moved on.
        let t = mem.counter_tree_mut().unwrap();
        let now_tree = (std::mem::replace(&mut t.blocks, old_tree.0.clone()), std::mem::replace(&mut t.nodes, old_tree.1.clone()));
        assert!(mem.fetch_line(7, &fvt).is_err(), "{s:?}: old record with old counters verified");
        let t = mem.counter_tree_mut().unwrap();
        (t.blocks, t.nodes) = now_tree;
        *mem.stored_mut(7).unwrap() = now7;
        assert_eq!(mem.fetch_line(7, &fvt).unwrap().plaintext, data(7, 1));
        // A flipped bit of the packed block (a minor counter) fails at the root.
        let t = mem.counter_tree_mut().unwrap();
        t.blocks.get_mut(&0).unwrap()[20] ^= 4;
        assert!(mem.fetch_line(7, &fvt).is_err(), "{s:?}: tampered minor counter verified");
    }
}

fn machine(block: &str, bits: u32) -> Config {
    Config {
        cipher: "aes256".into(),
        counters: "tree".into(),
        counter_block: block.into(),
        minor_counter_bits: bits,
        protected_mb: 2,
        warmup_records: 0,
        ..Default::default()
    }
}

fn rec(kind: Kind, line: u64, v: u64) -> Record {
    Record { kind, addr: line * 64, insts: 1_000, data: data(line, v), ..Default::default() }
}

fn both(c: &Config, recs: &[Record]) -> ((u64, u64), (u64, u64)) {
    let r = simulate(c, recs.iter().cloned().map(Ok), &|| false).unwrap();
    let mut ch = Checker::new(c).unwrap();
    for x in recs {
        ch.step(x).unwrap();
    }
    let f = ch.finish();
    assert_eq!((f.integrity_failures, f.false_hits, f.external_updates), (0, 0, 0));
    ((r.counter_overflows, r.overflow_lines), (f.counter_overflows, f.overflow_lines))
}

#[test]
fn both_models_count_the_same_overflows_on_the_same_records() {
    // Page 0 fetched whole, then 300 writebacks of line 5 (overflows at its 128th and 256th),
    // then 130 of line 9 (its minor restarted at each overflow: the 128th overflows again),
    // each line read back now and then: 3 overflows, 63 lines each.
    let mut recs: Vec<Record> = (0..64).map(|l| rec(Kind::LoadFill, l, 0)).collect();
    for v in 1..=300 {
        recs.push(rec(Kind::Writeback, 5, v));
        if v % 50 == 0 {
            recs.push(rec(Kind::LoadFill, 5, v));
        }
    }
    for v in 1..=130 {
        recs.push(rec(Kind::Writeback, 9, v));
    }
    recs.extend((0..64).map(|l| rec(Kind::LoadFill, l, if l == 5 { 300 } else if l == 9 { 130 } else { 0 })));
    assert_eq!(both(&machine("split", 7), &recs), ((3, 189), (3, 189)));
    // 64-bit counters never overflow, in either model.
    assert_eq!(both(&machine("monolithic", 7), &recs), ((0, 0), (0, 0)));
    // On chip, every counter is 64 bits whatever the block layout.
    assert_eq!(both(&Config { counters: "on_chip".into(), ..machine("split", 7) }, &recs), ((0, 0), (0, 0)));
}

#[test]
fn both_models_count_the_same_overflows_on_a_synthetic_stream() {
    // A small footprint written back often, 3-bit minors: many overflows. The timing model
    // re-encrypts every other line of the page; the functional one those memory holds (the
    // stream has not touched every line of a page when its first overflows).
    let s = SynthConfig { records: 20_000, footprint_lines: 512, cache_lines: 64, store_share: 0.5, p_zero: 0.4, seed: 3, ..Default::default() };
    let recs: Vec<Record> = Synth::new(s).collect();
    let ((t_ov, t_lines), (f_ov, f_lines)) = both(&machine("split", 3), &recs);
    assert!(t_ov >= 20, "{t_ov}");
    assert_eq!(t_ov, f_ov);
    assert_eq!(t_lines, 63 * t_ov);
    assert!(f_lines <= t_lines && f_lines > t_lines / 2, "{f_lines} {t_lines}");
}

#[test]
fn bad_counter_settings_are_refused_in_one_line() {
    for (c, start) in [
        (machine("split", 0), "minor_counter_bits: "),
        (machine("split", 8), "minor_counter_bits: "),
        (machine("banked", 7), "counter_block: unknown counter block 'banked' (known: split, monolithic)"),
    ] {
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with(start) && !e.contains('\n'), "{e}");
        assert!(Checker::new(&c).is_err());
    }
    // A monolithic block ignores the minor width.
    assert!(machine("monolithic", 0).validate().is_ok());
}
