//! Triple-DES (TDEA, 3-key EDE: E_K3(D_K2(E_K1(P)))) 8-byte block encryption, as in
//! NIST SP 800-67. Memory encryption uses it for 64-bit pads/chunks (the ciphertext
//! speculation paper's TDES engine); it is not recommended for new designs.

use des::cipher::{generic_array::GenericArray, BlockDecrypt, BlockEncrypt, KeyInit};

use crate::error::{CryptoError, Result};

/// TDES block size in bytes.
pub const TDES_BLOCK: usize = 8;

/// An expanded 3-key Triple-DES key (K1 ‖ K2 ‖ K3, 24 bytes; parity bits are ignored).
#[derive(Clone)]
pub struct Tdes(des::TdesEde3);

impl Tdes {
    pub fn new(key: &[u8]) -> Result<Self> {
        if key.len() != 24 {
            return Err(CryptoError::key_len(
                "TDES (3-key, K1||K2||K3)",
                "24",
                key.len(),
            ));
        }
        Ok(Tdes(des::TdesEde3::new(GenericArray::from_slice(key))))
    }

    pub fn encrypt(&self, block: &mut [u8; 8]) {
        self.0.encrypt_block(GenericArray::from_mut_slice(block));
    }

    pub fn decrypt(&self, block: &mut [u8; 8]) {
        self.0.decrypt_block(GenericArray::from_mut_slice(block));
    }

    /// Encrypts every 8-byte block of `data` independently (ECB).
    pub fn encrypt_ecb(&self, data: &mut [u8]) -> Result<()> {
        if data.len() % TDES_BLOCK != 0 {
            return Err(CryptoError::input(format!(
                "TDES-ECB data must be a multiple of 8 bytes, got {}",
                data.len()
            )));
        }
        for b in data.chunks_exact_mut(TDES_BLOCK) {
            self.0.encrypt_block(GenericArray::from_mut_slice(b));
        }
        Ok(())
    }
}

fn block8(block: &[u8]) -> Result<[u8; 8]> {
    block
        .try_into()
        .map_err(|_| CryptoError::input(format!("TDES block must be 8 bytes, got {}", block.len())))
}

/// Encrypts one 8-byte block with 3-key TDES (`key` = K1 ‖ K2 ‖ K3, 24 bytes).
pub fn tdes_encrypt_block(key: &[u8], block: &[u8]) -> Result<[u8; 8]> {
    let c = Tdes::new(key)?;
    let mut b = block8(block)?;
    c.encrypt(&mut b);
    Ok(b)
}

/// Decrypts one 8-byte block with 3-key TDES.
pub fn tdes_decrypt_block(key: &[u8], block: &[u8]) -> Result<[u8; 8]> {
    let c = Tdes::new(key)?;
    let mut b = block8(block)?;
    c.decrypt(&mut b);
    Ok(b)
}
