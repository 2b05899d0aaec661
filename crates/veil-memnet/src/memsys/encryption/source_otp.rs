//! `source_otp` (the paper's proposal): the routing header travels in plaintext, so routers
//! route it without any cipher stage (eager header processing); the rest of the packet is
//! XORed once at the source with an end-to-end pad of the (source, destination) pair and once
//! at the destination, both overlapped with the pipeline. Pads come from the pair's OTP
//! buffer (`otp.rs`): an empty buffer stalls the sender.

use super::Encryption;

pub struct SourceOtp;

impl Encryption for SourceOtp {
    fn name(&self) -> &'static str {
        "source_otp"
    }
    fn per_hop_cycles(&self) -> u32 {
        0
    }
    fn end_to_end_pads(&self) -> bool {
        true
    }
}
