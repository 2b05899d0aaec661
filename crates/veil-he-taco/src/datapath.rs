//! SEAL's BFV public-key encryption and decryption as TACO's hardware blocks compute them.
//! Each step runs on the data and adds what it did to its block's `Counts`:
//!
//! encryption (SEAL `encrypt_zero_asymmetric` + `multiply_add_plain_with_scaling_variant`),
//! bit for bit SEAL's for the same PRNG type and seed (known answers in tests/seal_kat.rs)
//! * `sample_u`: ternary u from SEAL's PRNG, reduced into every key-level prime's lane;
//! * `ntt`: NTT(u) per prime;
//! * `dyadic`: pk0*u and pk1*u per prime (the public key is stored in NTT form);
//! * `intt`: both products back to coefficients per prime (a fresh BFV ciphertext is not in
//!   NTT form);
//! * `sample_e` + `errors`: a centred-binomial error per polynomial, added in every lane;
//! * `modswitch`: the special prime dropped with rounding, (c_i - (c_L + q_L/2 - q_L/2)) q_L^-1;
//! * `scale`: c0 += round(q m / t) per data prime.
//!
//! decryption (SEAL `dot_product_ct_sk_array` + `RNSTool::decrypt_scale_and_round`)
//! * `ntt`: NTT(c1); `dyadic`: times s (NTT form); `intt`; `add`: + c0;
//! * `scale_round`: round(t x / q) mod t by the BEHZ method with SEAL's gamma: multiply by
//!   t*gamma, fast base conversion to {t, gamma}, times -q^-1, subtract the centred gamma
//!   residue, times gamma^-1 mod t.

use std::collections::BTreeMap;

use crate::arith::{add_mod, inv_mod, mul_mod, seal_gamma, sub_mod};
use crate::ntt::NttTables;
use crate::prng::{Prng, PrngType};
use crate::Counts;

/// Operation counts per hardware block, filled while the datapath runs.
pub type Ledger = BTreeMap<&'static str, Counts>;

#[derive(Clone, Debug)]
pub struct Params {
    pub n: usize,
    /// Key-level primes; the last is SEAL's special prime, dropped after encryption.
    pub primes: Vec<u64>,
    pub t: u64,
    tables: Vec<NttTables>,
}

impl Params {
    pub fn new(n: usize, primes: &[u64], t: u64) -> Result<Self, String> {
        if primes.len() < 2 {
            return Err(format!("{} prime(s): need at least 2 (data primes plus SEAL's special prime)", primes.len()));
        }
        if t < 2 || primes.iter().any(|&q| q <= t) {
            return Err(format!("plain modulus {t} must be >= 2 and below every prime"));
        }
        let tables = primes.iter().map(|&q| NttTables::new(n, q)).collect::<Result<_, _>>()?;
        Ok(Params { n, primes: primes.to_vec(), t, tables })
    }

    /// Number of primes a ciphertext keeps.
    pub fn data_primes(&self) -> usize {
        self.primes.len() - 1
    }
}

/// The dyadic block: a[j] * b[j] mod q for every coefficient, booked with its multiplies and
/// SRAM traffic (two operands read, one result written per coefficient).
fn dyadic(a: &[u64], b: &[u64], q: u64, c: &mut Counts) -> Vec<u64> {
    let n = a.len() as u64;
    c.modmuls += n;
    c.sram_reads += 2 * n;
    c.sram_writes += n;
    c.coeffs += n;
    a.iter().zip(b).map(|(&x, &y)| mul_mod(x, y, q)).collect()
}

fn block<'a>(l: &'a mut Ledger, name: &'static str) -> &'a mut Counts {
    l.entry(name).or_default()
}

/// A signed small sample into lane q: the sampler's reduction (one conditional add per lane).
fn lift(v: i8, q: u64) -> u64 {
    if v < 0 { q - (-(v as i64)) as u64 } else { v as u64 }
}

