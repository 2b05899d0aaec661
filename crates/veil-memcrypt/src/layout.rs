//! Chunk re-ordering (paper §3.2.2, Fig. 4): under a 128-bit cipher a 64-bit frequent value
//! is only predictable if the other half of its 128-bit chunk is frequent too, so at writeback
//! the processor moves the line's frequent words to the front, in pairs, and records which
//! words moved in an 8-bit bitmap (bit i = word i was frequent). The fetch path restores the
//! order from the bitmap. With k frequent words, chunks 0..k/2 hold frequent pairs.

/// The 8 little-endian 64-bit words of a line.
#[inline]
pub fn words(line: &[u8; 64]) -> [u64; 8] {
    let mut w = [0u64; 8];
    for (i, x) in w.iter_mut().enumerate() {
        *x = u64::from_le_bytes(line[i * 8..i * 8 + 8].try_into().unwrap());
    }
    w
}

#[inline]
pub fn bytes(w: &[u64; 8]) -> [u8; 64] {
    let mut b = [0u8; 64];
    for (i, x) in w.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes());
    }
    b
}

/// Bitmap of the words for which `frequent` holds.
#[inline]
pub fn bitmap(w: &[u64; 8], frequent: impl Fn(u64) -> bool) -> u8 {
    let mut b = 0u8;
    for (i, &x) in w.iter().enumerate() {
        if frequent(x) {
            b |= 1 << i;
        }
    }
    b
}

/// Frequent words first (in their original order), then the others.
#[inline]
pub fn reorder(w: &[u64; 8], bm: u8) -> [u64; 8] {
    let mut out = [0u64; 8];
    let mut k = 0;
    for (i, &x) in w.iter().enumerate() {
        if bm >> i & 1 == 1 {
            out[k] = x;
            k += 1;
        }
    }
    for (i, &x) in w.iter().enumerate() {
        if bm >> i & 1 == 0 {
            out[k] = x;
            k += 1;
        }
    }
    out
}

/// Inverse of [`reorder`].
#[inline]
pub fn restore(r: &[u64; 8], bm: u8) -> [u64; 8] {
    let mut out = [0u64; 8];
    let mut k = 0;
    for i in 0..8 {
        if bm >> i & 1 == 1 {
            out[i] = r[k];
            k += 1;
        }
    }
    for i in 0..8 {
        if bm >> i & 1 == 0 {
            out[i] = r[k];
            k += 1;
        }
    }
    out
}

/// Which cipher chunks of a fetched line the speculation can match: under 64-bit chunks each
/// word in the FVT; under 128-bit chunks a chunk whose two words are both in the FVT, taken in
/// the stored (re-ordered by `bm`) layout when `reorders`, where only the first
/// popcount(bm)/2 chunks are speculated, and in the original order otherwise.
#[inline]
pub fn predicted(chunk_bytes: usize, reorders: bool, w: &[u64; 8], bm: u8, frequent: impl Fn(u64) -> bool) -> [bool; 8] {
    let m = predicted_mask(chunk_bytes, reorders, bitmap(w, frequent), bm);
    let mut p = [false; 8];
    for (j, x) in p.iter_mut().enumerate() {
        *x = m >> j & 1 == 1;
    }
    p
}

/// [`predicted`] on bitmasks: `freq` has bit i set when word i is in the FVT; bit j of the
/// result is set when chunk j can be matched.
#[inline]
pub fn predicted_mask(chunk_bytes: usize, reorders: bool, freq: u8, bm: u8) -> u8 {
    if chunk_bytes == 8 {
        return freq;
    }
    let mut out = 0u8;
    if reorders {
        // The first popcount(bm)/2 chunks of the re-ordered line hold bm's words in order.
        let mut rest = bm;
        for j in 0..(bm.count_ones() / 2) {
            let a = rest.trailing_zeros();
            rest &= rest - 1;
            let b = rest.trailing_zeros();
            rest &= rest - 1;
            if freq >> a & 1 == 1 && freq >> b & 1 == 1 {
                out |= 1 << j;
            }
        }
    } else {
        for j in 0..4 {
            if freq >> (2 * j) & 3 == 3 {
                out |= 1 << j;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorder_round_trips_for_every_bitmap() {
        let w = [1, 2, 3, 4, 5, 6, 7, 8];
        for bm in 0..=255u8 {
            let r = reorder(&w, bm);
            assert_eq!(restore(&r, bm), w);
            let k = bm.count_ones() as usize;
            for j in 0..k {
                assert!(bm >> (r[j] - 1) & 1 == 1, "word {} of bitmap {bm:08b}", r[j]);
            }
        }
    }
}
