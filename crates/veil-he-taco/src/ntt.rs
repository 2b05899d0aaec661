//! The negacyclic NTT exactly as SEAL lays it out: the smallest primitive 2n-th root psi,
//! twiddles psi^bitrev(i), Cooley-Tukey butterflies from natural order to bit-reversed order;
//! the inverse is Gentleman-Sande with psi^-bitrev(i) and a final n^-1. Because the map is
//! SEAL's own, SEAL's NTT-form keys multiply directly with our transforms. Every butterfly
//! and memory access is counted as it runs (one `Counts` per hardware block).

use crate::arith::{add_mod, inv_mod, minimal_primitive_root, mul_mod, sub_mod};
use crate::Counts;

#[derive(Clone, Debug)]
pub struct NttTables {
    pub q: u64,
    pub n: usize,
    roots: Vec<u64>,
    inv_roots: Vec<u64>,
    n_inv: u64,
}

fn bitrev(i: usize, bits: u32) -> usize {
    if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }
}

impl NttTables {
    pub fn new(n: usize, q: u64) -> Result<Self, String> {
        if !n.is_power_of_two() || n < 2 {
            return Err(format!("poly_degree {n} is not a power of two >= 2"));
        }
        let psi = minimal_primitive_root(2 * n as u64, q)
            .ok_or_else(|| format!("prime {q} is not 1 mod 2n = {}: no negacyclic NTT", 2 * n))?;
        let psi_inv = inv_mod(psi, q);
        let bits = n.trailing_zeros();
        let (mut roots, mut inv_roots) = (vec![0u64; n], vec![0u64; n]);
        let (mut p, mut pi) = (1u64, 1u64);
        for i in 0..n {
            roots[bitrev(i, bits)] = p;
            inv_roots[bitrev(i, bits)] = pi;
            p = mul_mod(p, psi, q);
            pi = mul_mod(pi, psi_inv, q);
        }
        Ok(NttTables { q, n, roots, inv_roots, n_inv: inv_mod(n as u64, q) })
    }

    /// In place, natural order in, bit-reversed evaluation order out (SEAL's NTT form).
    pub fn forward(&self, a: &mut [u64], c: &mut Counts) {
        let q = self.q;
        let (mut m, mut gap) = (1usize, self.n / 2);
        while m < self.n {
            for i in 0..m {
                let w = self.roots[m + i];
                c.sram_reads += 1; // twiddle
                let off = 2 * i * gap;
                for j in off..off + gap {
                    let u = a[j];
                    let v = mul_mod(a[j + gap], w, q);
                    a[j] = add_mod(u, v, q);
                    a[j + gap] = sub_mod(u, v, q);
                    c.butterflies += 1;
                    c.modmuls += 1;
                    c.modadds += 2;
                    c.sram_reads += 2;
                    c.sram_writes += 2;
                }
            }
            m <<= 1;
            gap >>= 1;
        }
        c.coeffs += self.n as u64;
    }

