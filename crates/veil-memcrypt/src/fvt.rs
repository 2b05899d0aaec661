//! The frequent value table (FVT): the N most frequent 64-bit values seen in fetched lines,
//! tracked on line at run time.
//!
//! The paper keeps "the top N most frequently used data values managed with an LRU policy",
//! found dynamically as in Yang and Gupta's frequent-value work (its reference [34]). Our
//! reconstruction has two parts, both small hardware tables:
//!
//! * a direct-mapped *candidate filter* of `candidates` entries (value, saturating count). A
//!   value that is not in the FVT hashes to one entry: a match increments the count; a
//!   different value decrements it and takes the entry over once it reaches zero (a
//!   Misra-Gries style counter per entry, so one-off values cannot push out a recurring one);
//! * the FVT proper: N values, each with a last-use stamp. A candidate whose count reaches
//!   `promote` enters the FVT, replacing the least recently used value (LRU). A value already in
//!   the FVT refreshes its stamp when it is seen again.
//!
//! Each observed word costs one FVT search plus one filter probe, so the table keeps up with
//! the miss stream, as hardware must. Working-set changes age values out through LRU.

/// Frequent value table with its candidate filter.
#[derive(Clone, Debug)]
pub struct Fvt {
    vals: Vec<u64>,
    stamp: Vec<u64>,
    n: usize,
    clock: u64,
    cand_val: Vec<u64>,
    cand_cnt: Vec<u32>,
    shift: u32,
    promote: u32,
    /// One bit per value (from a hash): a word whose bit is clear is not in the table, which
    /// settles most lookups of non-frequent words without a scan. Rebuilt on every insertion.
    filter: u64,
}

#[inline]
fn sig(v: u64) -> u64 {
    1 << (v.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 58)
}

impl Fvt {
    /// `n` values (≥ 1), a filter of `candidates` entries (a power of two ≥ 1) and the
    /// promotion threshold (≥ 1).
    pub fn new(n: usize, candidates: usize, promote: u32) -> Self {
        assert!(n >= 1 && candidates.is_power_of_two() && promote >= 1);
        Fvt {
            vals: Vec::with_capacity(n),
            stamp: Vec::with_capacity(n),
            n,
            clock: 0,
            cand_val: vec![0; candidates],
            cand_cnt: vec![0; candidates],
            shift: 64 - candidates.trailing_zeros(),
            promote,
            filter: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.n
    }

    /// The values currently in the table (order is slot order, not frequency).
    pub fn values(&self) -> &[u64] {
        &self.vals
    }

    /// Index of `v` in the table, if present.
    #[inline]
    pub fn find(&self, v: u64) -> Option<usize> {
        self.vals.iter().position(|&x| x == v)
    }

    /// Filter first, then a search that stops at the match (baseline x86-64 has no 64-bit
    /// vector compare, so a branch-free pass over the whole table costs more); this runs for
    /// every fetched word.
    #[inline]
    pub fn contains(&self, v: u64) -> bool {
        self.filter & sig(v) != 0 && self.vals.contains(&v)
    }

    /// Trains the table with one observed 64-bit value.
    #[inline]
    pub fn observe(&mut self, v: u64) {
        self.clock += 1;
        // One scan: the filter, then the position (not a membership pass and then a search).
        if self.filter & sig(v) != 0 {
            if let Some(i) = self.find(v) {
                self.stamp[i] = self.clock;
                return;
            }
        }
        let s = if self.shift == 64 {
            0
        } else {
            (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
        };
        if self.cand_cnt[s] > 0 && self.cand_val[s] == v {
            self.cand_cnt[s] += 1;
            if self.cand_cnt[s] >= self.promote {
                self.cand_cnt[s] = 0;
                self.insert(v);
            }
        } else if self.cand_cnt[s] == 0 {
            self.cand_val[s] = v;
            self.cand_cnt[s] = 1;
            if self.promote == 1 {
                self.cand_cnt[s] = 0;
                self.insert(v);
            }
        } else {
            self.cand_cnt[s] -= 1;
        }
    }

    fn insert(&mut self, v: u64) {
        if self.vals.len() < self.n {
            self.vals.push(v);
            self.stamp.push(self.clock);
        } else {
            let lru = (0..self.n).min_by_key(|&i| self.stamp[i]).unwrap_or(0);
            self.vals[lru] = v;
            self.stamp[lru] = self.clock;
        }
        self.filter = self.vals.iter().fold(0, |f, &x| f | sig(x));
    }
}
