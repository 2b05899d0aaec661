//! The line encryption modes: an OCB-like direct mode and counter mode.
//!
//! **Direct mode (paper §2.1, Fig. 1).** A 64-byte line is cut into cipher-size chunks (16 bytes
//! for AES, 8 for TDES) and every chunk is encrypted independently as in OCB:
//! `C_i = E_K(P_i ⊕ Δ_i) ⊕ Δ_i` with `Δ_i = R ⊕ 2^(i+1)·L` in GF(2^n), where `L = E_K(0)` is a
//! secret constant and `R` a secret derived from the nonce. The nonce is the line's address
//! concatenated with a per-line counter that the processor increments on every dirty writeback
//! (paper: "the nonce associated with dynamic data blocks is incremented each time the
//! corresponding dirty data block is evicted"), so equal plaintexts at two addresses, or at one
//! address after two writebacks, encrypt differently. `R` comes from a separate key (domain
//! separation): for AES `R = E_KR(line ‖ nonce)`, one 128-bit block; for TDES the 128-bit
//! (line, nonce) pair does not fit one 64-bit block, so `R = E_KR(E_KR(line) ⊕ nonce)`, a
//! two-block CBC-MAC, which is a PRF on fixed-length input. Because chunks are independent given
//! `Δ_i`, the processor can encrypt a guessed plaintext for any chunk before the line arrives:
//! ciphertext speculation.
//!
//! **Counter mode.** The line is XORed with a 64-byte AES-CTR pad for (line, per-line counter),
//! taken from veil-crypto's [`AesCtr`] with nonce = line index and block counter = 4 · counter
//! (four pad blocks per line, so pads of successive counters never overlap).

use veil_crypto::{AesCipher, AesCtr, Tdes};

use crate::error::{Error, Result};

/// Which block cipher encrypts the chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CipherKind {
    Aes128,
    Aes256,
    Tdes,
}

impl CipherKind {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "aes128" => Ok(CipherKind::Aes128),
            "aes256" => Ok(CipherKind::Aes256),
            "tdes" => Ok(CipherKind::Tdes),
            _ => Err(Error::config(format!(
                "cipher: unknown cipher '{s}' (known: aes128, aes256, tdes)"
            ))),
        }
    }

    /// Chunk (cipher block) size in bytes.
    pub fn chunk_bytes(self) -> usize {
        match self {
            CipherKind::Tdes => 8,
            _ => 16,
        }
    }

    pub fn key_bytes(self) -> usize {
        match self {
            CipherKind::Aes128 => 16,
            CipherKind::Aes256 => 32,
            CipherKind::Tdes => 24,
        }
    }
}

// One per key of a memory: boxing the larger variant would only add an indirection per block.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Block {
    Aes(AesCipher),
    Tdes(Tdes),
}

impl Block {
    fn new(kind: CipherKind, key: &[u8]) -> Result<Self> {
        Ok(match kind {
            CipherKind::Tdes => Block::Tdes(Tdes::new(key).map_err(Error::crypto)?),
            _ => Block::Aes(AesCipher::new(key).map_err(Error::crypto)?),
        })
    }

    /// Encrypts one block held in the low `n` bytes of a u128 (little-endian).
    #[inline]
    fn enc(&self, x: u128) -> u128 {
        match self {
            Block::Aes(c) => {
                let mut b = x.to_le_bytes();
                c.encrypt(&mut b);
                u128::from_le_bytes(b)
            }
            Block::Tdes(c) => {
                let mut b = (x as u64).to_le_bytes();
                c.encrypt(&mut b);
                u64::from_le_bytes(b) as u128
            }
        }
    }

    #[inline]
    fn dec(&self, x: u128) -> u128 {
        match self {
            Block::Aes(c) => {
                let mut b = x.to_le_bytes();
                c.decrypt(&mut b);
                u128::from_le_bytes(b)
            }
            Block::Tdes(c) => {
                let mut b = (x as u64).to_le_bytes();
                c.decrypt(&mut b);
                u64::from_le_bytes(b) as u128
            }
        }
    }
}

/// Doubling in GF(2^128) (x^128 + x^7 + x^2 + x + 1) or GF(2^64) (x^64 + x^4 + x^3 + x + 1).
#[inline]
fn double(x: u128, bits: u32) -> u128 {
    if bits == 128 {
        (x << 1) ^ if x >> 127 == 1 { 0x87 } else { 0 }
    } else {
        let y = x as u64;
        ((y << 1) ^ if y >> 63 == 1 { 0x1B } else { 0 }) as u128
    }
}

