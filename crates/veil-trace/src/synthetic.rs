//! Deterministic synthetic traces for tests of the format and of its consumers: records with a
//! plausible mix of kinds, per-thread streams and line contents dominated by a few frequent
//! values (zero first), as real traces are. Nothing here pretends to be a real program.

use crate::{Header, Kind, Record, CacheGeometry, MAX_LINE};

/// A header for synthetic traces with the given line size (256 KB 8-way LLC, 8 KB 2-way L1).
pub fn header(threads: u32, line_size: u32) -> Header {
    Header {
        workload: "synthetic".into(),
        program: "synthetic".into(),
        args: vec![],
        input_hash: String::new(),
        l1: CacheGeometry { size: 8192, assoc: 2 },
        llc: CacheGeometry { size: 256 * 1024, assoc: 8 },
        line_size,
        tool_version: concat!("veil-trace-synthetic ", env!("CARGO_PKG_VERSION")).into(),
        threads,
        extra: Default::default(),
    }
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n` records from `seed`: the same arguments always give the same records.
pub fn records(seed: u64, n: usize, threads: u32, line_size: u32) -> impl Iterator<Item = Record> {
    // Zero half the time, then a few others: the skew real memory shows.
    const FREQUENT: [u64; 8] = [0, 0, 0, 0, 1, 1, 0xffff_ffff_ffff_ffff, 0x0000_7fff_0000_0000];
    let mut s = seed;
    let ls = line_size as usize;
    (0..n).map(move |_| {
        let r = splitmix(&mut s);
        let thread = (r % threads.max(1) as u64) as u32;
        let kind = match (r >> 8) % 10 {
            0..=5 => Kind::LoadFill,
            6..=7 => Kind::StoreFill,
            _ => Kind::Writeback,
        };
        let addr = ((r >> 16) % (1 << 26)) * line_size as u64;
        let mut data = [0u8; MAX_LINE];
        for w in data[..ls].chunks_exact_mut(8) {
            let v = splitmix(&mut s);
            let word = if v % 4 != 0 { FREQUENT[(v >> 2) as usize % 8] } else { v >> 3 };
            w.copy_from_slice(&word.to_le_bytes());
        }
        Record { thread, kind, addr, insts: (r >> 40) % 5000, llc_hits: ((r >> 32) % 64) as u32, data }
    })
}
