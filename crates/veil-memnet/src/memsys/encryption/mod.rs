//! Packet-encryption microarchitectures of the ghost routing paper (§IV), chosen by name.
//!
//! What differs between them, as the simulator sees it: pipeline cycles added on every
//! off-chip hop (router-to-router and CPU links; a module's own vault port is on chip),
//! and whether packets need an end-to-end pad from the (source, destination) OTP buffers
//! (`source_otp`), which can stall the sender when its buffer is empty.

mod none;
mod per_hop_aes;
mod per_hop_otp;
mod source_otp;

use crate::error::ConfigError;

pub use none::NoEncryption;
pub use per_hop_aes::PerHopAes;
pub use per_hop_otp::PerHopOtp;
pub use source_otp::SourceOtp;

pub const ENCRYPTION_NAMES: &[(&str, &str)] = &[
    ("none", "no encryption (non-secure baseline)"),
    ("per_hop_aes", "decrypt and re-encrypt with AES at every hop"),
    ("per_hop_otp", "per-hop encryption with precomputed pads: one XOR stage per hop"),
    ("source_otp", "plaintext route, payload OTP'd once at the source, XOR at the destination overlapped"),
];

/// Parameters of the AES engines and XOR stages, in network cycles.
#[derive(Clone, Copy, Debug)]
pub struct CipherCycles {
    pub aes_latency: u32,
    pub xor_cycles: u32,
}

pub trait Encryption: Send {
    fn name(&self) -> &'static str;
    /// Cycles added to every off-chip link traversal (the router pipeline stages the
    /// scheme adds per hop).
    fn per_hop_cycles(&self) -> u32;
    /// Packets take an end-to-end pad from the per-pair OTP buffers.
    fn end_to_end_pads(&self) -> bool {
        false
    }
}

pub fn build(name: &str, c: CipherCycles) -> Result<Box<dyn Encryption>, ConfigError> {
    Ok(match name {
        "none" => Box::new(NoEncryption),
        "per_hop_aes" => Box::new(PerHopAes { aes_latency: c.aes_latency }),
        "per_hop_otp" => Box::new(PerHopOtp { xor_cycles: c.xor_cycles }),
        "source_otp" => Box::new(SourceOtp),
        other => {
            let names: Vec<&str> = ENCRYPTION_NAMES.iter().map(|x| x.0).collect();
            return Err(ConfigError(format!("encryption.uarch: unknown '{other}' ({})", names.join(", "))));
        }
    })
}
