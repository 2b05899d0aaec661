//! Fast-forward and warm-up (paper §5: benchmarks were fast-forwarded to SimPoint regions with
//! the caches and frequent value tracking simulated). A warm-up record must leave the model's
//! functional state (FVT, stored bitmaps, bitmap cache and prefetcher) exactly as a timed record
//! would, so every count that depends on that state alone is the same over the measured records
//! whether the records before them were timed or only warmed through. Skipped records leave no
//! state at all.

use veil_memcrypt::input::{simulate_run, Run};
use veil_memcrypt::synth::SynthConfig;
use veil_memcrypt::{Config, Results};

const W: u64 = 20_000;
const N: u64 = 15_000;

fn stream() -> SynthConfig {
    // Small pages' worth of footprint against a 16-page bitmap cache: bitmap misses, prefetches,
    // bitmap changes and FVT turnover all happen.
    SynthConfig { records: 0, footprint_lines: 1 << 14, cache_lines: 1024, run_lines: 4, p_zero: 0.4, seed: 3, ..Default::default() }
}

fn run(cfg: &Config, skip: u64, warm: u64, n: u64) -> Results {
    let synth = SynthConfig { records: skip + warm + n, ..stream() };
    let config = Config { warmup_records: warm, ..cfg.clone() };
    simulate_run(&Run { config, trace: None, synth: Some(synth), max_records: n, skip_records: skip, sampling: None }, &|| false).unwrap()
}

/// The counts fixed by the functional state (which words are frequent, how they pair, what the
/// bitmap cache and prefetcher do), not by timing.
fn state_counts(r: &Results) -> [u64; 14] {
    [
        r.load_fills,
        r.store_fills,
        r.writebacks,
        r.fetched_words,
        r.frequent_words,
        r.frequent_words_paired_natural,
        r.frequent_words_paired_reordered,
        r.frequent_words_paired_at_fetch,
        r.frequent_words_lost_odd,
        r.frequent_words_lost_changed,
        r.chunks_predicted,
        r.bitmap_hits,
        r.bitmap_misses,
        r.bitmap_prefetches,
    ]
}

fn minus(a: [u64; 14], b: [u64; 14]) -> [u64; 14] {
    std::array::from_fn(|i| a[i] - b[i])
}

#[test]
fn warm_up_leaves_the_state_a_timed_run_leaves() {
    let small_bitmap_cache = Config { bitmap_cache_entries: 16, ..Config::default() };
    let next_line = Config { bitmap_prefetch: "next_line".into(), bitmap_write_if_changed: false, ..Config::default() };
    let tdes = Config { cipher: "tdes".into(), fvt_size: 16, ..Config::default() };
    for cfg in [Config::default(), small_bitmap_cache, next_line, tdes] {
        let warmed = run(&cfg, 0, W, N);
        assert_eq!((warmed.warmup_records, warmed.records), (W, N));
        if cfg.cipher != "tdes" {
            // A stale bitmap can only lose pairs that re-ordering at fetch time would make.
            assert!(warmed.frequent_words_paired_at_fetch >= warmed.frequent_words_paired_reordered);
            assert!(warmed.frequent_words_paired_at_fetch > warmed.frequent_words * 8 / 10);
        }
        let all = run(&cfg, 0, 0, W + N);
        let first = run(&cfg, 0, 0, W);
        assert_eq!(state_counts(&warmed), minus(state_counts(&all), state_counts(&first)), "{cfg:?}");
        // Timing starts afresh: the warmed run's cycles cover the measured records only.
        assert!(warmed.cycles < 0.8 * all.cycles);
    }
}

#[test]
fn warm_up_matters_and_skipped_records_leave_nothing() {
    let cfg = Config::default();
    let warmed = run(&cfg, 0, W, N);
    let cold = run(&cfg, W, 0, N);
    assert_eq!((cold.warmup_records, cold.records), (0, N));
    // Same records measured; a cold FVT and bitmap cache predict less and miss more.
    assert_eq!(cold.fetched_words, warmed.fetched_words);
    assert!(cold.frequent_words < warmed.frequent_words);
    assert!(cold.bitmap_misses > warmed.bitmap_misses);
    // Skipping is a pure offset into the input: skip W then warm W equals the records W..3W.
    let offset = run(&cfg, W, W, N);
    assert_eq!(offset.records, N);
    assert_ne!(state_counts(&offset), state_counts(&warmed));
}