/// Encrypts plaintext coefficients `m` (each < t, at most n of them) under a public key in
/// SEAL's layout (`pk[j][i]`: polynomial j, key-level prime i, NTT form). Returns the two
/// ciphertext polynomials over the data primes, in coefficient form.
pub fn encrypt(p: &Params, pk: &[Vec<Vec<u64>>], m: &[u64], prng: PrngType, seed: &[u8], led: &mut Ledger) -> Result<Vec<Vec<Vec<u64>>>, String> {
    let (n, kk) = (p.n, p.primes.len());
    if pk.len() != 2 || pk.iter().any(|poly| poly.len() != kk || poly.iter().any(|r| r.len() != n)) {
        return Err(format!("public key: expected 2 polynomials x {kk} primes x {n} coefficients"));
    }
    check_plain(p, m)?;
    let mut rng = Prng::new(prng, seed)?;
    // u, one ternary sample shared by every lane
    let u = rng.ternary(n, block(led, "sample_u"));
    let mut u_lanes: Vec<Vec<u64>> = p.primes.iter().map(|&q| u.iter().map(|&v| lift(v, q)).collect()).collect();
    {
        let c = block(led, "sample_u");
        c.modadds += (kk * n) as u64;
        c.sram_writes += (kk * n) as u64;
        c.coeffs += n as u64;
    }
    for (i, lane) in u_lanes.iter_mut().enumerate() {
        p.tables[i].forward(lane, block(led, "ntt"));
    }
    // c_j = pk_j * u per prime, then back to coefficients
    let mut ct: Vec<Vec<Vec<u64>>> = Vec::with_capacity(2);
    for pkj in pk {
        let mut poly = Vec::with_capacity(kk);
        for i in 0..kk {
            let q = p.primes[i];
            poly.push(dyadic(&u_lanes[i], &pkj[i], q, block(led, "dyadic")));
        }
        ct.push(poly);
    }
    for poly in ct.iter_mut() {
        for (i, lane) in poly.iter_mut().enumerate() {
            p.tables[i].inverse(lane, block(led, "intt"));
        }
    }
    // errors
    for poly in ct.iter_mut() {
        let e = rng.cbd(n, block(led, "sample_e"));
        block(led, "sample_e").coeffs += n as u64;
        let c = block(led, "errors");
        for (i, lane) in poly.iter_mut().enumerate() {
            let q = p.primes[i];
            for (x, &v) in lane.iter_mut().zip(&e) {
                *x = add_mod(*x, lift(v, q), q);
            }
            c.modadds += 2 * n as u64; // lift + add
            c.sram_reads += n as u64;
            c.sram_writes += n as u64;
            c.coeffs += n as u64;
        }
    }
    // drop the special prime with rounding
    let ql = p.primes[kk - 1];
    let half = ql >> 1;
    for poly in ct.iter_mut() {
        let last = poly.pop().unwrap();
        let c = block(led, "modswitch");
        let last: Vec<u64> = last.iter().map(|&x| add_mod(x, half, ql)).collect();
        c.modadds += n as u64;
        c.sram_reads += n as u64;
        for (i, lane) in poly.iter_mut().enumerate() {
            let q = p.primes[i];
            let inv = inv_mod(ql % q, q);
            let half_q = half % q;
            for (x, &y) in lane.iter_mut().zip(&last) {
                let tmp = sub_mod(y % q, half_q, q);
                *x = mul_mod(sub_mod(*x, tmp, q), inv, q);
            }
            c.modmuls += n as u64;
            c.modadds += 3 * n as u64; // reduce, -half, subtract
            c.sram_reads += n as u64;
            c.sram_writes += n as u64;
            c.coeffs += n as u64;
        }
    }
    add_scaled_plain(p, &mut ct[0], m, block(led, "scale"));
    Ok(ct)
}

fn check_plain(p: &Params, m: &[u64]) -> Result<(), String> {
    if m.len() > p.n || m.iter().any(|&x| x >= p.t) {
        return Err(format!("plaintext: at most {} coefficients, each below t = {}", p.n, p.t));
    }
    Ok(())
}

