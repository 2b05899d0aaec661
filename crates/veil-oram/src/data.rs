//! Synthetic block contents: a pure function of (seed, block id), so a reader can check every
//! reply byte for byte without keeping a copy.

use veil_core::rng::splitmix64;

pub fn synthetic_block(seed: u64, id: u64, buf: &mut [u8]) {
    let mut x = splitmix64(seed ^ splitmix64(id));
    for chunk in buf.chunks_mut(8) {
        x = splitmix64(x);
        let w = x.to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&id.to_le_bytes());
    }
}

pub fn check_block(seed: u64, id: u64, data: &[u8]) -> bool {
    let mut want = vec![0u8; data.len()];
    synthetic_block(seed, id, &mut want);
    want == data
}
