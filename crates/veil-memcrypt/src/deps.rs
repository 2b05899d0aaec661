//! Dependent misses inferred from pointer values. The traces carry no register dependences, and
//! an interval model that lets every miss inside a ROB window overlap treats pointer chasing
//! (mcf's arcs and nodes, a compiler's trees, an interpreter's objects) as independent misses:
//! it floods the memory bus and hides the latency that chasing exposes. A load miss whose line
//! address was held, as a 64-bit word, by a line a recent load miss fetched most likely got its
//! address from that word (a pointer into the line), so it issues only once that line's data is
//! usable, decrypted and authenticated under the secure policy. Small integers and other
//! non-pointers name lines nobody touches, so they rarely match. The table is direct-mapped over
//! the pointed-to lines (a later fill's pointer overwrites an earlier one's): a recent pointer is
//! what a chase follows.

const EMPTY: u64 = u64::MAX;

#[derive(Clone)]
pub struct PointerDeps {
    lines: Vec<u64>,
    ready: Vec<f64>,
    mask: usize,
}

impl PointerDeps {
    /// `entries`: a power of two.
    pub fn new(entries: usize) -> Self {
        // One entry more: where `record` writes words that are not pointers (never read).
        PointerDeps { lines: vec![EMPTY; entries + 1], ready: vec![0.0; entries + 1], mask: entries - 1 }
    }

    /// Empty again, as [`Self::new`] makes it.
    pub fn reset(&mut self) {
        self.lines.fill(EMPTY);
        self.ready.fill(0.0);
    }

    #[inline]
    fn slot(&self, line: u64) -> usize {
        (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & self.mask
    }

    /// When the line a pointer to `line` came from is usable (0 when no recent fill held one).
    #[inline]
    pub fn producer_ready(&self, line: u64) -> f64 {
        let i = self.slot(line);
        if self.lines[i] == line {
            self.ready[i]
        } else {
            0.0
        }
    }

    /// Records the words of a load miss's line, usable at `ready`, as possible pointers.
    #[inline]
    pub fn record(&mut self, words: &[u64; 8], ready: f64, limit: u64) {
        for &w in words {
            let l = w >> 6;
            // Lines 0..16 (the first KB) are never mapped: zero and small integers. Which
            // words are pointers is as good as random: instead of a branch, the others are
            // written to the spare entry.
            let i = if (16..limit).contains(&l) { self.slot(l) } else { self.mask + 1 };
            self.lines[i] = l;
            self.ready[i] = ready;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pointer_makes_its_target_wait_for_the_line_that_held_it() {
        let mut d = PointerDeps::new(64);
        // Line 0x1000 holds a pointer to address 0x7f00_0048 (line 0x1fc0001) and small integers.
        d.record(&[0x7f00_0048, 0, 1, 7, 0, 0, 0, 0], 500.0, 1 << 58);
        assert_eq!(d.producer_ready(0x7f00_0048 >> 6), 500.0);
        assert_eq!(d.producer_ready((0x7f00_0048 >> 6) + 1), 0.0);
        assert_eq!(d.producer_ready(0), 0.0);
    }
}
