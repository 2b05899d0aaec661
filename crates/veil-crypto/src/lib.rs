//! Veil's crypto engines: the functional cryptography behind every system, on RustCrypto
//! block ciphers (hardware AES via run-time AES-NI detection) and AWS-LC's AES-GCM.
//!
//! | component | file | used by |
//! |---|---|---|
//! | AES-128/192/256 single blocks | [`block`] | everything below |
//! | AES-CTR one-time pads `(key, nonce, counter)` | [`ctr`] | ghost routing |
//! | AES-GCM seal/open | [`gcm`] | ORAM (4 KB..10 MB blocks) |
//! | XTS-AES 64-byte memory lines + per-chunk CMAC tags | [`line`] | memory encryption |
//! | Triple-DES (3-key EDE) blocks | [`tdes`] | memory encryption (TDES pads) |
//! | multi-threaded throughput measurement | [`throughput`] | benchmarks |
//!
//! Every function that takes user input returns `Result<_, CryptoError>`; none panics on bad
//! key, nonce or buffer lengths. Each primitive is checked against published test vectors
//! (tests/vectors.rs).

// `usize::is_multiple_of` is newer than the workspace's rust-version (1.75).
#![allow(clippy::manual_is_multiple_of)]

pub mod block;
pub mod ctr;
pub mod error;
pub mod gcm;
pub mod line;
pub mod tdes;
pub mod throughput;

pub use block::{aes_decrypt_block, aes_encrypt_block, AesCipher};
pub use ctr::{ctr_pad, ctr_xor, AesCtr, CTR_NONCE_LEN};
pub use error::{CryptoError, Result};
pub use gcm::{gcm_open, gcm_seal, Gcm, GCM_NONCE_LEN, GCM_TAG_LEN};
pub use line::{
    line_tweak, xts_decrypt, xts_encrypt, LineCipher, LineMac, MemoryLines, CHUNK_TAG_BYTES,
    LINE_BYTES,
};
pub use tdes::{tdes_decrypt_block, tdes_encrypt_block, Tdes};
pub use throughput::{engines, throughput, throughput_over, Throughput};

/// Whether this CPU runs AES with hardware instructions (AES-NI on x86_64, which the `aes`
/// crate detects at run time; ARMv8 crypto extensions elsewhere).
pub fn hardware_aes() -> bool {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        std::arch::is_x86_feature_detected!("aes")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64")))]
    {
        false
    }
}
