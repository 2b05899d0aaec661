//! Adaptive re-ordering (`reorder_policy = "adaptive"`, beyond the paper). Re-ordering pays a
//! bitmap line per page the bitmap cache does not hold; on a page whose words are not frequent
//! it buys nothing (every stored bitmap is zero, the natural order), nor on one whose frequent
//! words already pair in place (runs of zeros), so the bitmap line's fetch is pure traffic. Each page has a mode: *re-ordering* (the paper's scheme: lines written
//! re-ordered, fills wait for the page's bitmap) or *natural* (lines written in their own
//! order, no bitmap line read or written, speculation on the natural pairs as the machine
//! without re-ordering does).
//!
//! - A page's first access (fill or writeback) sets its mode: re-ordering if that line counts
//!   (below), natural otherwise. This extends the model's loader rule (a line never
//!   written back was laid down by the loader with the FVT of its first fetch): the loader lays
//!   a page out by its content, and the mode bit travels with the page's translation.
//! - A fill *counts* for re-ordering (`adaptive_signal`): "unpaired" (default) when re-ordering
//!   would pair more of its frequent words (in the FVT before it trains on the line) than their
//!   natural order does, what re-ordering can gain; "frequent" when at least two of its words
//!   are frequent (the fewest a pair needs), whether or not they already pair in place.
//! - A re-ordering page stops once `adaptive_window` fills since its last switch hold at most
//!   `adaptive_off_max` that count. Stopping rewrites in natural order every line of the page
//!   whose stored bitmap is not zero (each read, decrypted, re-encrypted and written back with
//!   its MACs, off the core's path, `reorder_converted_lines`) and writes the page's bitmap
//!   line as all zero when memory's copy may hold a bitmap that is not (a line was converted,
//!   or the cached copy was dirty); the bitmap cache drops it.
//! - A natural page resumes once `adaptive_on_min` of its last `adaptive_window` fills count:
//!   its bitmap line in memory is all zero (the loader's, or the stop's) and the processor
//!   knows it, so it enters the bitmap cache clean without a fetch; later writebacks re-order.
//!
//! - A line whose stored bitmap is zero is in natural order (converted by a stop, laid out so by
//!   the loader while its page was natural, or written back with no frequent word), so on a
//!   re-ordering page speculation tries the natural pairs at every position, as a natural page
//!   does (the paper's machine tries none: a zero bitmap pairs nothing). Without this, a page that
//!   resumes keeps its natural-order lines unspeculated until each is written back: on python
//!   (quick window) 29,906 of 199,105 fills, on 615 pages, most laid out natural at their first
//!   access during the warm-up and resumed since, lost 57,557 predicted chunks, and adaptive
//!   re-ordering kept 0.889 of the paper's gain instead of 0.980.
//!
//! The mode bit and the window (a few bits per page) are kept in trusted storage beside the
//! page's translation and charged nothing (page walks book no SDRAM traffic in this model);
//! they must be trusted: a page read in the wrong mode would restore a line's words to the
//! wrong places with every chunk's MAC still verifying.

use super::{LineMap, Sim};
use crate::bitmap::Lookup;
use crate::config::{Config, ReorderPolicy};
use crate::secure::LINES_PER_BITMAP;

/// Whether a fill whose words' FVT mask is `freq` counts for re-ordering (module doc).
#[inline(always)]
fn counts(freq: u8, unpaired: bool) -> bool {
    if !unpaired {
        return freq.count_ones() >= 2;
    }
    let natural = (0..4).filter(|j| freq >> (2 * j) & 3 == 3).count() as u32;
    freq.count_ones() & !1 > 2 * natural
}

#[derive(Clone, Copy, Default)]
struct PageMode {
    /// The last fills since the page's last switch, newest in bit 0 (1 = it counted).
    hist: u32,
    /// Fills since the last switch, up to the window.
    seen: u32,
    natural: bool,
    /// Lines of the page the run has not seen are in natural order (the loader laid it out so,
    /// or a stop converted it).
    unseen_natural: bool,
}

/// The per-page modes and the policy's parameters.
#[derive(Clone)]
pub(super) struct Adaptive {
    unpaired: bool,
    window: u32,
    off_max: u32,
    on_min: u32,
    pages: LineMap<PageMode>,
}

impl Adaptive {
    /// The policy's state, or None when every page re-orders (policy "always", or a scheme that
    /// does not re-order).
    pub(super) fn new(cfg: &Config, reorders: bool) -> Option<Self> {
        let adaptive = ReorderPolicy::parse(&cfg.reorder_policy).ok()? == ReorderPolicy::Adaptive;
        (adaptive && reorders && cfg.encryption).then(|| Adaptive {
            unpaired: cfg.adaptive_signal != "frequent",
            window: cfg.adaptive_window,
            off_max: cfg.adaptive_off_max,
            on_min: cfg.adaptive_on_min,
            pages: LineMap::default(),
        })
    }
}

