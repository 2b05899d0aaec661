//! What `veil trace stats` prints: per-thread instructions, fills, writebacks, MPKI, and the
//! most frequent 64-bit values among the words the LLC fetched, with the share of fetched words
//! the top N of them cover (the quantity frequent-value schemes live on).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use serde::Serialize;

use crate::{Header, Kind, Summary, TraceError, TraceReader};

/// Per-thread counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThreadStats {
    pub thread: u32,
    /// Instructions retired: the tool's total where the summary has it, else the sum over records.
    pub insts: u64,
    pub load_fills: u64,
    pub store_fills: u64,
    pub writebacks: u64,
    /// L1 misses that hit the LLC (sum of the records' `llc_hits`).
    pub llc_hits: u64,
    /// LLC fills per thousand instructions.
    pub mpki: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TraceStats {
    pub header: Header,
    pub summary: Summary,
    pub records: u64,
    pub insts: u64,
    pub fills: u64,
    pub writebacks: u64,
    pub llc_hits: u64,
    pub mpki: f64,
    pub threads: Vec<ThreadStats>,
    /// 64-bit words in fetched lines (fills only).
    pub fetched_words: u64,
    /// Distinct 64-bit values among them.
    pub distinct_values: u64,
    /// The most frequent values, most frequent first: (value, count).
    pub top_values: Vec<(u64, u64)>,
    /// (N, share of fetched words equal to one of the top N values).
    pub coverage: Vec<(usize, f64)>,
}

/// Multiplicative hashing: the keys are memory words, and SipHash costs more than the counting.
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Reads the whole trace once. Memory grows with the number of distinct fetched values.
pub fn compute(path: impl AsRef<Path>, ns: &[usize]) -> Result<TraceStats, TraceError> {
    compute_until(path, ns, &|| false)
}

/// As `compute`, giving up (an `Invalid("interrupted")` error) once `stop()` turns true; it is
/// asked every 64 Ki records.
pub fn compute_until(path: impl AsRef<Path>, ns: &[usize], stop: &dyn Fn() -> bool) -> Result<TraceStats, TraceError> {
    let mut r = TraceReader::open(path)?;
    let header = r.header().clone();
    let mut counts: HashMap<u64, u64, BuildHasherDefault<WordHasher>> = HashMap::default();
    let mut threads: Vec<ThreadStats> = Vec::new();
    let mut records = 0u64;
    while let Some(rec) = r.next_ref()? {
        records += 1;
        if records % 65536 == 0 && stop() {
            return Err(TraceError::Invalid("interrupted".into()));
        }
        let t = rec.thread as usize;
        if t >= threads.len() {
            threads.resize_with(t + 1, Default::default);
        }
        let ts = &mut threads[t];
        ts.insts += rec.insts;
        ts.llc_hits += rec.llc_hits as u64;
        match rec.kind {
            Kind::LoadFill => ts.load_fills += 1,
            Kind::StoreFill => ts.store_fills += 1,
            Kind::Writeback => ts.writebacks += 1,
        }
        if rec.kind != Kind::Writeback {
            for w in rec.words() {
                *counts.entry(w).or_insert(0) += 1;
            }
        }
    }
    let summary = r.summary().cloned().unwrap_or_default();
    // The tool's totals include the instructions after each thread's last record.
    if let Some(per) = summary.stats.get("threads").and_then(|v| v.as_array()) {
        for (t, v) in per.iter().enumerate() {
            if let Some(insts) = v.get("insts").and_then(|x| x.as_u64()) {
                if t >= threads.len() {
                    threads.resize_with(t + 1, Default::default);
                }
                threads[t].insts = threads[t].insts.max(insts);
            }
        }
    }
    for (t, ts) in threads.iter_mut().enumerate() {
        ts.thread = t as u32;
        ts.mpki = per_kilo(ts.load_fills + ts.store_fills, ts.insts);
    }
    let insts: u64 = threads.iter().map(|t| t.insts).sum();
    let fills: u64 = threads.iter().map(|t| t.load_fills + t.store_fills).sum();
    let fetched_words: u64 = counts.values().sum();
    let mut top: Vec<(u64, u64)> = counts.iter().map(|(&v, &c)| (v, c)).collect();
    let keep = ns.iter().copied().max().unwrap_or(0);
    // Ties broken by value so the same trace always lists the same values.
    let by_count = |a: &(u64, u64), b: &(u64, u64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    if top.len() > keep && keep > 0 {
        top.select_nth_unstable_by(keep - 1, by_count);
        top.truncate(keep);
    }
    top.sort_unstable_by(by_count);
    let coverage = ns
        .iter()
        .map(|&n| {
            let c: u64 = top.iter().take(n).map(|x| x.1).sum();
            (n, if fetched_words == 0 { 0.0 } else { c as f64 / fetched_words as f64 })
        })
        .collect();
    Ok(TraceStats {
        header,
        summary,
        records,
        insts,
        fills,
        writebacks: threads.iter().map(|t| t.writebacks).sum(),
        llc_hits: threads.iter().map(|t| t.llc_hits).sum(),
        mpki: per_kilo(fills, insts),
        threads,
        fetched_words,
        distinct_values: counts.len() as u64,
        top_values: top,
        coverage,
    })
}

fn per_kilo(events: u64, insts: u64) -> f64 {
    if insts == 0 {
        0.0
    } else {
        events as f64 * 1000.0 / insts as f64
    }
}
