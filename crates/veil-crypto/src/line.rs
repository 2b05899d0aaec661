//! Direct memory-line encryption: XTS-AES (IEEE 1619) over 64-byte cache lines, with a
//! truncated CMAC tag per chunk.
//!
//! **Encryption.** Each 64-byte line is one XTS data unit whose 128-bit tweak (the IEEE 1619
//! "data unit sequence number", little-endian) is `address | version << 64`. The address
//! makes equal plaintexts at different lines encrypt differently (no ECB-style patterns
//! across memory); the version, bumped on every dirty writeback as the ciphertext
//! speculation paper does with its nonce counter, makes rewrites of the same value at the
//! same line encrypt differently too. With `version = 0` this is plain IEEE 1619 with the
//! address as data unit number, which is how the standard's vectors test it. XTS, like the
//! paper's OCB, encrypts each 16-byte block independently given the tweak, so a secure
//! processor can precompute the ciphertext of a predicted (frequent) value for any chunk.
//! XTS is used rather than OCB3 because it is the standard memory/storage mode (IEEE 1619,
//! NIST SP 800-38E) and integrity is handled by the per-chunk tags below instead of one tag
//! per line.
//!
//! **Per-chunk MACs.** The line is split into chunks of `chunk` bytes: 16 (one AES block: 4
//! chunks per line) or 8 (one TDES block / one 64-bit word: 8 chunks per line; under
//! XTS-AES an 8-byte chunk's ciphertext still depends on its whole 16-byte block, which is
//! why the paper re-orders chunks so that predictable words share a block). Chunk `i` gets
//! the tag
//!
//! ```text
//! tag_i = MSB_64( CMAC-AES-128_Kmac( address_le64 ‖ version_le64 ‖ i_u8 ‖ chunk_u8 ‖ C_i ) )
//! ```
//!
//! over the *ciphertext* chunk `C_i` (encrypt-then-MAC, the generically secure composition).
//! Why each field: the address stops an attacker from moving a valid (chunk, tag) pair to
//! another line (splicing); the version stops replay of an older (chunk, tag) pair at the
//! same line, provided versions live in trusted storage (an integrity tree, outside this
//! crate); the chunk index stops swapping chunks within a line; the chunk size separates the
//! 8- and 16-byte tag domains. A tag per chunk, as the paper requires for MAC speculation,
//! lets the processor authenticate the critical chunk first and compare a precomputed tag
//! for a predicted value chunk by chunk. Tags are truncated to 64 bits (SP 800-38B allows
//! 64-bit tags; forging one still takes ~2^64 online tries) to keep metadata at 8 bytes per
//! chunk. CMAC uses its own key, independent of the XTS keys.

use aes::cipher::{generic_array::GenericArray, KeyInit};
use cmac::{Cmac, Mac};
use xts_mode::Xts128;

use crate::error::{CryptoError, Result};

/// Bytes per memory line.
pub const LINE_BYTES: usize = 64;
/// Bytes per truncated chunk tag.
pub const CHUNK_TAG_BYTES: usize = 8;

// Both variants live once per LineCipher; boxing would only add an indirection per line.
#[allow(clippy::large_enum_variant)]
enum Xts {
    Aes128(Xts128<aes::Aes128>),
    Aes256(Xts128<aes::Aes256>),
}

impl Xts {
    /// `key` = K1 ‖ K2: 32 bytes (XTS-AES-128) or 64 bytes (XTS-AES-256).
    fn new(key: &[u8]) -> Result<Self> {
        let h = key.len() / 2;
        Ok(match key.len() {
            32 => Xts::Aes128(Xts128::new(
                aes::Aes128::new(GenericArray::from_slice(&key[..h])),
                aes::Aes128::new(GenericArray::from_slice(&key[h..])),
            )),
            64 => Xts::Aes256(Xts128::new(
                aes::Aes256::new(GenericArray::from_slice(&key[..h])),
                aes::Aes256::new(GenericArray::from_slice(&key[h..])),
            )),
            n => return Err(CryptoError::key_len("XTS-AES (K1||K2)", "32 or 64", n)),
        })
    }

    fn apply(&self, data: &mut [u8], tweak: u128, encrypt: bool) {
        let t = tweak.to_le_bytes();
        match (self, encrypt) {
            (Xts::Aes128(x), true) => x.encrypt_sector(data, t),
            (Xts::Aes128(x), false) => x.decrypt_sector(data, t),
            (Xts::Aes256(x), true) => x.encrypt_sector(data, t),
            (Xts::Aes256(x), false) => x.decrypt_sector(data, t),
        }
    }
}

