//! Encryption then decryption through the datapath alone, with keys made the way SEAL makes
//! them (s ternary, pk = (-(a s + e), a) in NTT form), and counts that follow the algorithm's
//! structure. SEAL interoperation itself is tested from Python (tests/he/test_taco.py).

use veil_he_taco::arith::{is_prime, mul_mod, sub_mod};
use veil_he_taco::ntt::NttTables;
use veil_he_taco::prng::{Prng, PrngType};
use veil_he_taco::{decrypt, encrypt, Counts, Ledger, Params};

fn ntt_primes(n: usize, bits: u32, k: usize) -> Vec<u64> {
    let step = 2 * n as u64;
    let mut v = (1u64 << bits) - step + 1;
    let mut out = vec![];
    while out.len() < k {
        if is_prime(v) {
            out.push(v);
        }
        v -= step;
    }
    out
}

fn keys(p: &Params, seed: &[u8]) -> (Vec<Vec<u64>>, Vec<Vec<Vec<u64>>>) {
    let n = p.n;
    let mut c = Counts::default();
    let mut rng = Prng::new(PrngType::Shake256, seed).unwrap();
    let s = rng.ternary(n, &mut c);
    let e = rng.cbd(n, &mut c);
    let lift = |v: i8, q: u64| if v < 0 { q - (-v) as u64 } else { v as u64 };
    let (mut sk, mut pk0, mut pk1) = (vec![], vec![], vec![]);
    for &q in &p.primes {
        let t = NttTables::new(n, q).unwrap();
        let mut si: Vec<u64> = s.iter().map(|&v| lift(v, q)).collect();
        let mut ei: Vec<u64> = e.iter().map(|&v| lift(v, q)).collect();
        t.forward(&mut si, &mut c);
        t.forward(&mut ei, &mut c);
        let a: Vec<u64> = (0..n as u64).map(|j| (j.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7) % q).collect();
        let b: Vec<u64> = (0..n).map(|j| sub_mod(0, (mul_mod(a[j], si[j], q) + ei[j]) % q, q)).collect();
        sk.push(si);
        pk0.push(b);
        pk1.push(a);
    }
    (sk, vec![pk0, pk1])
}

#[test]
fn encrypt_decrypt_round_trip_and_counts() {
    for (n, bits, k) in [(1024usize, 40u32, 3usize), (2048, 50, 4)] {
        let primes = ntt_primes(n, bits, k);
        let t = 65537;
        let p = Params::new(n, &primes, t).unwrap();
        let (sk, pk) = keys(&p, &[3u8; 64]);
        let m: Vec<u64> = (0..n as u64).map(|i| (i * 7 + 5) % t).collect();
        let mut led = Ledger::new();
        let ct = encrypt(&p, &pk, &m, PrngType::Blake2xb, &[5u8; 64], &mut led).unwrap();
        assert_eq!(ct[0].len(), k - 1, "special prime dropped");
        let mut dled = Ledger::new();
        assert_eq!(decrypt(&p, &sk, &ct, &mut dled).unwrap(), m);
        let lg = n.trailing_zeros() as u64;
        let (n, k) = (n as u64, k as u64);
        // one NTT of u per key-level prime; two inverse NTTs per prime
        assert_eq!(led["ntt"].butterflies, k * n / 2 * lg);
        assert_eq!(led["intt"].butterflies, 2 * k * n / 2 * lg);
        assert_eq!(led["dyadic"].modmuls, 2 * k * n);
        // u (a 32-bit word per coefficient; a redraw has probability 2^-32) and two
        // 6-byte-per-coefficient errors, from one PRNG: 66 BLAKE2b compressions per 4096 bytes
        assert_eq!(led["sample_u"].prng_bytes, 4 * n);
        assert_eq!(led["sample_e"].prng_bytes, 12 * n);
        assert_eq!(led["sample_u"].prng_blocks + led["sample_e"].prng_blocks, (16 * n).div_ceil(4096) * 66);
        assert_eq!(dled["ntt"].butterflies, (k - 1) * n / 2 * lg);
    }
}

#[test]
fn bad_inputs_are_errors() {
    let primes = ntt_primes(1024, 40, 3);
    assert!(Params::new(1000, &primes, 65537).is_err());
    assert!(Params::new(1024, &primes[..1], 65537).is_err());
    assert!(Params::new(1024, &[97, 193], 65537).is_err());
    let p = Params::new(1024, &primes, 65537).unwrap();
    let (_, pk) = keys(&p, &[4u8; 64]);
    let mut led = Ledger::new();
    assert!(encrypt(&p, &pk, &[70000], PrngType::Blake2xb, &[6u8; 64], &mut led).is_err());
    assert!(encrypt(&p, &pk[..1], &[1], PrngType::Blake2xb, &[6u8; 64], &mut led).is_err());
    assert!(veil_he_taco::seal::parse_ciphertext(b"not seal bytes at all, no header", "ct").is_err());
}
