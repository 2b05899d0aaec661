//! `none`: the non-secure baseline, packets travel in plaintext.

use super::Encryption;

pub struct NoEncryption;

impl Encryption for NoEncryption {
    fn name(&self) -> &'static str {
        "none"
    }
    fn per_hop_cycles(&self) -> u32 {
        0
    }
}
