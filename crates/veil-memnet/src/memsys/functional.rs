//! Functional packet encryption (`functional = true`): every packet's bytes are really
//! encrypted with AES-CTR pads from veil-crypto at the source and decrypted at the
//! destination, so the round trip is checked bit for bit after out-of-order, multi-path
//! delivery, and a node that is not the destination really fails to decode.
//!
//! Packet bytes (16-byte flits). Plaintext, what routers need and the pad lookup: source
//! (2 bytes), OTP slot (2), round (1, low bits), key epoch (1), 2 reserved. Encrypted with
//! the pair's pad: a check field holding the destination id (2 bytes, `check_bits` of it
//! compared), the command (1), the line address (5, in lines), then the 64-byte data flits
//! of write requests and read responses. A node decodes a packet with the pad of
//! (source, itself); it accepts the packet only if the check field then names it, so a
//! packet for someone else is accepted with probability 2^-check_bits.
//! Pair keys come from the boot-time key exchange (`crate::keyx::Keyring`, deterministic for
//! the run's seed): the direction's AES-128 key, stepped forward `epoch` times by the
//! exchange's HKDF ratchet when the pad counter saturated. A pad is AES-CTR from the IV
//! nonce[..8] || counter (64-bit, so `counter_bits` up to 64 fits); the pad counter of slot s
//! in round r is (r * D + s) * pad_blocks.

use std::collections::HashMap;

use veil_crypto::AesCtr;

use crate::keyx::{Keyring, Role};

use super::otp::Ticket;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct FunctionalStats {
    pub packets: u64,
    pub bytes: u64,
    /// Delivered packets whose decrypted bytes differ from what the source sent.
    pub mismatches: u64,
    /// Delivered packets the destination's header check rejected.
    pub rejected_at_destination: u64,
    /// Decoding attempts by non-destination nodes, and how many passed the check.
    pub foreign_trials: u64,
    pub foreign_accepts: u64,
    /// Packets that arrived before one sent earlier on the same (source, destination) pair.
    pub out_of_order: u64,
}

/// A packet as its source encrypted it (`Functional::capture`): what a test needs to check
/// which keys decrypt it.
#[derive(Clone, Debug)]
pub struct Captured {
    pub src: u32,
    pub dst: u32,
    pub epoch: u32,
    pub counter: u64,
    pub plain: Vec<u8>,
    pub wire: Vec<u8>,
}

pub struct Functional {
    keyring: Keyring,
    depth: u64,
    pad_blocks: u64,
    check_mask: u16,
    keys: HashMap<(u32, u32, u32), (AesCtr, [u8; 8])>,
    /// Per pair: sequence numbers sent and the highest delivered (out-of-order count).
    sent_seq: HashMap<(u32, u32), u64>,
    max_seen: HashMap<(u32, u32), u64>,
    pub stats: FunctionalStats,
    /// The first `capture` packets encrypted (0: none kept).
    pub capture: usize,
    pub captured: Vec<Captured>,
}

impl Functional {
    /// `roles[n]`: what node n is (its certificate's role); the boot draws every key from `seed`.
    pub fn new(seed: u64, roles: &[Role], depth: usize, pad_blocks: u64, check_bits: u32) -> Self {
        Self {
            keyring: Keyring::new(seed, roles).expect("a seeded boot of genuine parts cannot fail"),
            depth: depth as u64,
            pad_blocks,
            check_mask: if check_bits >= 16 { u16::MAX } else { (1u16 << check_bits) - 1 },
            keys: HashMap::new(),
            sent_seq: HashMap::new(),
            max_seen: HashMap::new(),
            stats: FunctionalStats::default(),
            capture: 0,
            captured: Vec::new(),
        }
    }

    /// The boot's keys (pair exchanges run so far, and any direction's keys).
    pub fn keyring(&mut self) -> &mut Keyring {
        &mut self.keyring
    }

