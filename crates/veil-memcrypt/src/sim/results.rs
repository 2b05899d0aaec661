//! What a timing run reports: every count and mean of [`super::Sim`]'s run.

use serde::Serialize;

/// Everything a run reports.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Results {
    pub ipc: f64,
    /// Records that only warmed the model up (fast-forward) before the measured ones.
    pub warmup_records: u64,
    pub cycles: f64,
    pub insts: u64,
    pub records: u64,
    pub load_fills: u64,
    pub store_fills: u64,
    pub writebacks: u64,
    pub llc_hits: u64,
    /// 64-bit words fetched by fills.
    pub fetched_words: u64,
    /// Of those, words in the FVT when the line was fetched (Fig. 5).
    pub frequent_words: u64,
    /// Frequent words whose 128-bit chunk partner is frequent too, in the original order.
    pub frequent_words_paired_natural: u64,
    /// Frequent words in a predictable 128-bit chunk of the re-ordered layout (Fig. 6).
    pub frequent_words_paired_reordered: u64,
    /// The same had the line been re-ordered with the FVT of its fetch (all its frequent words
    /// but an odd one out are paired): what re-ordering can pair at best, without the bitmap
    /// having gone stale since the writeback.
    pub frequent_words_paired_at_fetch: u64,
    /// Frequent words outside a predictable chunk of the re-ordered layout: the odd one out of
    /// the stored bitmap, and words whose FVT status changed since the line was written.
    pub frequent_words_lost_odd: u64,
    pub frequent_words_lost_changed: u64,
    /// Cipher chunks fetched, and those whose value the speculation can match.
    pub chunks: u64,
    pub chunks_predicted: u64,
    /// Engine operations spent on speculation (candidate ciphertexts and MACs).
    pub spec_ops: u64,
    /// Engine operations re-encrypting and re-MACing written-back lines.
    pub writeback_ops: u64,
    pub demand_ops: u64,
    /// Speculative operations a later miss's demand operation landed on under `demand_first`
    /// arbitration (the arbiter would have issued them later; the model keeps their times).
    pub spec_displaced: u64,
    /// Bitmap-cache lookups of fills and writebacks that found their page (a prefetch still in
    /// flight counts as a hit, and in `bitmap_late`) or did not (a demand fetch).
    pub bitmap_hits: u64,
    pub bitmap_misses: u64,
    /// Bitmap lines fetched by the prefetcher, those a demand access used, and the demand
    /// accesses that found their prefetch still in flight.
    pub bitmap_prefetches: u64,
    pub bitmap_prefetches_used: u64,
    pub bitmap_late: u64,
    /// Crypto operations on bitmap lines: decryption and authentication on arrival, encryption
    /// of dirty victims.
    pub bitmap_ops: u64,
    /// Load misses that waited for the line holding their address (pointer chasing).
    pub dependent_misses: u64,
    /// Over load fills: cycles by which waiting for the bitmap delayed the data's use.
    pub bitmap_wait_cycles: f64,
    /// Fills (loads and stores) whose page missed the data TLB (a page walk each).
    pub tlb_misses: u64,
    /// Bitmap lines fetched alongside a page walk (`bitmap_fetch = "with_walk"`), not counted
    /// in `bitmap_misses`.
    pub bitmap_walk_fetches: u64,
    /// `reorder_policy = "adaptive"`: pages that stopped re-ordering (their recent fills held no
    /// frequent values) and that resumed; pages the loader laid out in natural order (their
    /// first access held no frequent values); fills of pages not re-ordering (no bitmap
    /// needed); lines a page's stop rewrote in natural order (read and written, with their
    /// engine operations) because their stored bitmap was not zero.
    pub reorder_stops: u64,
    pub reorder_resumes: u64,
    pub reorder_pages_natural: u64,
    pub natural_page_fills: u64,
    pub reorder_converted_lines: u64,
    pub reorder_convert_ops: u64,
    /// Counters in memory (`counters = "tree"`): counter-cache misses (a counter block read
    /// each), tree node lines read (for those misses, and parents of evicted dirty lines not
    /// cached), dirty counter blocks and nodes written back, and MAC operations on all of them.
    pub counter_misses: u64,
    pub tree_fetches: u64,
    pub counter_writebacks: u64,
    pub counter_ops: u64,
    /// Split counters: minor-counter overflows, the lines they re-encrypted (read and written)
    /// and the engine operations that took.
    pub counter_overflows: u64,
    pub overflow_lines: u64,
    pub overflow_ops: u64,
    pub dram_row_hits: u64,
    pub dram_row_closed: u64,
    pub dram_row_conflicts: u64,
    pub dram_accesses: u64,
    /// Mean over load fills: miss issue to data arrival, and data arrival to usable.
    pub mean_memory_cycles: f64,
    pub mean_crypto_cycles: f64,
    /// Cycles the core stalled behind a full ROB or MSHRs.
    pub stall_cycles: f64,
    /// Unloaded SDRAM latency (core cycles): row hit, closed row, row conflict.
    pub dram_unloaded: (f64, f64, f64),
}
