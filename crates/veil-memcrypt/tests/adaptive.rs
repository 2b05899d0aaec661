//! Adaptive re-ordering (`reorder_policy = "adaptive"`): a page whose recent fills hold no
//! frequent values stops re-ordering and reading its bitmap line, and resumes when they return.
//! Checked on tiny traces counted by hand, and against the machines it falls between.

use veil_memcrypt::record::{Kind, Record};
use veil_memcrypt::synth::{Synth, SynthConfig};
use veil_memcrypt::{simulate, Config, Results};

/// AES-256 direct with speculation and re-ordering, counters on chip (no counter traffic),
/// bitmap lines fetched with the walk, no bitmap prefetcher; the adaptive window is 4 fills,
/// a page stops after 4 fills without frequent values and resumes after 2 with them.
fn machine(policy: &str) -> Config {
    Config {
        cipher: "aes256".into(),
        counters: "on_chip".into(),
        bitmap_prefetch: "none".into(),
        reorder_policy: policy.into(),
        adaptive_window: 4,
        adaptive_off_max: 0,
        adaptive_on_min: 2,
        ..Default::default()
    }
}

fn fill(line: u64, data: [u8; 64]) -> Record {
    Record { kind: Kind::LoadFill, addr: line * 64, insts: 2_000, data, ..Default::default() }
}