impl Sim {
    /// Whether the page of `line` re-orders, for an access whose words' FVT mask is `freq`;
    /// a page's first access sets its mode.
    #[inline(always)]
    pub(super) fn page_reorders(&mut self, line: u64, freq: u8, timed: bool) -> bool {
        let Some(a) = self.adaptive.as_mut() else {
            return true;
        };
        let page = line / LINES_PER_BITMAP;
        if let Some(m) = a.pages.get(&page) {
            return !m.natural;
        }
        let natural = !counts(freq, a.unpaired);
        a.pages.insert(page, PageMode { natural, unseen_natural: natural, ..Default::default() });
        if natural && timed {
            self.r.reorder_pages_natural += 1;
        }
        !natural
    }

    /// The bitmap a line the run has not seen was stored with: the loader's (the FVT of now)
    /// on a page laid out re-ordered, zero on one in natural order.
    #[inline(always)]
    pub(super) fn loader_bitmap(&self, line: u64, freq: u8) -> u8 {
        match &self.adaptive {
            Some(a) if a.pages.get(&(line / LINES_PER_BITMAP)).is_some_and(|m| m.unseen_natural) => 0,
            _ => freq,
        }
    }

    /// Whether `page` is known to be in natural order (the prefetcher skips its bitmap line).
    #[inline(always)]
    pub(super) fn page_natural(&self, page: u64) -> bool {
        self.adaptive.as_ref().is_some_and(|a| a.pages.get(&page).is_some_and(|m| m.natural))
    }

    /// A fill of `line` whose words' FVT mask (before training) is `freq` enters its page's
    /// window; the page stops or resumes re-ordering at `t` when the window says so (booked
    /// when `timed`, state only in warm-up).
    #[inline(always)]
    pub(super) fn adapt(&mut self, t: f64, line: u64, freq: u8, timed: bool) {
        let Some(a) = self.adaptive.as_mut() else {
            return;
        };
        let page = line / LINES_PER_BITMAP;
        let (window, off_max, on_min, unpaired) = (a.window, a.off_max, a.on_min, a.unpaired);
        let Some(m) = a.pages.get_mut(&page) else {
            return;
        };
        let mask = if window >= 32 { u32::MAX } else { (1 << window) - 1 };
        m.hist = (m.hist << 1 | counts(freq, unpaired) as u32) & mask;
        m.seen = (m.seen + 1).min(window);
        let count = m.hist.count_ones();
        let was_natural = m.natural;
        let stop = !m.natural && m.seen == window && count <= off_max;
        let resume = m.natural && count >= on_min;
        if stop || resume {
            *m = PageMode { natural: stop, unseen_natural: m.unseen_natural || stop, ..Default::default() };
        }
        if timed && was_natural {
            self.r.natural_page_fills += 1;
        }
        if stop {
            self.stop_reordering(t, page, timed);
        } else if resume {
            self.resume_reordering(t, page, timed);
        }
    }

    /// Rewrites in natural order the page's lines stored re-ordered, and its bitmap line.
    fn stop_reordering(&mut self, t: f64, page: u64, timed: bool) {
        let mut lines = [0u64; 64];
        let mut n = 0;
        if let Some(e) = self.line_bm.get_mut(&page) {
            for (i, bm) in e.0.iter_mut().enumerate() {
                if e.1 >> i & 1 == 1 && *bm != 0 {
                    *bm = 0;
                    lines[n] = page * LINES_PER_BITMAP + i as u64;
                    n += 1;
                }
            }
        }
        let dirty = self.bitmaps.invalidate(page);
        if !timed {
            return;
        }
        self.r.reorder_stops += 1;
        if n > 0 || dirty {
            self.write_back_bitmap(t, Some(page));
        }
        self.r.reorder_converted_lines += n as u64;
        // As a split counter's overflow: each line read, re-encrypted and written back.
        self.r.reorder_convert_ops += self.reencrypt(t, lines[..n].iter().copied());
    }

    /// The page's bitmap line, all zero in memory, enters the bitmap cache clean without a fetch.
    fn resume_reordering(&mut self, t: f64, page: u64, timed: bool) {
        if timed {
            self.r.reorder_resumes += 1;
        }
        if let Lookup::Hit { .. } = self.bitmaps.access(page, false) {
            return;
        }
        let victim = self.bitmaps.fill(page, t, false, false);
        if timed {
            self.write_back_bitmap(t, victim);
        }
    }
}