fn xts_any(key: &[u8], tweak: u128, data: &mut [u8], encrypt: bool) -> Result<()> {
    // xts-mode panics below one block; catch it here as a user error.
    if data.len() < 16 {
        return Err(CryptoError::input(format!(
            "XTS data unit must be at least 16 bytes, got {}",
            data.len()
        )));
    }
    Xts::new(key)?.apply(data, tweak, encrypt);
    Ok(())
}

/// Encrypts one XTS data unit (≥ 16 bytes; ciphertext stealing for partial last blocks) in
/// place with data unit sequence number `tweak`. Low-level: accepts equal key halves, as
/// IEEE 1619 vector 1 does; [`LineCipher`] refuses them.
pub fn xts_encrypt(key: &[u8], tweak: u128, data: &mut [u8]) -> Result<()> {
    xts_any(key, tweak, data, true)
}

/// Inverse of [`xts_encrypt`].
pub fn xts_decrypt(key: &[u8], tweak: u128, data: &mut [u8]) -> Result<()> {
    xts_any(key, tweak, data, false)
}

/// The 128-bit XTS tweak of a line: `address | version << 64`.
pub fn line_tweak(address: u64, version: u64) -> u128 {
    address as u128 | (version as u128) << 64
}

/// Keyed XTS-AES memory-line encryption (no integrity: pair it with [`LineMac`]).
pub struct LineCipher {
    xts: Xts,
}

/// Keyed per-chunk CMAC tags of memory lines.
#[derive(Clone)]
pub struct LineMac {
    mac: Cmac<aes::Aes128>,
}

/// XTS encryption plus per-chunk tags: authenticated memory lines.
pub struct MemoryLines {
    pub cipher: LineCipher,
    pub mac: LineMac,
}

fn line_slice(line: &[u8]) -> Result<()> {
    if line.len() != LINE_BYTES {
        return Err(CryptoError::input(format!(
            "memory line must be {LINE_BYTES} bytes, got {}",
            line.len()
        )));
    }
    Ok(())
}

fn check_chunk(chunk: usize) -> Result<()> {
    if chunk != 8 && chunk != 16 {
        return Err(CryptoError::input(format!(
            "MAC chunk size must be 8 or 16 bytes, got {chunk}"
        )));
    }
    Ok(())
}

impl LineCipher {
    /// `xts_key` = K1 ‖ K2 (32 bytes: XTS-AES-128, 64 bytes: XTS-AES-256; the halves must
    /// differ, as SP 800-38E requires).
    pub fn new(xts_key: &[u8]) -> Result<Self> {
        let xts = Xts::new(xts_key)?;
        let h = xts_key.len() / 2;
        if xts_key[..h] == xts_key[h..] {
            return Err(CryptoError::input("XTS key halves K1 and K2 must differ"));
        }
        Ok(LineCipher { xts })
    }

    /// Encrypts a 64-byte line in place.
    pub fn encrypt_line(&self, address: u64, version: u64, line: &mut [u8]) -> Result<()> {
        line_slice(line)?;
        self.xts.apply(line, line_tweak(address, version), true);
        Ok(())
    }

    /// Decrypts a 64-byte line in place (no authentication; see [`Self::open_line`]).
    pub fn decrypt_line(&self, address: u64, version: u64, line: &mut [u8]) -> Result<()> {
        line_slice(line)?;
        self.xts.apply(line, line_tweak(address, version), false);
        Ok(())
    }
}

impl LineMac {
    /// `mac_key`: 16-byte CMAC-AES-128 key, independent of the XTS keys.
    pub fn new(mac_key: &[u8]) -> Result<Self> {
        let mac = <Cmac<aes::Aes128> as KeyInit>::new_from_slice(mac_key)
            .ok()
            .filter(|_| mac_key.len() == 16)
            .ok_or_else(|| CryptoError::key_len("line MAC (CMAC-AES-128)", "16", mac_key.len()))?;
        Ok(LineMac { mac })
    }

    /// Tag of one chunk on a scratch CMAC state, which is reset for the next chunk: a line's
    /// tags share one copy of the keyed state instead of cloning it (key schedule and
    /// subkeys, several hundred bytes) per chunk, which dominated the cost.
    fn tag_with(
        m: &mut Cmac<aes::Aes128>,
        address: u64,
        version: u64,
        index: usize,
        chunk: &[u8],
    ) -> [u8; 8] {
        m.update(&address.to_le_bytes());
        m.update(&version.to_le_bytes());
        m.update(&[index as u8, chunk.len() as u8]);
        m.update(chunk);
        let full = m.finalize_reset().into_bytes();
        let mut t = [0u8; 8];
        t.copy_from_slice(&full[..CHUNK_TAG_BYTES]);
        t
    }

