//! The PRNG and sampler block, as SEAL 4.x computes them (read from SEAL's `randomgen.cpp` and
//! `util/rlwe.cpp`; the code here is written from that description, not copied).
//!
//! SEAL's PRNG (`UniformRandomGenerator`) holds a 64-byte seed and a 64-bit counter from 0 and
//! hands out bytes from a 4096-byte buffer; each refill is one call of the hash, then counter+1:
//! * `blake2xb` (SEAL's default): BLAKE2Xb keyed with the seed, input the counter (8 bytes,
//!   little endian), 4096 output bytes: one root BLAKE2b (key block + counter block, two
//!   compressions) and 64 output-node BLAKE2b compressions;
//! * `shake256`: SHAKE256 of seed || counter (72 bytes), 4096 output bytes: 31 Keccak-f[1600]
//!   permutations at the 136-byte rate.
//!
//! Samplers (what they consume is what the hardware must generate):
//! * ternary u: `std::uniform_int_distribution<uint64_t>(0, 2)` over 32-bit little-endian words,
//!   as GCC's libstdc++ (11 and later) computes it: Lemire's multiply-shift, x*3 >> 32, drawing
//!   again only when the low word of x*3 is below (2^32 - 3) mod 3 = 1; value - 1. (The C++
//!   standard does not fix this algorithm: a SEAL built with MSVC or libc++ draws other u.)
//! * errors: SEAL's default centred binomial, 6 bytes per coefficient: the popcount of 21 bits
//!   minus the popcount of 21 bits (x[2] and x[5] masked to 5 bits).
//! * uniform mod q (the symmetric c1): n*k 64-bit words in one draw, then per prime, in order,
//!   a word at or above 2^64 - 1 - ((2^64 - 1) mod q) - 1 is replaced by the next word of the
//!   stream; the value is the word mod q.

use sha3::digest::{ExtendableOutput, Update, XofReader};

use crate::Counts;

pub const SEED_BYTES: usize = 64;
pub const BUFFER_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrngType {
    Blake2xb,
    Shake256,
}

impl PrngType {
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "blake2xb" => Ok(PrngType::Blake2xb),
            "shake256" => Ok(PrngType::Shake256),
            _ => Err(format!("prng {name:?}: unknown; known: blake2xb, shake256")),
        }
    }

    /// Hash compressions (BLAKE2b) or permutations (Keccak-f) per 4096-byte refill.
    pub fn blocks_per_refill(self) -> u64 {
        match self {
            PrngType::Blake2xb => 2 + (BUFFER_BYTES / 64) as u64,
            PrngType::Shake256 => BUFFER_BYTES.div_ceil(136) as u64,
        }
    }
}

/// BLAKE2Xb (Aumasson et al., "BLAKE2X", 2016) of `input` keyed with `key`, `out.len()` bytes
/// (1 ..= 2^32 - 2): the root BLAKE2b with xof_length in the parameter block's upper node-offset
/// word, then one BLAKE2b of the root hash per 64 output bytes (fanout 0, depth 0, leaf and
/// inner length 64, node offset i).
pub fn blake2xb(out: &mut [u8], input: &[u8], key: &[u8]) {
    let xof = (out.len() as u64) << 32;
    let root = blake2b_simd::Params::new()
        .hash_length(64)
        .key(key)
        .fanout(1)
        .max_depth(1)
        .node_offset(xof)
        .hash(input);
    for (i, chunk) in out.chunks_mut(64).enumerate() {
        let h = blake2b_simd::Params::new()
            .hash_length(chunk.len())
            .fanout(0)
            .max_depth(0)
            .max_leaf_length(64)
            .node_offset(xof | i as u64)
            .inner_hash_length(64)
            .hash(root.as_bytes());
        chunk.copy_from_slice(h.as_bytes());
    }
}

pub fn shake256(out: &mut [u8], input: &[u8]) {
    let mut h = sha3::Shake256::default();
    h.update(input);
    h.finalize_xof().read(out);
}

