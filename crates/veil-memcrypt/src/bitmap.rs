//! The bitmap cache (paper §3.2.2: "a small cache can be applied to cache bitmaps in the secure
//! processor ... 128 pages requires an 8KB cache"): set-associative, LRU, one entry per 4 KB
//! page holding that page's decrypted bitmap line. An entry can be *in flight*: allocated when
//! its fetch (demand or prefetch) was issued and usable from `ready` on, so a demand access that
//! finds a prefetch still on its way waits for the rest of it instead of fetching again (a
//! prefetch that is late still hides part of the miss). Entries filled by a prefetch carry a tag
//! bit until their first demand use, which the tagged prefetchers use as their trigger and the
//! counters use to tell useful prefetches from useless ones.

/// What a demand access found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup {
    /// Present; usable from `ready`; `first_use` when this is the first demand access to an
    /// entry a prefetch brought in.
    Hit { ready: f64, first_use: bool },
    /// Absent: the caller fetches the line and calls [`BitmapCache::fill`].
    Miss,
}

#[derive(Clone)]
pub struct BitmapCache {
    ways: usize,
    sets: u64,
    tags: Vec<u64>,
    stamp: Vec<u64>,
    dirty: Vec<bool>,
    ready: Vec<f64>,
    prefetched: Vec<bool>,
    clock: u64,
}

const EMPTY: u64 = u64::MAX;

impl BitmapCache {
    pub fn new(entries: usize, ways: usize) -> Self {
        BitmapCache {
            ways,
            sets: (entries / ways) as u64,
            tags: vec![EMPTY; entries],
            stamp: vec![0; entries],
            dirty: vec![false; entries],
            ready: vec![0.0; entries],
            prefetched: vec![false; entries],
            clock: 0,
        }
    }

    #[inline]
    fn find(&self, page: u64) -> Option<usize> {
        let base = (page % self.sets) as usize * self.ways;
        (base..base + self.ways).find(|&i| self.tags[i] == page)
    }

    /// Whether `page` is present or in flight (no LRU update: the prefetcher's filter).
    #[inline]
    pub fn contains(&self, page: u64) -> bool {
        self.find(page).is_some()
    }

    /// A demand access (a fill's lookup, or a writeback updating its line's bitmap).
    #[inline]
    pub fn access(&mut self, page: u64, write: bool) -> Lookup {
        self.clock += 1;
        match self.find(page) {
            Some(i) => {
                self.stamp[i] = self.clock;
                self.dirty[i] |= write;
                let first_use = std::mem::take(&mut self.prefetched[i]);
                Lookup::Hit { ready: self.ready[i], first_use }
            }
            None => Lookup::Miss,
        }
    }

    /// Drops `page` without writing it back; returns whether it was dirty.
    pub fn invalidate(&mut self, page: u64) -> bool {
        let Some(i) = self.find(page) else {
            return false;
        };
        self.tags[i] = EMPTY;
        self.prefetched[i] = false;
        self.stamp[i] = 0;
        std::mem::take(&mut self.dirty[i])
    }

    /// Allocates `page` (not present), usable from `ready`, replacing the set's least recently
    /// used entry; returns the victim's page when it was dirty (it must be written back).
    /// Prefetched lines enter at the MRU position like demand lines (the simplest design).
    pub fn fill(&mut self, page: u64, ready: f64, write: bool, prefetch: bool) -> Option<u64> {
        self.clock += 1;
        let base = (page % self.sets) as usize * self.ways;
        let v = (base..base + self.ways).min_by_key(|&i| self.stamp[i]).unwrap();
        let victim = (self.tags[v] != EMPTY && self.dirty[v]).then_some(self.tags[v]);
        self.tags[v] = page;
        self.stamp[v] = self.clock;
        self.dirty[v] = write;
        self.ready[v] = ready;
        self.prefetched[v] = prefetch;
        victim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_in_flight_and_prefetch_tags() {
        // 2 sets x 2 ways.
        let mut c = BitmapCache::new(4, 2);
        assert_eq!(c.access(0, false), Lookup::Miss);
        assert_eq!(c.fill(0, 100.0, false, false), None);
        assert_eq!(c.fill(2, 50.0, true, true), None);
        // In flight: usable at its ready time; the prefetch tag goes with the first use only.
        assert_eq!(c.access(2, false), Lookup::Hit { ready: 50.0, first_use: true });
        assert_eq!(c.access(2, false), Lookup::Hit { ready: 50.0, first_use: false });
        // Page 4 maps to set 0 and evicts the LRU entry (page 0, clean); page 6 then evicts
        // dirty page 2.
        assert_eq!(c.fill(4, 0.0, false, false), None);
        assert!(!c.contains(0) && c.contains(2));
        assert_eq!(c.fill(6, 0.0, false, false), Some(2));
        // Set 1 is untouched.
        assert_eq!(c.access(1, false), Lookup::Miss);
    }
}
