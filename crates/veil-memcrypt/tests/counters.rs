//! Counters in memory under a counter tree (the default organisation): every cost they add is a
//! counter in the results, checked here against values counted by hand on tiny traces.

use veil_memcrypt::record::{Kind, Record};
use veil_memcrypt::{simulate, Config, Results};

/// Direct AES-256 without speculation or re-ordering (no bitmap lines), over 2 MB of protected
/// memory: 2^15 lines, 2^9 split counter blocks (64 lines each), a tree of arity 8 with levels
/// 1 (64 nodes), 2 (8 nodes) and the root (level 3, on chip): a path has two node lines.
fn machine(block: &str, entries: usize, ways: usize) -> Config {
    Config {
        mode: "direct".into(),
        cipher: "aes256".into(),
        ct_speculation: false,
        mac_speculation: false,
        reorder: false,
        counters: "tree".into(),
        counter_block: block.into(),
        protected_mb: 2,
        counter_cache_entries: entries,
        counter_cache_ways: ways,
        ..Default::default()
    }
}

fn rec(kind: Kind, line: u64) -> Record {
    Record { kind, addr: line * 64, insts: 10_000, data: [0xAB; 64], ..Default::default() }
}

fn go(c: &Config, recs: &[Record]) -> Results {
    simulate(c, recs.iter().cloned().map(Ok), &|| false).unwrap()
}

#[test]
fn counter_misses_and_tree_fetches_count_the_blocks_and_nodes_a_path_lacks() {
    let recs: Vec<Record> = [0, 1, 64, 4096].iter().map(|&l| rec(Kind::LoadFill, l)).collect();
    let on_chip = go(&Config { counters: "on_chip".into(), ..machine("split", 512, 8) }, &recs);
    assert_eq!((on_chip.counter_misses, on_chip.tree_fetches, on_chip.counter_ops, on_chip.dram_accesses), (0, 0, 0, 4));
    // Split: line 0 misses block 0 and both nodes; line 1 shares block 0; line 64 (block 1)
    // finds node 1/0 cached; line 4096 (block 64) needs nodes 1/8 and 2/1.
    let split = go(&machine("split", 512, 8), &recs);
    assert_eq!((split.counter_misses, split.tree_fetches), (3, 4));
    assert_eq!(split.counter_ops, 3 + 4, "one MAC per fetched line");
    assert_eq!(split.dram_accesses, 4 + 3 + 4);
    assert_eq!(split.counter_writebacks, 0);
    // Monolithic (8 counters per block): 2^12 blocks, levels 1..3 below the root at 4. Line 0:
    // block 0, nodes 1/0 2/0 3/0; line 1: block 0 again; line 64: block 8, node 1/1 (2/0 cached);
    // line 4096: block 512, nodes 1/64 2/8 3/1.
    let mono = go(&machine("monolithic", 512, 8), &recs);
    assert_eq!((mono.counter_misses, mono.tree_fetches, mono.counter_ops), (3, 3 + 1 + 3, 3 + 7));
    assert_eq!(mono.dram_accesses, 4 + 3 + 7);
    // Waiting for the verified counter only adds time.
    assert!(split.cycles > on_chip.cycles && mono.cycles >= split.cycles, "{} {} {}", on_chip.cycles, split.cycles, mono.cycles);
}