    /// The 8-byte tag of chunk `index` (ciphertext bytes `chunk_ct`, 8 or 16 bytes) of a line.
    pub fn chunk_mac(
        &self,
        address: u64,
        version: u64,
        index: usize,
        chunk_ct: &[u8],
    ) -> Result<[u8; 8]> {
        check_chunk(chunk_ct.len())?;
        if index >= LINE_BYTES / chunk_ct.len() {
            return Err(CryptoError::input(format!(
                "chunk index {index} out of range for {}-byte chunks (0..{})",
                chunk_ct.len(),
                LINE_BYTES / chunk_ct.len()
            )));
        }
        Ok(Self::tag_with(
            &mut self.mac.clone(),
            address,
            version,
            index,
            chunk_ct,
        ))
    }

    /// Tags of every `chunk`-byte chunk (8 or 16) of a 64-byte ciphertext line, in order.
    pub fn line_macs(
        &self,
        address: u64,
        version: u64,
        ct: &[u8],
        chunk: usize,
    ) -> Result<Vec<[u8; 8]>> {
        line_slice(ct)?;
        check_chunk(chunk)?;
        let mut m = self.mac.clone();
        Ok(ct
            .chunks_exact(chunk)
            .enumerate()
            .map(|(i, c)| Self::tag_with(&mut m, address, version, i, c))
            .collect())
    }

    /// Checks every chunk tag (constant-time compare per tag); the error names the bad chunks.
    pub fn verify_line(
        &self,
        address: u64,
        version: u64,
        ct: &[u8],
        chunk: usize,
        tags: &[[u8; 8]],
    ) -> Result<()> {
        line_slice(ct)?;
        check_chunk(chunk)?;
        let n = LINE_BYTES / chunk;
        if tags.len() != n {
            return Err(CryptoError::input(format!(
                "expected {n} chunk tags for {chunk}-byte chunks, got {}",
                tags.len()
            )));
        }
        let mut m = self.mac.clone();
        let bad: Vec<String> = ct
            .chunks_exact(chunk)
            .zip(tags)
            .enumerate()
            .filter(|(i, (c, t))| {
                let want = Self::tag_with(&mut m, address, version, *i, c);
                // Constant-time compare: no early exit that would time how many bytes match.
                let diff = want
                    .iter()
                    .zip(t.iter())
                    .fold(0u8, |acc, (x, y)| acc | (x ^ y));
                std::hint::black_box(diff) != 0
            })
            .map(|(i, _)| i.to_string())
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(CryptoError::AuthenticationFailed(format!(
                "line 0x{address:x} version {version}: MAC mismatch in chunk(s) {}",
                bad.join(", ")
            )))
        }
    }
}

impl MemoryLines {
    /// See [`LineCipher::new`] and [`LineMac::new`].
    pub fn new(xts_key: &[u8], mac_key: &[u8]) -> Result<Self> {
        Ok(MemoryLines {
            cipher: LineCipher::new(xts_key)?,
            mac: LineMac::new(mac_key)?,
        })
    }

    /// Encrypts a 64-byte plaintext line and tags its chunks: returns (ciphertext, tags).
    pub fn seal_line(
        &self,
        address: u64,
        version: u64,
        pt: &[u8],
        chunk: usize,
    ) -> Result<(Vec<u8>, Vec<[u8; 8]>)> {
        check_chunk(chunk)?;
        let mut ct = pt.to_vec();
        self.cipher.encrypt_line(address, version, &mut ct)?;
        let tags = self.mac.line_macs(address, version, &ct, chunk)?;
        Ok((ct, tags))
    }

    /// Verifies every chunk tag, then decrypts; returns no data if any tag fails.
    pub fn open_line(
        &self,
        address: u64,
        version: u64,
        ct: &[u8],
        chunk: usize,
        tags: &[[u8; 8]],
    ) -> Result<Vec<u8>> {
        self.mac.verify_line(address, version, ct, chunk, tags)?;
        let mut pt = ct.to_vec();
        self.cipher.decrypt_line(address, version, &mut pt)?;
        Ok(pt)
    }
}