/// c0 += round(q m / t) = m * floor(q/t) + floor(((q mod t) m + (t+1)/2) / t), per data prime
/// (SEAL's `multiply_add_plain_with_scaling_variant`).
fn add_scaled_plain(p: &Params, c0: &mut [Vec<u64>], m: &[u64], c: &mut Counts) {
    let (t, l) = (p.t, p.data_primes());
    let q_mod_t = p.primes[..l].iter().fold(1 % t, |a, &q| mul_mod(a, q % t, t));
    let mut fix = vec![0u64; m.len()];
    for (f, &mi) in fix.iter_mut().zip(m) {
        *f = ((q_mod_t as u128 * mi as u128 + ((t + 1) / 2) as u128) / t as u128) as u64;
    }
    c.modmuls += m.len() as u64; // (q mod t) m, then a divide by t
    c.divides += m.len() as u64;
    for i in 0..l {
        let q = p.primes[i];
        // floor(q/t) mod q_i = -(q mod t) / t mod q_i, as q = 0 mod q_i
        let delta = mul_mod(sub_mod(0, q_mod_t % q, q), inv_mod(t % q, q), q);
        for (j, (&mi, &f)) in m.iter().zip(&fix).enumerate() {
            let x = &mut c0[i][j];
            *x = add_mod(*x, add_mod(mul_mod(mi, delta, q), f % q, q), q);
        }
        c.modmuls += m.len() as u64;
        c.modadds += 2 * m.len() as u64;
        c.sram_reads += m.len() as u64;
        c.sram_writes += m.len() as u64;
        c.coeffs += m.len() as u64;
    }
}

/// SEAL's symmetric BFV encryption (`encrypt_zero_symmetric` + the same plaintext scaling) over
/// the data primes with a secret key in NTT form: a bootstrap PRNG of type `prng` draws a
/// 64-byte seed for a BLAKE2Xb PRNG (SEAL's default factory, whatever `prng` is) that draws
/// the uniform a; the bootstrap PRNG then draws e; c1 = INTT(a), c0 = -(INTT(s . a) + e) + Δm.
pub fn encrypt_symmetric(p: &Params, sk: &[Vec<u64>], m: &[u64], prng: PrngType, seed: &[u8], led: &mut Ledger) -> Result<Vec<Vec<Vec<u64>>>, String> {
    let (n, l) = (p.n, p.data_primes());
    if sk.len() < l || sk.iter().any(|r| r.len() != n) {
        return Err(format!("secret key: expected {l} primes x {n} coefficients"));
    }
    check_plain(p, m)?;
    let mut boot = Prng::new(prng, seed)?;
    let mut ct_seed = [0u8; crate::prng::SEED_BYTES];
    boot.fill(&mut ct_seed, block(led, "sample_a"));
    let a = Prng::new(PrngType::Blake2xb, &ct_seed)?.uniform(n, &p.primes[..l], block(led, "sample_a"));
    block(led, "sample_a").coeffs += (n * l) as u64;
    let e = boot.cbd(n, block(led, "sample_e"));
    block(led, "sample_e").coeffs += n as u64;
    let mut c0 = Vec::with_capacity(l);
    let mut c1 = Vec::with_capacity(l);
    for (i, ai) in a.into_iter().enumerate() {
        let q = p.primes[i];
        let mut x = dyadic(&ai, &sk[i], q, block(led, "dyadic"));
        p.tables[i].inverse(&mut x, block(led, "intt"));
        let c = block(led, "errors");
        for (v, &ei) in x.iter_mut().zip(&e) {
            *v = sub_mod(0, add_mod(*v, lift(ei, q), q), q);
        }
        c.modadds += 3 * n as u64; // lift, add, negate
        c.sram_reads += n as u64;
        c.sram_writes += n as u64;
        c.coeffs += n as u64;
        c0.push(x);
        let mut y = ai;
        p.tables[i].inverse(&mut y, block(led, "intt"));
        c1.push(y);
    }
    add_scaled_plain(p, &mut c0, m, block(led, "scale"));
    Ok(vec![c0, c1])
}

