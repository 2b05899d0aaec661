//! `per_hop_otp`: per-link AES-CTR pads are precomputed, so decryption and re-encryption
//! are XORs; a router XORs with (incoming pad XOR outgoing pad) in one extra pipeline stage
//! (the paper: "XOR introduces another pipeline stage"). Per-link pads are assumed always
//! ready (a link's pad rate equals its flit rate, which one pipelined AES engine per port
//! sustains).

use super::Encryption;

pub struct PerHopOtp {
    pub xor_cycles: u32,
}

impl Encryption for PerHopOtp {
    fn name(&self) -> &'static str {
        "per_hop_otp"
    }
    fn per_hop_cycles(&self) -> u32 {
        self.xor_cycles
    }
}
