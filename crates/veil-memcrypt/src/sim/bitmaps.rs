//! The timing model's bitmap side: each line's stored bitmap, the bitmap cache and its
//! prefetcher, bitmap-line fetches (on a bitmap-cache miss, or alongside a page walk), their
//! decryption and the write-back of dirty bitmap lines.

use super::{Sim, LINE_LIMIT};
use crate::bitmap::Lookup;
use crate::config::BitmapFetch;
use crate::secure::{BITMAP_REGION, LINES_PER_BITMAP};

impl Sim {
    /// The stored bitmap of `line` (a fill), set to `default` when there is none yet: one
    /// lookup of the page's entry (this runs on every fill and writeback).
    #[inline]
    pub(super) fn bitmap_or_insert(&mut self, line: u64, default: u8) -> u8 {
        let e = self.line_bm.entry(line / LINES_PER_BITMAP).or_insert(([0; 64], 0));
        let i = (line % LINES_PER_BITMAP) as usize;
        if e.1 >> i & 1 == 0 {
            e.0[i] = default;
            e.1 |= 1 << i;
        }
        e.0[i]
    }

    /// Stores `bm` as the bitmap of `line` (a writeback); returns the one it replaces.
    #[inline]
    pub(super) fn replace_bitmap(&mut self, line: u64, bm: u8) -> Option<u8> {
        let e = self.line_bm.entry(line / LINES_PER_BITMAP).or_insert(([0; 64], 0));
        let i = (line % LINES_PER_BITMAP) as usize;
        let old = (e.1 >> i & 1 == 1).then_some(e.0[i]);
        e.0[i] = bm;
        e.1 |= 1 << i;
        old
    }

    /// Decryption and authentication of a bitmap line arriving at `arrive`. Bitmap lines are
    /// never speculated, so their MACs cover their ciphertext (encrypt-then-MAC) and a chunk's
    /// authentication runs beside its decryption instead of after it. A demand fetch books the
    /// chunk holding the missing line's bitmap first (its result is when the bitmap is known),
    /// then the line's other chunks; a prefetch books the whole line and is usable once all of
    /// it is. The line's offsets come from its on-chip nonce while it is fetched.
    pub(super) fn bitmap_decrypt(&mut self, arrive: f64, demand: bool) -> f64 {
        let n = self.scheme.chunks() as u64;
        self.r.bitmap_ops += 2 * n;
        let mut last = [0u64];
        if demand {
            self.eng.book_demand(arrive, 2, u64::MAX, &[1], &mut last);
            let ready = self.eng.done(last[0], arrive);
            self.eng.book_demand(arrive, 2 * n - 2, u64::MAX, &[], &mut []);
            ready
        } else {
            self.eng.book_demand(arrive, 2 * n, u64::MAX, &[2 * n - 1], &mut last);
            self.eng.done(last[0], arrive)
        }
    }

    /// Writes a dirty bitmap line the cache evicted: a new nonce, encryption and MACs.
    pub(super) fn write_back_bitmap(&mut self, t: f64, victim: Option<u64>) {
        if let Some(v) = victim {
            self.mem(t, BITMAP_REGION + v);
            let ops = 2 * self.scheme.chunks() as u64 + 1;
            self.r.bitmap_ops += ops;
            self.eng.book_demand(t, ops, u64::MAX, &[], &mut []);
        }
    }

    /// Runs the prefetcher on a trigger at `page` (time `t`): fetches the bitmap lines it asks
    /// for that are neither cached nor in flight, behind the demand requests already made.
    pub(super) fn prefetch_bitmaps(&mut self, t: f64, page: u64) {
        self.run_prefetcher(page, |sim, p| {
            sim.r.bitmap_prefetches += 1;
            let arrive = sim.mem(t, BITMAP_REGION + p);
            let ready = sim.bitmap_decrypt(arrive, false);
            let victim = sim.bitmaps.fill(p, ready, false, true);
            sim.write_back_bitmap(t, victim);
        });
    }