/// Words no FVT holds: distinct (splitmix64 of the word's index), never repeated.
fn random(line: u64) -> [u8; 64] {
    let mut d = [0u8; 64];
    for i in 0..8 {
        let mut z = (line * 8 + i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        d[i * 8..i * 8 + 8].copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    d
}

/// Zero in the even words, random in the odd ones: four frequent words that no natural pair
/// holds, all four paired by re-ordering.
fn scattered(line: u64) -> [u8; 64] {
    let mut d = random(line);
    for i in (0..8).step_by(2) {
        d[i * 8..i * 8 + 8].fill(0);
    }
    d
}

fn go(c: &Config, recs: &[Record]) -> Results {
    simulate(c, recs.iter().cloned().map(Ok), &|| false).unwrap()
}

/// Page 10 trains the FVT on zero (its own first fill, seen with an empty FVT, has no frequent
/// values: it is laid out in natural order). Then page 0: a line with scattered zeros (it
/// counts: the page re-orders), four random lines (the window holds no fill that counts after
/// the fourth: the page stops), three random and two scattered lines in natural order (the
/// second makes two: it resumes), two random lines re-ordering again.
fn trace() -> Vec<Record> {
    let mut recs = vec![fill(640, [0; 64])];
    recs.push(fill(0, scattered(0)));
    recs.extend((1..=7).map(|l| fill(l, random(l))));
    recs.push(fill(8, scattered(8)));
    recs.push(fill(9, scattered(9)));
    recs.extend((10..=11).map(|l| fill(l, random(l))));
    recs
}

#[test]
fn a_page_without_frequent_values_stops_reading_its_bitmap_after_the_window_and_resumes() {
    let a = go(&machine("adaptive"), &trace());
    // Bitmap lookups: page 0's fills while it re-orders (lines 0-4 and 10-11); none for page 10.
    assert_eq!(a.bitmap_hits + a.bitmap_misses, 7);
    assert_eq!((a.reorder_stops, a.reorder_resumes, a.reorder_pages_natural), (1, 1, 1));
    // Page 10's fill and page 0's lines 5-9.
    assert_eq!(a.natural_page_fills, 6);
    // One bitmap line read (page 0's, with its walk); the resume knows its line is all zero.
    assert_eq!(a.bitmap_walk_fetches + a.bitmap_misses + a.bitmap_prefetches, 1);
    // The stop rewrites line 0 (laid down re-ordered: its bitmap is not zero), read and written.
    assert_eq!(a.reorder_converted_lines, 1);
    assert_eq!(a.reorder_convert_ops, 2 * (2 * 4));
    // Fills, page 0's bitmap line read, line 0 read and written, page 0's bitmap line written
    // all zero (memory's copy held line 0's bitmap).
    assert_eq!(a.dram_accesses, 13 + 1 + 2 + 1);

    // The paper's machine: every fill looks its bitmap up, each page's bitmap line is read.
    let p = go(&machine("always"), &trace());
    assert_eq!(p.bitmap_hits + p.bitmap_misses, 13);
    assert_eq!(p.bitmap_walk_fetches + p.bitmap_misses, 2);
    assert_eq!(p.dram_accesses, 13 + 2);
    assert_eq!((p.reorder_stops, p.reorder_resumes, p.natural_page_fills, p.reorder_pages_natural), (0, 0, 0, 0));
}

#[test]
fn a_line_in_natural_order_on_a_reordering_page_is_speculated_in_its_natural_pairs() {
    // After the trace, page 0 re-orders again, but its line 12 was laid down in natural order
    // (the page was natural when the loader's layout was decided): its bitmap is zero. An
    // all-zero line holds four natural frequent pairs; speculation tries them, as on a page that
    // does not re-order (a bitmap of zero gave no speculated position before, losing them).
    let mut recs = trace();
    let before = go(&machine("adaptive"), &recs);
    recs.push(fill(12, [0; 64]));
    let a = go(&machine("adaptive"), &recs);
    assert_eq!((a.reorder_stops, a.reorder_resumes, a.natural_page_fills), (1, 1, 6), "line 12 is on a re-ordering page");
    assert_eq!((a.chunks - before.chunks, a.chunks_predicted - before.chunks_predicted), (4, 4));
    // The paper's machine laid line 12 out re-ordered with the loader's bitmap: the same 4.
    let p0 = go(&machine("always"), &trace());
    let p = go(&machine("always"), &recs);
    assert_eq!(p.chunks_predicted - p0.chunks_predicted, 4);
}

#[test]
fn a_page_that_never_holds_frequent_values_never_reads_its_bitmap_line() {
    // Every page's first fill is random: laid out in natural order, no bitmap traffic at all.
    let recs: Vec<Record> = (0..256).map(|i| fill(i * 64 + i % 64, random(i))).collect();
    let a = go(&machine("adaptive"), &recs);
    assert_eq!((a.bitmap_hits, a.bitmap_misses, a.bitmap_walk_fetches, a.bitmap_ops), (0, 0, 0, 0));
    assert_eq!((a.reorder_pages_natural, a.natural_page_fills), (256, 256));
    assert_eq!(a.dram_accesses, 256);
    let p = go(&machine("always"), &recs);
    assert_eq!(p.bitmap_walk_fetches, 256);
}

fn stream(p_zero: f64, p_small: f64) -> Vec<Record> {
    let cfg = SynthConfig { records: 40_000, footprint_lines: 1 << 15, p_zero, p_small, seed: 3, ..Default::default() };
    Synth::new(cfg).collect()
}

#[test]
fn without_frequent_values_the_adaptive_machine_runs_as_the_machine_without_reordering() {
    // Random words only: no fill ever holds frequent values, every page is in natural order,
    // and the machine is the one without re-ordering, cycle for cycle.
    let recs = stream(0.0, 0.0);
    let c = Config { counters: "tree".into(), bitmap_prefetch: "stream".into(), ..machine("adaptive") };
    let a = go(&c, &recs);
    let n = go(&Config { reorder: false, ..c.clone() }, &recs);
    let p = go(&Config { reorder_policy: "always".into(), ..c.clone() }, &recs);
    assert_eq!(a.cycles, n.cycles);
    assert_eq!(a.dram_accesses, n.dram_accesses);
    assert_eq!(a.natural_page_fills, a.load_fills + a.store_fills);
    // The paper's machine pays a bitmap line per page the TLB misses.
    assert!(p.dram_accesses > n.dram_accesses && p.cycles > n.cycles, "{} {}", p.cycles, n.cycles);
}

#[test]
fn frequent_words_that_pair_in_place_count_only_under_the_frequent_signal() {
    // All-zero memory: every chunk is a frequent pair in its natural order, so re-ordering buys
    // nothing. Under "unpaired" no fill counts and the machine is the one without re-ordering,
    // cycle for cycle; under "frequent" every fill counts and it is the paper's machine.
    let recs = stream(1.0, 0.0);
    let c = Config { counters: "tree".into(), ..machine("adaptive") };
    let a = go(&c, &recs);
    let n = go(&Config { reorder: false, ..c.clone() }, &recs);
    assert_eq!((a.cycles, a.dram_accesses), (n.cycles, n.dram_accesses));
    let f = go(&Config { adaptive_signal: "frequent".into(), ..c.clone() }, &recs);
    let p = go(&Config { reorder_policy: "always".into(), ..c.clone() }, &recs);
    // The first page's first fill came before the FVT knew zero: it started natural, resumed.
    assert_eq!((f.reorder_stops, f.reorder_resumes), (0, 1));
    assert!(f.dram_accesses > n.dram_accesses && (f.cycles / p.cycles - 1.0).abs() < 1e-3, "{} {}", f.cycles, p.cycles);
}

#[test]
fn adaptive_runs_are_deterministic_and_keep_reordering_where_values_are_frequent() {
    let recs = stream(0.5, 0.3);
    let c = Config { counters: "tree".into(), warmup_records: 5_000, ..machine("adaptive") };
    let a = go(&c, &recs);
    let b = go(&c, &recs);
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    // Most lines hold frequent values: pages keep re-ordering almost everywhere.
    assert!(a.natural_page_fills * 20 < a.load_fills + a.store_fills, "{} of {}", a.natural_page_fills, a.load_fills);
}

#[test]
fn bad_adaptive_settings_are_one_config_error() {
    for (c, want) in [
        (Config { reorder_policy: "sometimes".into(), ..Config::default() }, "known: always, adaptive"),
        (Config { adaptive_window: 0, ..Config::default() }, "adaptive_window"),
        (Config { adaptive_signal: "often".into(), ..Config::default() }, "known: unpaired, frequent"),
        (Config { adaptive_window: 33, ..Config::default() }, "adaptive_window"),
        (Config { adaptive_on_min: 33, ..Config::default() }, "adaptive_on_min"),
        (Config { adaptive_off_max: 2, adaptive_on_min: 2, ..Config::default() }, "adaptive_off_max"),
    ] {
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}
