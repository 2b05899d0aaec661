//! AES single-block encryption with a cached key schedule.

use aes::cipher::{generic_array::GenericArray, BlockDecrypt, BlockEncrypt, KeyInit};

use crate::error::{CryptoError, Result};

/// AES block size in bytes.
pub const AES_BLOCK: usize = 16;

/// An expanded AES key (128, 192 or 256 bits, chosen by the key length).
#[derive(Clone)]
pub enum AesCipher {
    Aes128(aes::Aes128),
    Aes192(aes::Aes192),
    Aes256(aes::Aes256),
}

impl AesCipher {
    /// Expands `key` (16, 24 or 32 bytes).
    pub fn new(key: &[u8]) -> Result<Self> {
        Ok(match key.len() {
            16 => AesCipher::Aes128(aes::Aes128::new(GenericArray::from_slice(key))),
            24 => AesCipher::Aes192(aes::Aes192::new(GenericArray::from_slice(key))),
            32 => AesCipher::Aes256(aes::Aes256::new(GenericArray::from_slice(key))),
            n => return Err(CryptoError::key_len("AES", "16, 24 or 32", n)),
        })
    }

    /// Encrypts one 16-byte block in place.
    pub fn encrypt(&self, block: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(block);
        match self {
            AesCipher::Aes128(c) => c.encrypt_block(b),
            AesCipher::Aes192(c) => c.encrypt_block(b),
            AesCipher::Aes256(c) => c.encrypt_block(b),
        }
    }

    /// Decrypts one 16-byte block in place.
    pub fn decrypt(&self, block: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(block);
        match self {
            AesCipher::Aes128(c) => c.decrypt_block(b),
            AesCipher::Aes192(c) => c.decrypt_block(b),
            AesCipher::Aes256(c) => c.decrypt_block(b),
        }
    }

    /// Encrypts every 16-byte block of `data` independently (ECB); the cipher pipelines
    /// several blocks at once, so this is much faster than a loop over [`Self::encrypt`].
    pub fn encrypt_ecb(&self, data: &mut [u8]) -> Result<()> {
        let blocks = as_blocks(data)?;
        match self {
            AesCipher::Aes128(c) => c.encrypt_blocks(blocks),
            AesCipher::Aes192(c) => c.encrypt_blocks(blocks),
            AesCipher::Aes256(c) => c.encrypt_blocks(blocks),
        }
        Ok(())
    }

    /// Inverse of [`Self::encrypt_ecb`].
    pub fn decrypt_ecb(&self, data: &mut [u8]) -> Result<()> {
        let blocks = as_blocks(data)?;
        match self {
            AesCipher::Aes128(c) => c.decrypt_blocks(blocks),
            AesCipher::Aes192(c) => c.decrypt_blocks(blocks),
            AesCipher::Aes256(c) => c.decrypt_blocks(blocks),
        }
        Ok(())
    }
}

fn as_blocks(data: &mut [u8]) -> Result<&mut [GenericArray<u8, aes::cipher::consts::U16>]> {
    if data.len() % AES_BLOCK != 0 {
        return Err(CryptoError::input(format!(
            "AES-ECB data must be a multiple of 16 bytes, got {}",
            data.len()
        )));
    }
    // The cipher's multi-block entry point wants a slice of blocks; reinterpreting the byte
    // slice avoids a copy.
    let n = data.len() / AES_BLOCK;
    let ptr = data.as_mut_ptr() as *mut GenericArray<u8, aes::cipher::consts::U16>;
    // SAFETY: `data` is exactly n * 16 bytes, GenericArray<u8, U16> is repr(transparent) over
    // [u8; 16] (alignment 1), and the returned slice borrows `data` mutably.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, n) })
}

pub(crate) fn block16(block: &[u8], what: &str) -> Result<[u8; 16]> {
    block.try_into().map_err(|_| {
        CryptoError::input(format!(
            "{what} block must be 16 bytes, got {}",
            block.len()
        ))
    })
}

/// Encrypts one 16-byte block with AES under `key` (16, 24 or 32 bytes).
pub fn aes_encrypt_block(key: &[u8], block: &[u8]) -> Result<[u8; 16]> {
    let c = AesCipher::new(key)?;
    let mut b = block16(block, "AES")?;
    c.encrypt(&mut b);
    Ok(b)
}

/// Decrypts one 16-byte block with AES under `key` (16, 24 or 32 bytes).
pub fn aes_decrypt_block(key: &[u8], block: &[u8]) -> Result<[u8; 16]> {
    let c = AesCipher::new(key)?;
    let mut b = block16(block, "AES")?;
    c.decrypt(&mut b);
    Ok(b)
}
