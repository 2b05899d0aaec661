//! The copies behind every reply, the same whatever the request's outcome.
//!
//! A request opens one slot into `slot`. Its reply then always takes the same two copies
//! through the private cache: the opened slot into a fresh cache entry (for a first read, the
//! block it caches; for a repeat, the dummy's plaintext, never used again), and one cache entry
//! into `stage` (the fresh one for a first read, the block's earlier entry for a repeat), then
//! `stage` into the reply. Both cache entries touched are evicted from the CPU caches
//! afterwards, so every entry is read from memory, whether it was written a moment ago or T
//! requests ago: before, a repeat copied from an entry that had been written long ago (likely
//! out of cache) where a first read copied from one it had just written. Settled by a timed test; docs/oram.md, *Cached-path timing*.

/// Source of a reply's copy, by role only (which entry a repeat uses is the one thing that
/// differs, and it is not a role).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buf {
    Slot,
    FreshEntry,
    SourceEntry,
    Stage,
    Out,
}

/// One step of a reply: copy (from, to) or evict (buffer), with its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Copy(Buf, Buf, usize),
    Evict(Buf, usize),
}

/// The steps of the last reply, for the test that every outcome makes the same ones.
pub(crate) type Steps = [Option<Step>; 6];

/// Makes the reply's copies: `slot` -> `slab[fresh]`, `slab[source]` -> `stage` -> `out`,
/// evicting both entries. `source` may equal `fresh` (a first read).
pub(crate) fn copy_reply(slab: &mut [Vec<u8>], fresh: usize, source: usize, slot: &[u8], stage: &mut [u8], out: &mut [u8], steps: &mut Steps) {
    let n = out.len();
    slab[fresh].copy_from_slice(&slot[..n]);
    evict(&slab[fresh]);
    stage.copy_from_slice(&slab[source]);
    evict(&slab[source]);
    out.copy_from_slice(stage);
    *steps = [
        Some(Step::Copy(Buf::Slot, Buf::FreshEntry, n)),
        Some(Step::Evict(Buf::FreshEntry, n)),
        Some(Step::Copy(Buf::SourceEntry, Buf::Stage, n)),
        Some(Step::Evict(Buf::SourceEntry, n)),
        Some(Step::Copy(Buf::Stage, Buf::Out, n)),
        None,
    ];
}

/// Writes `buf`'s cache lines back and drops them from every CPU cache (x86-64 `clflush`; a
/// no-op elsewhere, where a repeat's older entry may still be colder than a fresh one).
fn evict(buf: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_clflush, _mm_mfence};
        // SAFETY: clflush is SSE2, part of x86-64; each address flushed lies inside `buf` (one
        // per cache line it overlaps: `line_starts`).
        unsafe {
            for off in line_starts(buf.as_ptr() as usize, buf.len()) {
                _mm_clflush(buf.as_ptr().add(off));
            }
            _mm_mfence();
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = buf;
}

const LINE: usize = 64;

/// Offsets into a buffer at address `addr` of `len` bytes, one in each 64-byte cache line it
/// overlaps. Stepping 64 bytes from the buffer's start missed the last line of a buffer that
/// does not start on a line (a heap block's usual 16-byte offset): it stayed cached.
fn line_starts(addr: usize, len: usize) -> impl Iterator<Item = usize> {
    let first = addr & !(LINE - 1);
    let end = addr + len;
    (first..end).step_by(LINE).map(move |l| l.max(addr) - addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cache line a buffer overlaps is flushed once, at an address inside the buffer.
    #[test]
    fn every_line_of_a_buffer_is_flushed() {
        for addr in [4096usize, 4096 + 16, 4096 + 63] {
            for len in [1usize, 16, 48, 64, 65, 4096, 4096 + 17] {
                let offs: Vec<usize> = line_starts(addr, len).collect();
                let lines: Vec<usize> = offs.iter().map(|o| (addr + o) / LINE).collect();
                let want: Vec<usize> = (addr / LINE..=(addr + len - 1) / LINE).collect();
                assert_eq!(lines, want, "addr {addr} len {len}");
                assert!(offs.iter().all(|&o| o < len), "addr {addr} len {len}: {offs:?}");
            }
        }
    }
}
