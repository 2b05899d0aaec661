//! The PRNG and sampler block. SEAL draws encryption randomness from BLAKE3 (its
//! `Blake3PRNG`: the hash of a 64-byte seed in extendable-output mode, read in order); the
//! block here does the same, one 64-byte compression output at a time, and counts every byte
//! and compression it uses. Bit-compatibility with SEAL's stream is not needed: encryption is
//! randomized and SEAL decrypts any correctly formed ciphertext.
//!
//! Samplers (what they consume is what the hardware must generate):
//! * ternary u: one byte per try, rejected if 255, else (byte mod 3) - 1 (uniform on
//!   {-1, 0, 1}; SEAL draws a 32-bit word per coefficient through `uniform_int_distribution`,
//!   the distribution is the same);
//! * errors: SEAL's default centred binomial, 6 bytes per coefficient: the popcount of 21
//!   bits minus the popcount of 21 bits (standard deviation sqrt(10.5) = 3.24, SEAL's 3.2).

use crate::Counts;

pub struct Prng {
    reader: blake3::OutputReader,
    buf: [u8; 64],
    pos: usize,
}

impl Prng {
    pub fn new(seed: &[u8]) -> Self {
        let mut h = blake3::Hasher::new();
        h.update(seed);
        Prng { reader: h.finalize_xof(), buf: [0; 64], pos: 64 }
    }

    fn byte(&mut self, c: &mut Counts) -> u8 {
        if self.pos == 64 {
            self.reader.fill(&mut self.buf);
            self.pos = 0;
            c.prng_blocks += 1;
        }
        c.prng_bytes += 1;
        self.pos += 1;
        self.buf[self.pos - 1]
    }

    pub fn ternary(&mut self, n: usize, c: &mut Counts) -> Vec<i8> {
        (0..n)
            .map(|_| loop {
                let b = self.byte(c);
                if b != 255 {
                    break (b % 3) as i8 - 1;
                }
            })
            .collect()
    }

    pub fn cbd(&mut self, n: usize, c: &mut Counts) -> Vec<i8> {
        (0..n)
            .map(|_| {
                let mut x = [0u8; 6];
                for b in x.iter_mut() {
                    *b = self.byte(c);
                }
                x[2] &= 0x1f;
                x[5] &= 0x1f;
                let pos = x[0].count_ones() + x[1].count_ones() + x[2].count_ones();
                let neg = x[3].count_ones() + x[4].count_ones() + x[5].count_ones();
                (pos as i32 - neg as i32) as i8
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_moments() {
        let mut c = Counts::default();
        let mut p = Prng::new(b"veil taco sampler test seed");
        let n = 200_000;
        let u = p.ternary(n, &mut c);
        let mean: f64 = u.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        let var: f64 = u.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01 && (var - 2.0 / 3.0).abs() < 0.01, "{mean} {var}");
        // rejection: n bytes plus about n/256 retries
        assert!(c.prng_bytes >= n as u64 && c.prng_bytes < n as u64 * 1010 / 1000);
        let before = c.prng_bytes;
        let e = p.cbd(n, &mut c);
        assert_eq!(c.prng_bytes - before, 6 * n as u64);
        let var: f64 = e.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / n as f64;
        assert!((var - 10.5).abs() < 0.2, "{var}");
        assert!(e.iter().all(|&v| v.abs() <= 21));
    }
}