/// Decrypts a coefficient-form ciphertext over the data primes with a secret key in SEAL's
/// NTT form (`sk[i]` for at least the data primes). Returns n coefficients mod t.
pub fn decrypt(p: &Params, sk: &[Vec<u64>], ct: &[Vec<Vec<u64>>], led: &mut Ledger) -> Result<Vec<u64>, String> {
    let (n, l) = (p.n, p.data_primes());
    if ct.len() != 2 || ct.iter().any(|poly| poly.len() != l || poly.iter().any(|r| r.len() != n)) {
        return Err(format!("ciphertext: expected 2 polynomials x {l} primes x {n} coefficients"));
    }
    if sk.len() < l || sk.iter().any(|r| r.len() != n) {
        return Err(format!("secret key: expected {l} primes x {n} coefficients"));
    }
    let mut phase: Vec<Vec<u64>> = Vec::with_capacity(l);
    for i in 0..l {
        let q = p.primes[i];
        let mut x = ct[1][i].clone();
        p.tables[i].forward(&mut x, block(led, "ntt"));
        let mut x = dyadic(&x, &sk[i], q, block(led, "dyadic"));
        p.tables[i].inverse(&mut x, block(led, "intt"));
        let c = block(led, "add");
        for (a, &b) in x.iter_mut().zip(&ct[0][i]) {
            *a = add_mod(*a, b, q);
        }
        c.modadds += n as u64;
        c.sram_reads += 2 * n as u64;
        c.sram_writes += n as u64;
        c.coeffs += n as u64;
        phase.push(x);
    }
    Ok(scale_round(p, &phase, block(led, "scale_round")))
}

fn scale_round(p: &Params, phase: &[Vec<u64>], c: &mut Counts) -> Vec<u64> {
    let (n, l, t) = (p.n, p.data_primes(), p.t);
    let gamma = seal_gamma(n as u64);
    let qs = &p.primes[..l];
    let prod_mod = |m: u64, skip: Option<usize>| {
        qs.iter().enumerate().filter(|(i, _)| Some(*i) != skip).fold(1 % m, |a, (_, &q)| mul_mod(a, q % m, m))
    };
    // per prime: t*gamma * (q/q_i)^-1 mod q_i, and (q/q_i) mod t, mod gamma
    let pre: Vec<u64> = (0..l)
        .map(|i| {
            let q = qs[i];
            let inv_punct = inv_mod(prod_mod(q, Some(i)), q);
            mul_mod(mul_mod(t % q, gamma % q, q), inv_punct, q)
        })
        .collect();
    let punct_t: Vec<u64> = (0..l).map(|i| prod_mod(t, Some(i))).collect();
    let punct_g: Vec<u64> = (0..l).map(|i| prod_mod(gamma, Some(i))).collect();
    let neg_inv_q = |m: u64| sub_mod(0, inv_mod(prod_mod(m, None), m), m);
    let (niq_t, niq_g) = (neg_inv_q(t), neg_inv_q(gamma));
    let inv_gamma_t = inv_mod(gamma % t, t);
    let mut out = vec![0u64; n];
    for (j, o) in out.iter_mut().enumerate() {
        let (mut yt, mut yg) = (0u64, 0u64);
        for i in 0..l {
            let y = mul_mod(phase[i][j], pre[i], qs[i]);
            yt = add_mod(yt, mul_mod(y % t, punct_t[i], t), t);
            yg = add_mod(yg, mul_mod(y % gamma, punct_g[i], gamma), gamma);
        }
        yt = mul_mod(yt, niq_t, t);
        yg = mul_mod(yg, niq_g, gamma);
        let v = if yg > gamma >> 1 { add_mod(yt, (gamma - yg) % t, t) } else { sub_mod(yt, yg % t, t) };
        *o = if v != 0 { mul_mod(v, inv_gamma_t, t) } else { 0 };
    }
    c.modmuls += (n * (3 * l + 3)) as u64;
    c.modadds += (n * (2 * l + 1)) as u64;
    c.sram_reads += (n * l) as u64;
    c.sram_writes += n as u64;
    c.coeffs += n as u64;
    out
}
