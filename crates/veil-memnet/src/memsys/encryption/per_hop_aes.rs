//! `per_hop_aes`: every link is encrypted with its own key; a router decrypts an arriving
//! packet to read its route and re-encrypts it for the next link. Both are full AES
//! operations on the data path (the ciphertext is not known before it arrives), so every
//! off-chip hop adds the decryption at the receiver and the encryption at the sender:
//! 2 x the AES latency.

use super::Encryption;

pub struct PerHopAes {
    pub aes_latency: u32,
}

impl Encryption for PerHopAes {
    fn name(&self) -> &'static str {
        "per_hop_aes"
    }
    fn per_hop_cycles(&self) -> u32 {
        2 * self.aes_latency
    }
}