    fn pair_key(&mut self, s: u32, d: u32, epoch: u32) -> &(AesCtr, [u8; 8]) {
        let ring = &mut self.keyring;
        self.keys.entry((s, d, epoch)).or_insert_with(|| {
            // Both ends are genuine and the link is untouched: the exchange cannot be refused.
            let k = ring.direction(s, d, epoch).expect("boot exchange between genuine parts");
            let mut nonce = [0u8; 8];
            nonce.copy_from_slice(&k.nonce[..8]);
            (AesCtr::new(&k.key).expect("16-byte key"), nonce)
        })
    }

    fn counter(&self, t: Ticket) -> u64 {
        (t.round * self.depth + t.slot as u64) * self.pad_blocks
    }

    /// The plaintext of a packet of `flits` flits.
    pub fn plaintext(&self, src: u32, dst: u32, t: Ticket, cmd: u8, line: u64, data: Option<&[u8; 64]>, flits: usize) -> Vec<u8> {
        let mut b = vec![0u8; flits * 16];
        b[0..2].copy_from_slice(&(src as u16).to_le_bytes());
        b[2..4].copy_from_slice(&(t.slot as u16).to_le_bytes());
        b[4] = t.round as u8;
        b[5] = t.epoch as u8;
        b[8..10].copy_from_slice(&(dst as u16).to_le_bytes());
        b[10] = cmd;
        b[11..16].copy_from_slice(&line.to_le_bytes()[..5]);
        if let Some(d) = data {
            b[16..80].copy_from_slice(d);
        }
        b
    }

    /// Source: encrypts everything after the 8 plaintext bytes with the pair's pad.
    pub fn encrypt(&mut self, src: u32, dst: u32, t: Ticket, bytes: &mut [u8]) {
        let ctr = self.counter(t);
        let plain = (self.captured.len() < self.capture).then(|| bytes.to_vec());
        let (c, nonce) = self.pair_key(src, dst, t.epoch);
        c.xor(nonce, ctr, &mut bytes[8..]).expect("counter in range");
        if let Some(plain) = plain {
            self.captured.push(Captured { src, dst, epoch: t.epoch, counter: ctr, plain, wire: bytes.to_vec() });
        }
        let seq = self.sent_seq.entry((src, dst)).or_insert(0);
        *seq += 1;
        self.stats.packets += 1;
        self.stats.bytes += bytes.len() as u64;
    }

    /// Node `me` tries to decode `wire` (it does not know whether it is the destination):
    /// the plaintext if the check field names it. The wire holds the round's low byte; the
    /// receiver keeps each slot's full round, which the simulator passes as `round`.
    pub fn decode(&mut self, me: u32, wire: &[u8], round: u64) -> Option<Vec<u8>> {
        let src = u16::from_le_bytes([wire[0], wire[1]]) as u32;
        let t = Ticket { slot: u16::from_le_bytes([wire[2], wire[3]]) as u32, round, epoch: wire[5] as u32 };
        let ctr = self.counter(t);
        let mut out = wire.to_vec();
        let (c, nonce) = self.pair_key(src, me, t.epoch);
        c.xor(nonce, ctr, &mut out[8..]).expect("counter in range");
        let check = u16::from_le_bytes([out[8], out[9]]);
        if check & self.check_mask == (me as u16) & self.check_mask {
            Some(out)
        } else {
            None
        }
    }

    /// Records the arrival of the `seq`-th packet of a pair (out-of-order statistics).
    pub fn arrived(&mut self, src: u32, dst: u32, seq: u64) {
        let m = self.max_seen.entry((src, dst)).or_insert(0);
        if seq < *m {
            self.stats.out_of_order += 1;
        } else {
            *m = seq;
        }
    }

    /// The sequence number of the last packet encrypted on a pair.
    pub fn last_seq(&self, src: u32, dst: u32) -> u64 {
        self.sent_seq.get(&(src, dst)).copied().unwrap_or(0)
    }
}