pub struct Prng {
    kind: PrngType,
    seed: [u8; SEED_BYTES],
    counter: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Prng {
    pub fn new(kind: PrngType, seed: &[u8]) -> Result<Self, String> {
        let seed: [u8; SEED_BYTES] = seed
            .try_into()
            .map_err(|_| format!("prng seed: {} bytes, SEAL's seed is {SEED_BYTES}", seed.len()))?;
        Ok(Prng { kind, seed, counter: 0, buf: vec![0; BUFFER_BYTES], pos: BUFFER_BYTES })
    }

    fn refill(&mut self, c: &mut Counts) {
        let ctr = self.counter.to_le_bytes();
        match self.kind {
            PrngType::Blake2xb => blake2xb(&mut self.buf, &ctr, &self.seed),
            PrngType::Shake256 => {
                let mut input = [0u8; SEED_BYTES + 8];
                input[..SEED_BYTES].copy_from_slice(&self.seed);
                input[SEED_BYTES..].copy_from_slice(&ctr);
                shake256(&mut self.buf, &input);
            }
        }
        self.counter += 1;
        self.pos = 0;
        c.prng_blocks += self.kind.blocks_per_refill();
    }

    /// The next `out.len()` bytes of the stream.
    pub fn fill(&mut self, out: &mut [u8], c: &mut Counts) {
        let mut done = 0;
        while done < out.len() {
            if self.pos == BUFFER_BYTES {
                self.refill(c);
            }
            let k = (out.len() - done).min(BUFFER_BYTES - self.pos);
            out[done..done + k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
            done += k;
        }
        c.prng_bytes += out.len() as u64;
    }

    fn u32(&mut self, c: &mut Counts) -> u32 {
        let mut b = [0u8; 4];
        self.fill(&mut b, c);
        u32::from_le_bytes(b)
    }

    fn u64(&mut self, c: &mut Counts) -> u64 {
        let mut b = [0u8; 8];
        self.fill(&mut b, c);
        u64::from_le_bytes(b)
    }

    pub fn ternary(&mut self, n: usize, c: &mut Counts) -> Vec<i8> {
        const RANGE: u64 = 3;
        let threshold = (RANGE as u32).wrapping_neg() % RANGE as u32;
        (0..n)
            .map(|_| {
                let mut prod = self.u32(c) as u64 * RANGE;
                while (prod as u32) < threshold {
                    prod = self.u32(c) as u64 * RANGE;
                }
                (prod >> 32) as i8 - 1
            })
            .collect()
    }

    pub fn cbd(&mut self, n: usize, c: &mut Counts) -> Vec<i8> {
        (0..n)
            .map(|_| {
                let mut x = [0u8; 6];
                self.fill(&mut x, c);
                x[2] &= 0x1f;
                x[5] &= 0x1f;
                let pos = x[0].count_ones() + x[1].count_ones() + x[2].count_ones();
                let neg = x[3].count_ones() + x[4].count_ones() + x[5].count_ones();
                (pos as i32 - neg as i32) as i8
            })
            .collect()
    }

    /// Uniform polynomials mod each prime: `out[i]` is modulo `primes[i]`.
    pub fn uniform(&mut self, n: usize, primes: &[u64], c: &mut Counts) -> Vec<Vec<u64>> {
        let mut raw = vec![0u8; 8 * n * primes.len()];
        self.fill(&mut raw, c);
        let words: Vec<u64> = raw.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
        primes
            .iter()
            .enumerate()
            .map(|(i, &q)| {
                let max_multiple = u64::MAX - u64::MAX % q - 1;
                words[i * n..(i + 1) * n]
                    .iter()
                    .map(|&w| {
                        let mut r = w;
                        while r >= max_multiple {
                            r = self.u64(c);
                        }
                        r % q
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn shake256_published_vectors() {
        // FIPS 202 / NIST CAVP: SHAKE256 of the empty message, first 32 output bytes
        let mut out = [0u8; 32];
        shake256(&mut out, b"");
        assert_eq!(out.to_vec(), hex("46b9dd2b0ba88d13233b3feb743eeb243fcd52ea62b81b82b50c27646ed5762f"));
    }

    #[test]
    fn sampler_moments() {
        let mut c = Counts::default();
        let mut p = Prng::new(PrngType::Blake2xb, &[7u8; 64]).unwrap();
        let n = 200_000;
        let u = p.ternary(n, &mut c);
        let mean: f64 = u.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        let var: f64 = u.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01 && (var - 2.0 / 3.0).abs() < 0.01, "{mean} {var}");
        // one 32-bit word per coefficient (a redraw has probability 2^-32)
        assert_eq!(c.prng_bytes, 4 * n as u64);
        assert_eq!(c.prng_blocks, (4 * n as u64).div_ceil(4096) * 66);
        let before = c.prng_bytes;
        let e = p.cbd(n, &mut c);
        assert_eq!(c.prng_bytes - before, 6 * n as u64);
        let var: f64 = e.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / n as f64;
        assert!((var - 10.5).abs() < 0.2, "{var}");
        assert!(e.iter().all(|&v| v.abs() <= 21));
    }

    #[test]
    fn bad_seed_and_type() {
        assert!(Prng::new(PrngType::Shake256, &[0u8; 32]).err().unwrap().contains("32 bytes"));
        assert!(PrngType::parse("blake3").unwrap_err().contains("known: blake2xb, shake256"));
    }
}
