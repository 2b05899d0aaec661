//! AES-CTR one-time pads, addressed by `(key, nonce, counter)`.
//!
//! Counter block layout (NIST SP 800-38A, Appendix B.1 with a 64-bit counter field):
//! `nonce (8 bytes) ‖ counter (u64, big-endian)`; block `i` of the pad uses `counter + i`.
//! A pad is thus a pure function of (key, nonce, counter, length), which is what ghost
//! routing needs: both ends of a (source, destination) pair derive the same pad from the
//! pair's nonce and the message's counter, and pads can be precomputed into buffers ahead of
//! use. The counter is in 16-byte blocks, not bytes. We refuse pads that would run the
//! counter past 2^64 - 1 instead of letting it wrap, since a wrap would repeat the pad of
//! counter 0 (a reused one-time pad leaks the XOR of two plaintexts).

use aes::cipher::{InnerIvInit, StreamCipher};
use ctr::CtrCore;

use crate::block::{AesCipher, AES_BLOCK};
use crate::error::{CryptoError, Result};

/// Nonce length in bytes; the other 8 bytes of the counter block are the counter.
pub const CTR_NONCE_LEN: usize = 8;

fn nonce8(nonce: &[u8]) -> Result<[u8; 8]> {
    nonce.try_into().map_err(|_| {
        CryptoError::input(format!(
            "AES-CTR nonce must be 8 bytes, got {}",
            nonce.len()
        ))
    })
}

fn check_counter(counter: u64, len: usize) -> Result<()> {
    let blocks = len.div_ceil(AES_BLOCK) as u128;
    if blocks > 0 && counter as u128 + blocks - 1 > u64::MAX as u128 {
        return Err(CryptoError::input(format!(
            "AES-CTR counter {counter} + {blocks} blocks would wrap past 2^64-1 and reuse the pad"
        )));
    }
    Ok(())
}

/// A keyed AES-CTR pad generator; reuse it to avoid re-expanding the key per pad.
#[derive(Clone)]
pub struct AesCtr {
    cipher: AesCipher,
}

impl AesCtr {
    /// `key`: 16, 24 or 32 bytes (AES-128/192/256).
    pub fn new(key: &[u8]) -> Result<Self> {
        Ok(AesCtr {
            cipher: AesCipher::new(key)?,
        })
    }

    /// XORs the pad for `(nonce, counter)` into `data` (encryption and decryption alike).
    pub fn xor(&self, nonce: &[u8], counter: u64, data: &mut [u8]) -> Result<()> {
        let nonce = nonce8(nonce)?;
        check_counter(counter, data.len())?;
        let mut iv = [0u8; 16];
        iv[..8].copy_from_slice(&nonce);
        iv[8..].copy_from_slice(&counter.to_be_bytes());
        let iv = (&iv).into();
        match &self.cipher {
            AesCipher::Aes128(c) => {
                ctr::Ctr64BE::<aes::Aes128>::from_core(CtrCore::inner_iv_init(c.clone(), iv))
                    .apply_keystream(data)
            }
            AesCipher::Aes192(c) => {
                ctr::Ctr64BE::<aes::Aes192>::from_core(CtrCore::inner_iv_init(c.clone(), iv))
                    .apply_keystream(data)
            }
            AesCipher::Aes256(c) => {
                ctr::Ctr64BE::<aes::Aes256>::from_core(CtrCore::inner_iv_init(c.clone(), iv))
                    .apply_keystream(data)
            }
        }
        Ok(())
    }

    /// Writes the pad for `(nonce, counter)` into `out` (its whole length).
    pub fn pad_into(&self, nonce: &[u8], counter: u64, out: &mut [u8]) -> Result<()> {
        out.fill(0);
        self.xor(nonce, counter, out)
    }
}

/// The `len`-byte AES-CTR pad for `(key, nonce, counter)`.
pub fn ctr_pad(key: &[u8], nonce: &[u8], counter: u64, len: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    AesCtr::new(key)?.pad_into(nonce, counter, &mut out)?;
    Ok(out)
}

/// XORs the AES-CTR pad for `(key, nonce, counter)` into `data` in place.
pub fn ctr_xor(key: &[u8], nonce: &[u8], counter: u64, data: &mut [u8]) -> Result<()> {
    AesCtr::new(key)?.xor(nonce, counter, data)
}
