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
        // SAFETY: clflush is SSE2, part of x86-64; every address flushed lies inside `buf`.
        unsafe {
            let mut i = 0;
            while i < buf.len() {
                _mm_clflush(buf.as_ptr().add(i));
                i += 64;
            }
            _mm_mfence();
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = buf;
}
