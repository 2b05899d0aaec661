//! The sealed state record: what a store needs to reopen (epoch, region, key, position map),
//! sealed under the master key in one metadata write.

use super::Geometry;
use crate::crypto::{BlockKey, KEY_LEN};
use crate::error::Result;
use crate::storage::Storage;
use serde::{Deserialize, Serialize};

pub(super) const STATE: &str = "proram.state";
pub(super) const STATE_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
pub(super) struct SealedState {
    pub(super) version: u32,
    pub(super) geometry: Geometry,
    pub(super) block_size: usize,
    pub(super) epoch: u64,
    pub(super) region: u32,
    pub(super) ctx: u32,
    pub(super) key: [u8; KEY_LEN],
    /// item -> slot; items 0..N are real blocks, N..M dummies.
    pub(super) pos: Vec<u32>,
    /// Epochs ended by requests (hand-overs at an epoch's T-th request) up to the one named
    /// here; opening does not add to it. Absent in records written before it existed: the
    /// epoch number stands in for it, as clients of then recorded.
    #[serde(default)]
    pub(super) work: Option<u64>,
}

pub(super) fn put_state(s: &dyn Storage, master: &BlockKey, st: &SealedState) -> Result<()> {
    let mut nonce = [0u8; 12];
    crate::crypto::os_random(&mut nonce);
    let mut out = nonce.to_vec();
    out.extend(master.seal_vec(nonce, &state_bytes(st)));
    s.put_meta(STATE, &out)
}

/// The state record's plaintext, of a length that depends on nothing in it but the public
/// geometry. JSON writes each number in as many digits as it needs, so the sealed record's size
/// (which storage sees) told how many key bytes were below 10 and below 100, and two runs of the
/// same requests differed by a byte where a public count (the freshness count, the epoch) written
/// at a moment the scheduler chose crossed a power of ten. The position map's digits are the same
/// multiset in every epoch (a permutation of 0..M). So the record is padded with trailing spaces
/// (JSON readers skip them; records written before read the same) to the length of the same record
/// with every number at its widest.
pub(super) fn state_bytes(st: &SealedState) -> Vec<u8> {
    let widest = SealedState {
        version: u32::MAX,
        geometry: st.geometry,
        block_size: st.block_size,
        epoch: u64::MAX,
        region: u32::MAX,
        ctx: u32::MAX,
        key: [u8::MAX; KEY_LEN],
        pos: st.pos.clone(),
        work: Some(u64::MAX),
    };
    let mut v = serde_json::to_vec(st).unwrap();
    v.resize(serde_json::to_vec(&widest).unwrap().len(), b' ');
    v
}
