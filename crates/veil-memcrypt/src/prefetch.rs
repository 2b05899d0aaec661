//! Bitmap prefetchers: the paper's second remedy for bitmap misses (§3.2.2: "bitmaps can be
//! prefetched using simple hardware prefetch technique"). The paper names no technique, so
//! these are the two textbook ones, chosen by name (`bitmap_prefetch`), over the stream of
//! bitmap-line (page) numbers the bitmap cache sees:
//!
//! - `none`: demand fetches only.
//! - `next_line`: tagged next-line prefetching (Smith, *Cache memories*, 1982): on a demand
//!   miss to page p, and on the first demand use of a line a prefetch brought in, fetch the
//!   bitmap lines of pages p+1 .. p+degree that are not present. A program walking through
//!   pages keeps `degree` bitmap lines ahead of itself; a random walk pays one useless fetch
//!   per miss.
//! - `stream`: a stream table (after Jouppi's stream buffers and Palacharla and Kessler's
//!   allocation filter, ISCA 1990 / 1994): it prefetches only once two consecutive pages (up or
//!   down) have missed, then keeps `degree` lines ahead of each confirmed stream; isolated
//!   misses fetch nothing extra, so pointer-chasing programs pay no bandwidth for it.
//!
//! Triggers are demand misses and first uses of prefetched lines; demand hits on lines that
//! were fetched on demand train nothing (as in a tagged prefetcher, they say nothing new).

use crate::error::{Error, Result};

pub const NAMES: [&str; 3] = ["none", "next_line", "stream"];

#[derive(Clone, Copy, Debug, Default)]
pub struct Stream {
    /// The last page that advanced this stream.
    last: u64,
    /// +1 / -1 once confirmed; 0 while it has seen one page only.
    dir: i64,
    /// LRU stamp.
    stamp: u64,
}

#[derive(Clone, Debug)]
pub enum Prefetcher {
    None,
    NextLine { degree: u64 },
    Stream { degree: u64, table: Vec<Stream>, clock: u64 },
}

impl Prefetcher {
    pub fn new(name: &str, degree: u32, streams: usize) -> Result<Self> {
        let degree = degree as u64;
        match name {
            "none" => Ok(Prefetcher::None),
            "next_line" => Ok(Prefetcher::NextLine { degree }),
            "stream" => Ok(Prefetcher::Stream { degree, table: vec![Stream::default(); streams.max(1)], clock: 0 }),
            _ => Err(Error::config(format!(
                "bitmap_prefetch: unknown prefetcher '{name}' (known: {})",
                NAMES.join(", ")
            ))),
        }
    }

    /// A trigger at `page` (a demand miss, or the first use of a prefetched line): pushes the
    /// pages to prefetch, nearest first, into `out` (the caller drops those already present).
    pub fn trigger(&mut self, page: u64, out: &mut Vec<u64>) {
        match self {
            Prefetcher::None => {}
            Prefetcher::NextLine { degree } => out.extend((1..=*degree).map(|k| page.wrapping_add(k))),
            Prefetcher::Stream { degree, table, clock } => {
                *clock += 1;
                let now = *clock;
                let step = |p: u64, d: i64| p.wrapping_add(d as u64);
                // A confirmed stream this page continues, or an unconfirmed one it confirms.
                let hit = table.iter().position(|s| s.dir != 0 && step(s.last, s.dir) == page).or_else(|| {
                    table.iter().position(|s| s.dir == 0 && s.stamp > 0 && s.last.abs_diff(page) == 1)
                });
                match hit {
                    Some(i) => {
                        let s = &mut table[i];
                        if s.dir == 0 {
                            s.dir = if page > s.last { 1 } else { -1 };
                        }
                        s.last = page;
                        s.stamp = now;
                        let d = s.dir;
                        out.extend((1..=*degree as i64).map(|k| step(page, k * d)));
                    }
                    None => {
                        let v = (0..table.len()).min_by_key(|&i| table[i].stamp).unwrap();
                        table[v] = Stream { last: page, dir: 0, stamp: now };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(p: &mut Prefetcher, page: u64) -> Vec<u64> {
        let mut v = Vec::new();
        p.trigger(page, &mut v);
        v
    }

    #[test]
    fn next_line_fetches_the_following_pages() {
        let mut p = Prefetcher::new("next_line", 2, 0).unwrap();
        assert_eq!(fire(&mut p, 10), vec![11, 12]);
        assert!(fire(&mut Prefetcher::new("none", 4, 8).unwrap(), 10).is_empty());
        assert!(Prefetcher::new("markov", 1, 1).is_err());
    }

    #[test]
    fn stream_waits_for_two_consecutive_pages_in_either_direction() {
        let mut p = Prefetcher::new("stream", 2, 4).unwrap();
        assert!(fire(&mut p, 100).is_empty());
        assert!(fire(&mut p, 500).is_empty());
        assert_eq!(fire(&mut p, 101), vec![102, 103]);
        // The stream advances as its prefetched pages are used.
        assert_eq!(fire(&mut p, 102), vec![103, 104]);
        // Downward.
        assert_eq!(fire(&mut p, 499), vec![498, 497]);
        // Random pages never prefetch.
        for x in [7, 9000, 33, 1 << 40, 77] {
            assert!(fire(&mut p, x).is_empty());
        }
    }
}