    /// Triggers the prefetcher at `page` and hands `fetch` each page it asks for that is neither
    /// cached nor in flight (checked as each is fetched: a fetch may evict another).
    #[inline(always)]
    pub(super) fn run_prefetcher(&mut self, page: u64, mut fetch: impl FnMut(&mut Self, u64)) {
        let mut want = std::mem::take(&mut self.pf_buf);
        want.clear();
        self.prefetcher.trigger(page, &mut want);
        for &p in &want {
            if p < LINE_LIMIT / LINES_PER_BITMAP && !self.bitmaps.contains(p) && !self.page_natural(p) {
                fetch(self, p);
            }
        }
        self.pf_buf = want;
    }

    /// The bitmap of `line` for a fill (`write` false) or a writeback that changes it, looked up
    /// at `t` (in parallel with the data line's fetch): returns when it is known. A miss fetches
    /// the page's bitmap line; the bitmap line's and the data line's decryptions overlap in the
    /// engines, only the un-reordering waits for both.
    #[inline(always)]
    pub(super) fn bitmap_access(&mut self, t: f64, line: u64, write: bool) -> f64 {
        let page = line / LINES_PER_BITMAP;
        match self.bitmaps.access(page, write) {
            Lookup::Hit { ready, first_use } => {
                self.r.bitmap_hits += 1;
                if ready > t {
                    self.r.bitmap_late += 1;
                }
                if first_use {
                    self.r.bitmap_prefetches_used += 1;
                    self.prefetch_bitmaps(t, page);
                }
                ready.max(t)
            }
            Lookup::Miss => {
                self.r.bitmap_misses += 1;
                let arrive = self.mem(t, BITMAP_REGION + page);
                let ready = self.bitmap_decrypt(arrive, true);
                let victim = self.bitmaps.fill(page, ready, write, false);
                self.write_back_bitmap(t, victim);
                self.prefetch_bitmaps(t, page);
                ready
            }
        }
    }

    /// Stores the bitmap `bm` a writeback of `line` gives it; returns whether the page's bitmap
    /// line must be updated. The bitmap the line was fetched with is kept beside it in the L2 (8
    /// bits a line): an unchanged bitmap needs no update (`bitmap_write_if_changed`).
    #[inline(always)]
    pub(super) fn store_written_bitmap(&mut self, line: u64, bm: u8) -> bool {
        let changed = self.replace_bitmap(line, bm) != Some(bm);
        self.scheme.reorders() && self.bitmap_fetch != BitmapFetch::Inline && (changed || !self.bitmap_write_if_changed)
    }

    /// The bitmap cache and prefetcher side of [`Sim::bitmap_access`], untimed.
    pub(super) fn warm_bitmap_cache(&mut self, line: u64, write: bool) {
        let page = line / LINES_PER_BITMAP;
        let trigger = match self.bitmaps.access(page, write) {
            Lookup::Hit { first_use, .. } => first_use,
            Lookup::Miss => {
                self.bitmaps.fill(page, 0.0, write, false);
                true
            }
        };
        if trigger {
            self.run_prefetcher(page, |sim, p| {
                sim.bitmaps.fill(p, 0.0, false, true);
            });
        }
    }

    /// A data-TLB miss at `t` under `with_walk`: the page's bitmap line, unless cached or in
    /// flight, is requested as the walk starts, so its fetch and decryption overlap the walk
    /// and the data line's own fetch. The fill's lookup then finds it (in flight or present).
    pub(super) fn bitmap_walk_fetch(&mut self, t: f64, line: u64) {
        let page = line / LINES_PER_BITMAP;
        if self.bitmaps.contains(page) {
            return;
        }
        self.r.bitmap_walk_fetches += 1;
        let arrive = self.mem(t, BITMAP_REGION + page);
        let ready = self.bitmap_decrypt(arrive, true);
        let victim = self.bitmaps.fill(page, ready, false, false);
        self.write_back_bitmap(t, victim);
        self.prefetch_bitmaps(t, page);
    }
}
