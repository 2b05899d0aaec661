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

/// A word's position in [`Fvt::positions`] when the table does not hold it.
pub const ABSENT: u8 = u8::MAX;

/// Bit i set when word i of a line is in the table, from its [`Fvt::positions`].
#[inline]
pub fn frequent_mask(pos: &[u8; 8]) -> u8 {
    pos.iter().enumerate().fold(0, |m, (i, &p)| m | ((p != ABSENT) as u8) << i)
}

/// Frequent value table with its candidate filter.
#[derive(Clone, Debug)]
pub struct Fvt {
    vals: Vec<u64>,
    /// Last-use stamps of the values, and one more entry: where the stamp of a word that is
    /// not in the table goes (see `observe_at`).
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
    /// `n` values (1 ..= 64: `positions` keeps a bit per value), a filter of `candidates`
    /// entries (a power of two ≥ 1) and the promotion threshold (≥ 1).
    pub fn new(n: usize, candidates: usize, promote: u32) -> Self {
        assert!((1..=64).contains(&n) && candidates.is_power_of_two() && promote >= 1);
        Fvt {
            vals: Vec::with_capacity(n),
            stamp: vec![0; n + 1],
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
        // One scan: the filter, then the position (not a membership pass and then a search).
        let at = if self.filter & sig(v) != 0 { self.find(v) } else { None };
        self.observe_at(v, at.map_or(ABSENT, |i| i as u8));
    }

    /// Where each word of a line is in the table ([`ABSENT`] when it is not): the timing model
    /// asks this once per fetched line, for its frequent-word bitmap and for training.
    /// Every word is compared with every value, without branches: whether a word is frequent
    /// is as good as random, and the filter test and the search that stopped at the match
    /// were mispredicted about once per line. The values are distinct, so a word matches one
    /// at most; the comparisons vectorise where the CPU has AVX2 (`Sim::step`'s fast copy).
    #[inline]
    pub fn positions(&self, w: &[u64; 8]) -> [u8; 8] {
        // Bit k of `hit[i]`: word i equals value k (the table holds at most 64 values).
        let mut hit = [0u64; 8];
        for (k, &v) in self.vals.iter().enumerate() {
            for (h, &x) in hit.iter_mut().zip(w) {
                *h |= ((x == v) as u64) << k;
            }
        }
        hit.map(|h| if h == 0 { ABSENT } else { h.trailing_zeros() as u8 })
    }

    /// Trains the table with a line's words in order, as eight [`Self::observe`] calls do,
    /// given their [`Self::positions`] in the table as it is now: those stay valid until a
    /// promotion replaces a value, after which the remaining words are searched again (so
    /// a frequent word costs a stamp update, not a second search).
    #[inline]
    pub fn observe_line(&mut self, w: &[u64; 8], pos: &[u8; 8]) {
        let mut valid = true;
        for (&x, &p) in w.iter().zip(pos) {
            if valid {
                valid = !self.observe_at(x, p);
            } else {
                self.observe(x);
            }
        }
    }

    /// [`Self::observe`] of `v` found at position `at` of the table ([`ABSENT`]: not in it);
    /// returns whether `v` entered the table. Branch-free but for the (rare) promotion:
    /// whether a fetched word is frequent, and what its filter entry holds, are as good as
    /// random, and such branches were mispredicted several times per fetched line. Both
    /// outcomes are computed and masks pick what is stored (a frequent word writes its filter
    /// entry back unchanged, a word not in the table stamps the spare entry).
    #[inline(always)]
    fn observe_at(&mut self, v: u64, at: u8) -> bool {
        self.clock += 1;
        let frequent = at != ABSENT;
        let i = (at as usize).min(self.n);
        self.stamp[i] = self.clock;
        let s = if self.shift == 64 {
            0
        } else {
            (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
        };
        let (c, old) = (self.cand_cnt[s], self.cand_val[s]);
        // A match counts up, an empty entry takes the value with a count of 1 (= 0 + 1), any
        // other value counts the entry down.
        let empty = c == 0;
        let up = empty | (old == v);
        let next = if up { c + 1 } else { c.wrapping_sub(1) };
        let keep = (frequent as u32).wrapping_neg();
        self.cand_cnt[s] = (c & keep) | (next & !keep);
        let take = ((empty & !frequent) as u64).wrapping_neg();
        self.cand_val[s] = (v & take) | (old & !take);
        if !frequent & up & (next >= self.promote) {
            self.cand_cnt[s] = 0;
            self.insert(v);
            return true;
        }
        false
    }

    #[cold]
    fn insert(&mut self, v: u64) {
        if self.vals.len() < self.n {
            self.stamp[self.vals.len()] = self.clock;
            self.vals.push(v);
        } else {
            let lru = (0..self.n).min_by_key(|&i| self.stamp[i]).unwrap_or(0);
            self.vals[lru] = v;
            self.stamp[lru] = self.clock;
        }
        self.filter = self.vals.iter().fold(0, |f, &x| f | sig(x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_trains_as_its_eight_words_do() {
        // Few distinct values, a small table and a low threshold: promotions (and LRU
        // replacements) happen inside lines, which invalidates the positions found before.
        for (n, cands, promote) in [(2, 4, 1), (4, 8, 2), (8, 16, 3), (32, 64, 2)] {
            let (mut a, mut b) = (Fvt::new(n, cands, promote), Fvt::new(n, cands, promote));
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            for _ in 0..5_000 {
                let mut w = [0u64; 8];
                for v in w.iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *v = x % (3 * n as u64);
                }
                let pos = a.positions(&w);
                for (i, &v) in w.iter().enumerate() {
                    assert_eq!(pos[i] != ABSENT, b.contains(v));
                    assert_eq!((pos[i] != ABSENT).then_some(pos[i] as usize), b.find(v));
                }
                a.observe_line(&w, &pos);
                for v in w {
                    b.observe(v);
                }
                let n = a.vals.len();
                assert_eq!((&a.vals, &a.stamp[..n], &a.cand_val, &a.cand_cnt, a.filter), (&b.vals, &b.stamp[..n], &b.cand_val, &b.cand_cnt, b.filter));
            }
        }
    }
}
