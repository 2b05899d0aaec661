//! The data TLB: set-associative, LRU, one entry per 4 KB page (the paper sizes the bitmap cache
//! against "a data TLB of 128 entries and 4KB page size", §3.2.2). A miss costs a page walk of
//! `walk_latency` core cycles before the access can go to the caches, in the unprotected and the
//! protected machine alike. The walk is a fixed latency, as in SimpleScalar's sim-outorder (the
//! paper's simulator, §5), whose data-TLB miss latency defaults to 30 cycles (`-tlb:lat 30`): its
//! page-table reads are not booked on the SDRAM model.

use crate::bitmap::{BitmapCache, Lookup};

#[derive(Clone)]
pub struct Tlb {
    entries: BitmapCache,
}

impl Tlb {
    pub fn new(entries: usize, ways: usize) -> Self {
        Tlb { entries: BitmapCache::new(entries, ways) }
    }

    /// Looks `page` up; on a miss installs it (the walk's result). Returns whether it hit.
    #[inline]
    pub fn translate(&mut self, page: u64) -> bool {
        match self.entries.access(page, false) {
            Lookup::Hit { .. } => true,
            Lookup::Miss => {
                self.entries.fill(page, 0.0, false, false);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_reach_of_entries_pages() {
        let mut t = Tlb::new(128, 4);
        // 128 pages fit; touching them again all hit.
        assert!((0..128).all(|p| !t.translate(p)));
        assert!((0..128).all(|p| t.translate(p)));
        // A 129th page in set 0 evicts that set's least recently used page (page 0).
        assert!(!t.translate(128));
        assert!(!t.translate(0));
        assert!(t.translate(128));
    }
}