    /// Exact inverse of `forward`, including the n^-1 scaling.
    pub fn inverse(&self, a: &mut [u64], c: &mut Counts) {
        let q = self.q;
        let (mut m, mut gap) = (self.n / 2, 1usize);
        while m >= 1 {
            for i in 0..m {
                let w = self.inv_roots[m + i];
                c.sram_reads += 1;
                let off = 2 * i * gap;
                for j in off..off + gap {
                    let u = a[j];
                    let v = a[j + gap];
                    a[j] = add_mod(u, v, q);
                    a[j + gap] = mul_mod(sub_mod(u, v, q), w, q);
                    c.butterflies += 1;
                    c.modmuls += 1;
                    c.modadds += 2;
                    c.sram_reads += 2;
                    c.sram_writes += 2;
                }
            }
            m >>= 1;
            gap <<= 1;
        }
        for x in a.iter_mut() {
            *x = mul_mod(*x, self.n_inv, q);
            c.modmuls += 1;
            c.sram_reads += 1;
            c.sram_writes += 1;
        }
        c.coeffs += self.n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schoolbook_negacyclic(a: &[u64], b: &[u64], q: u64) -> Vec<u64> {
        let n = a.len();
        let mut r = vec![0u64; n];
        for i in 0..n {
            for j in 0..n {
                let p = mul_mod(a[i], b[j], q);
                if i + j < n {
                    r[i + j] = add_mod(r[i + j], p, q);
                } else {
                    r[i + j - n] = sub_mod(r[i + j - n], p, q);
                }
            }
        }
        r
    }

    /// Counts of one forward and one inverse transform, counted by hand (not from a run).
    /// N = 8 has log2 8 = 3 stages of N/2 = 4 butterflies: 12 butterflies; the stages read
    /// 1 + 2 + 4 = 7 = N - 1 twiddles. A butterfly is one modmul, two modadds (the add and the
    /// subtract), two coefficient reads and two writes. Forward: modmuls 12, modadds 24, reads
    /// 24 + 7 = 31, writes 24. The inverse adds the n^-1 scaling, one modmul, one read and one
    /// write per coefficient: modmuls 12 + 8 = 20, reads 31 + 8 = 39, writes 24 + 8 = 32.
    /// N = 16: 4 stages x 8 = 32 butterflies, 15 twiddles. Forward: modmuls 32, modadds 64,
    /// reads 64 + 15 = 79, writes 64; inverse: modmuls 32 + 16 = 48, reads 79 + 16 = 95,
    /// writes 64 + 16 = 80. Both transforms put N coefficients through the block.
    #[test]
    fn counts_match_a_hand_count_for_small_n() {
        let hand = |bf, mm, ma, rd, wr, n| Counts { butterflies: bf, modmuls: mm, modadds: ma, sram_reads: rd,
                                                       sram_writes: wr, coeffs: n, ..Counts::default() };
        // 17 = 2*8 + 1 and 97 = 3*32 + 1: primes with a primitive 2N-th root of unity
        for (n, q, fwd, inv) in [(8usize, 17u64, hand(12, 12, 24, 31, 24, 8), hand(12, 20, 24, 39, 32, 8)),
                                 (16, 97, hand(32, 32, 64, 79, 64, 16), hand(32, 48, 64, 95, 80, 16))] {
            let t = NttTables::new(n, q).unwrap();
            let a: Vec<u64> = (0..n as u64).map(|i| (5 * i + 3) % q).collect();
            let (mut x, mut cf, mut ci) = (a.clone(), Counts::default(), Counts::default());
            t.forward(&mut x, &mut cf);
            t.inverse(&mut x, &mut ci);
            assert_eq!(x, a, "N = {n}: the inverse undoes the forward transform");
            assert_eq!(cf, fwd, "N = {n}: forward transform");
            assert_eq!(ci, inv, "N = {n}: inverse transform");
        }
    }

    #[test]
    fn round_trip_and_negacyclic_product() {
        let (n, q) = (64usize, 1152921504606830593u64); // 2^60 - 2^14*... a prime = 1 mod 128
        let t = NttTables::new(n, q).unwrap();
        let a: Vec<u64> = (0..n as u64).map(|i| (i * 7919 + 3) % q).collect();
        let b: Vec<u64> = (0..n as u64).map(|i| (i * i * 104729 + 11) % q).collect();
        let mut c = Counts::default();
        let (mut fa, mut fb) = (a.clone(), b.clone());
        t.forward(&mut fa, &mut c);
        t.forward(&mut fb, &mut c);
        assert_eq!(c.butterflies, 2 * (n as u64 / 2) * 6);
        let mut prod: Vec<u64> = fa.iter().zip(&fb).map(|(x, y)| mul_mod(*x, *y, q)).collect();
        t.inverse(&mut prod, &mut c);
        assert_eq!(prod, schoolbook_negacyclic(&a, &b, q));
        t.inverse(&mut fa, &mut c);
        assert_eq!(fa, a);
    }
}