/// Keyed OCB-like direct line encryption (AES-128/256 or TDES chunks).
#[derive(Clone)]
pub struct DirectMode {
    kind: CipherKind,
    data: Block,
    nonce: Block,
    /// `2^(i+1)·L` for each chunk index.
    l_mult: [u128; 8],
}

/// The per-chunk offsets of one (line, nonce).
pub type Offsets = [u128; 8];

impl DirectMode {
    /// `data_key` and `nonce_key` must have the cipher's key length and differ.
    pub fn new(kind: CipherKind, data_key: &[u8], nonce_key: &[u8]) -> Result<Self> {
        if data_key == nonce_key {
            return Err(Error::config("keys: the data and nonce keys must differ"));
        }
        let data = Block::new(kind, data_key)?;
        let nonce = Block::new(kind, nonce_key)?;
        let bits = (kind.chunk_bytes() * 8) as u32;
        let mut l = data.enc(0);
        let mut l_mult = [0u128; 8];
        for m in l_mult.iter_mut() {
            l = double(l, bits);
            *m = l;
        }
        Ok(DirectMode { kind, data, nonce, l_mult })
    }

    pub fn kind(&self) -> CipherKind {
        self.kind
    }

    pub fn chunks(&self) -> usize {
        64 / self.kind.chunk_bytes()
    }

    /// Δ_i for every chunk of (line index, nonce).
    pub fn offsets(&self, line: u64, nonce: u64) -> Offsets {
        let r = match self.kind {
            CipherKind::Tdes => {
                let a = self.nonce.enc(line as u128);
                self.nonce.enc(a ^ nonce as u128)
            }
            _ => self.nonce.enc(line as u128 | (nonce as u128) << 64),
        };
        let mut d = [0u128; 8];
        for (o, m) in d.iter_mut().zip(self.l_mult) {
            *o = r ^ m;
        }
        d
    }

    /// Encrypts one chunk (value in the low chunk-size bytes) under offset `delta`.
    #[inline]
    pub fn encrypt_chunk(&self, delta: u128, p: u128) -> u128 {
        self.data.enc(p ^ delta) ^ delta
    }

    #[inline]
    pub fn decrypt_chunk(&self, delta: u128, c: u128) -> u128 {
        self.data.dec(c ^ delta) ^ delta
    }

    /// Encrypts a whole 64-byte line.
    pub fn encrypt_line(&self, line: u64, nonce: u64, pt: &[u8; 64]) -> [u8; 64] {
        let d = self.offsets(line, nonce);
        let cb = self.kind.chunk_bytes();
        let mut out = [0u8; 64];
        for i in 0..self.chunks() {
            let c = self.encrypt_chunk(d[i], load(&pt[i * cb..(i + 1) * cb]));
            store(c, &mut out[i * cb..(i + 1) * cb]);
        }
        out
    }

    pub fn decrypt_line(&self, line: u64, nonce: u64, ct: &[u8; 64]) -> [u8; 64] {
        let d = self.offsets(line, nonce);
        let cb = self.kind.chunk_bytes();
        let mut out = [0u8; 64];
        for i in 0..self.chunks() {
            let p = self.decrypt_chunk(d[i], load(&ct[i * cb..(i + 1) * cb]));
            store(p, &mut out[i * cb..(i + 1) * cb]);
        }
        out
    }
}

/// Little-endian chunk (8 or 16 bytes) to u128.
#[inline]
pub fn load(b: &[u8]) -> u128 {
    let mut x = [0u8; 16];
    x[..b.len()].copy_from_slice(b);
    u128::from_le_bytes(x)
}

#[inline]
pub fn store(x: u128, out: &mut [u8]) {
    let n = out.len();
    out.copy_from_slice(&x.to_le_bytes()[..n]);
}

/// Keyed counter-mode line pads (AES-CTR).
#[derive(Clone)]
pub struct CounterMode {
    ctr: AesCtr,
}

impl CounterMode {
    pub fn new(key: &[u8]) -> Result<Self> {
        Ok(CounterMode { ctr: AesCtr::new(key).map_err(Error::crypto)? })
    }

    /// The 64-byte pad of (line, counter).
    pub fn pad(&self, line: u64, counter: u64) -> [u8; 64] {
        let mut p = [0u8; 64];
        // counter < 2^62 always holds (a counter bumped once per writeback), so 4·counter + 3
        // never wraps and the call cannot fail.
        self.ctr
            .pad_into(&line.to_be_bytes(), counter.wrapping_mul(4), &mut p)
            .expect("pad of a 64-byte line with an in-range counter");
        p
    }
}