#[test]
fn a_dirty_counter_block_evicted_is_written_and_its_parent_updated() {
    // One fully associative set of 4 lines. The writeback of line 0 brings block 0 (dirty) and
    // nodes 1/0 and 2/0. The fill of line 4096 brings block 64 into the free way, then node 1/8
    // evicts the LRU line, dirty block 0: it is written back and its parent, node 1/0 (cached),
    // made dirty; node 2/1 then evicts node 2/0 (clean, nothing written).
    let recs = [rec(Kind::Writeback, 0), rec(Kind::LoadFill, 4096)];
    let r = go(&machine("split", 4, 4), &recs);
    assert_eq!((r.counter_misses, r.tree_fetches, r.counter_writebacks), (2, 4, 1));
    assert_eq!(r.counter_ops, 3 + 3 + 1);
    assert_eq!(r.dram_accesses, 2 + 2 + 4 + 1);
    // A parent not cached any more is fetched to be updated. With 2 lines: the writeback brings
    // block 0 (dirty) and node 1/0; node 2/0 evicts block 0, written, its parent 1/0 (cached)
    // made dirty. Line 4096: block 64 evicts node 2/0 (LRU, clean); node 1/8 evicts node 1/0
    // (dirty): written, and its parent 2/0, no longer cached, fetched and made dirty (it evicts
    // block 64, clean); node 2/1 evicts node 1/8 (clean).
    let r = go(&machine("split", 2, 2), &recs);
    assert_eq!((r.counter_misses, r.tree_fetches, r.counter_writebacks), (2, 2 + 2 + 1, 2));
    assert_eq!(r.counter_ops, (3 + 1) + 3 + (1 + 1));
    assert_eq!(r.dram_accesses, 2 + 2 + 5 + 2);
}

#[test]
fn the_128th_writeback_of_a_line_overflows_its_split_counter_and_reencrypts_the_other_lines_of_its_page() {
    let wbs = |n: usize| -> Vec<Record> { (0..n).map(|_| rec(Kind::Writeback, 5)).collect() };
    let r = go(&machine("split", 512, 8), &wbs(127));
    assert_eq!((r.counter_overflows, r.overflow_lines, r.overflow_ops), (0, 0, 0));
    assert_eq!(r.dram_accesses, 127 + 3);
    let r = go(&machine("split", 512, 8), &wbs(128));
    // AES: 4 chunks; each of the page's 63 other lines is decrypted and re-encrypted (4 cipher
    // passes each way) with its MACs (4 each way): 16 operations, a read and a write. The
    // written line goes out under the new counter as its writeback.
    assert_eq!((r.counter_overflows, r.overflow_lines, r.overflow_ops), (1, 63, 63 * 16));
    assert_eq!(r.dram_accesses, 128 + 3 + 2 * 63);
    // The minors start again: 255 writebacks overflow once, 256 twice.
    assert_eq!(go(&machine("split", 512, 8), &wbs(255)).counter_overflows, 1);
    assert_eq!(go(&machine("split", 512, 8), &wbs(256)).counter_overflows, 2);
    // 64-bit counters never overflow.
    let m = go(&machine("monolithic", 512, 8), &wbs(256));
    assert_eq!((m.counter_overflows, m.overflow_lines), (0, 0));
    // 3-bit minors: the 8th writeback overflows.
    let c = Config { minor_counter_bits: 3, ..machine("split", 512, 8) };
    assert_eq!((go(&c, &wbs(7)).counter_overflows, go(&c, &wbs(8)).counter_overflows, go(&c, &wbs(16)).counter_overflows), (0, 1, 2));
}

#[test]
fn on_chip_counters_are_the_named_option_that_charges_nothing() {
    let recs: Vec<Record> = (0..200).map(|i| rec(if i % 3 == 0 { Kind::Writeback } else { Kind::LoadFill }, i * 977)).collect();
    let c = Config { counters: "on_chip".into(), ..machine("split", 4, 4) };
    let r = go(&c, &recs);
    assert_eq!((r.counter_misses, r.tree_fetches, r.counter_writebacks, r.counter_ops, r.counter_overflows), (0, 0, 0, 0, 0));
    assert_eq!(r.dram_accesses, 200);
    let t = go(&machine("split", 4, 4), &recs);
    assert_eq!(t.dram_accesses, 200 + t.counter_misses + t.tree_fetches + t.counter_writebacks + 2 * t.overflow_lines);
    assert!(t.cycles > r.cycles);
}
