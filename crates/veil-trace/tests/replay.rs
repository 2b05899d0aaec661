//! The offline LLC replay: the same per-thread L1 streams give the same trace whatever order
//! the host ran the threads in and whatever the racy line snapshots held; and the replay's
//! interleaving, hits, writebacks and line data are those its documentation states.

use serde_json::json;
use veil_trace::replay::{granule_mask, replay};
use veil_trace::{synthetic, CacheGeometry, Codec, Header, Kind, Record, TraceReader, TraceWriter, WriterOptions};

fn l1_header(llc_sets: u64, llc_assoc: u32) -> Header {
    let mut h = synthetic::header(2, 64);
    h.llc = CacheGeometry { size: llc_sets * llc_assoc as u64 * 64, assoc: llc_assoc };
    h.extra.insert("stream".into(), json!("l1"));
    h
}

fn ev(thread: u32, kind: Kind, line: u64, insts: u64, aux: u32, fill: u8) -> Record {
    Record { thread, kind, addr: line * 64, insts, llc_hits: aux, data: [fill; 64] }
}

/// Writes `events` as the tool would stream them, with per-thread start clocks in the summary.
fn stream(dir: &std::path::Path, name: &str, h: &Header, events: &[Record], starts: &[u64]) -> std::path::PathBuf {
    let p = dir.join(name);
    let mut w = TraceWriter::create_with(&p, h, WriterOptions { block_records: 3, zstd_level: None }).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    let threads: Vec<_> = starts.iter().map(|s| json!({"start": s, "insts": 1000})).collect();
    // Line 9's first two bytes were written by an atomic somewhere: volatile, zero in the replay.
    w.finish_with(json!({"threads": threads, "volatile": [[9 * 64, 1]]})).unwrap();
    p
}

fn run(dir: &std::path::Path, input: &std::path::Path, out: &str, quantum: u64) -> (Vec<Record>, serde_json::Value, Vec<u8>) {
    let r = TraceReader::open(input).unwrap();
    let h = r.header().clone();
    let o = dir.join(out);
    replay(r, &o, h, quantum, dir.join(format!("{out}.spool")), Codec::Lz4).unwrap();
    assert!(!dir.join(format!("{out}.spool")).exists(), "spool folder left behind");
    let mut rd = TraceReader::open(&o).unwrap();
    let mut recs = Vec::new();
    let mut rec = Record::default();
    while rd.next_into(&mut rec).unwrap() {
        recs.push(rec.clone());
    }
    let stats = rd.summary().unwrap().stats.clone();
    (recs, stats, std::fs::read(&o).unwrap())
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("veil-replay-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn host_order_and_racy_snapshots_do_not_change_the_trace() {
    let dir = temp("order");
    let h = l1_header(2, 2);
    // Thread 0 and thread 1 (created at thread 0's clock 40) touch lines 0..12; thread 1's view
    // of line 3 depends on the host (9 or 7) but the first touch of every line shows 1.
    let t0 = |racy: u8| {
        vec![
            ev(0, Kind::LoadFill, 0, 10, 0, 1),
            ev(0, Kind::StoreFill, 3, 20, 0, 1),
            ev(0, Kind::LoadFill, 5, 30, 1, 1),
            ev(0, Kind::Writeback, 3, 5, granule_mask(64, 0, 8), 0xAB),
            ev(0, Kind::LoadFill, 7, 100, 0, racy),
            ev(0, Kind::LoadFill, 9, 3, 0, 1),
        ]
    };
    let t1 = |racy: u8| {
        vec![
            ev(1, Kind::LoadFill, 3, 15, 0, racy),
            ev(1, Kind::LoadFill, 7, 2, 0, 1),
            ev(1, Kind::StoreFill, 11, 60, 0, 1),
            ev(1, Kind::LoadFill, 0, 1, 0, racy),
        ]
    };
    let (a0, a1) = (t0(1), t1(9));
    let one_then_other: Vec<Record> = a0.iter().chain(a1.iter()).cloned().collect();
    let (b0, b1) = (t0(7), t1(7));
    let mut mixed = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < b0.len() || j < b1.len() {
        if j < b1.len() && (i >= b0.len() || i % 2 == 1) {
            mixed.push(b1[j].clone());
            j += 1;
        } else {
            mixed.push(b0[i].clone());
            i += 1;
        }
    }
    // Whatever thread touches a line first (in the host's order) saw it before any traced store.
    let mut mixed2 = mixed.clone();
    let mut seen = std::collections::HashSet::new();
    for r in mixed2.iter_mut() {
        if seen.insert(r.addr) {
            r.data = [1; 64];
        }
    }
    let pa = stream(&dir, "a.l1", &h, &one_then_other, &[0, 40]);
    let pb = stream(&dir, "b.l1", &h, &mixed2, &[0, 40]);
    let (ra, sa, bytes_a) = run(&dir, &pa, "a.vtrace", 10);
    let (_, _, bytes_b) = run(&dir, &pb, "b.vtrace", 10);
    assert_eq!(bytes_a, bytes_b, "host order changed the replayed trace");

    // The documented interleaving (quantum 10; thread 1 starts at clock 40): thread 0 fills
    // line 0 (clock 10) and line 3 (30); thread 1 hits line 3 (55) and fills line 7 (57); thread
    // 0 fetches line 5 (60, an instruction fetch) and evicts line 3 (clean) from its set.
    let fills: Vec<(u32, u64, u64)> =
        ra.iter().filter(|r| r.kind != Kind::Writeback).map(|r| (r.thread, r.addr / 64, r.insts)).collect();
    assert_eq!(fills[..4], [(0, 0, 10), (0, 3, 20), (1, 7, 17), (0, 5, 30)]);
    assert_eq!(fills.len(), 7);
    assert!(!ra.iter().any(|r| r.thread == 1 && r.addr == 3 * 64), "thread 1's load of line 3 hits");
    let t = sa["threads"].as_array().unwrap();
    assert_eq!(t[1]["llc_hits"], json!(2));
    assert_eq!(t[0]["ifetch_fills"], json!(1));
    assert_eq!(t[1]["start"], json!(40));
    let f9 = ra.iter().find(|r| r.addr == 9 * 64).expect("line 9 filled");
    assert_eq!(&f9.data[..2], &[0, 0]);
    assert_eq!(&f9.data[2..], &[1; 62]);
    assert!(sa.get("volatile").is_none());
    assert_eq!(sa["replay"]["volatile_lines"], json!(1));
    // Thread 0's dirty victim of line 3 (it stored the first 8 bytes) finds the LLC without the
    // line: it goes to memory, with only those bytes changed.
    let wb: Vec<&Record> = ra.iter().filter(|r| r.kind == Kind::Writeback).collect();
    let w3 = wb.iter().find(|r| r.addr == 3 * 64).expect("line 3 written back");
    assert_eq!(&w3.data[..8], &[0xAB; 8]);
    assert_eq!(&w3.data[8..], &[1; 56]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn quantum_orders_threads_by_clock() {
    let dir = temp("quantum");
    let h = l1_header(64, 4);
    // Thread 0 runs 100 instructions between misses, thread 1 10: with a quantum of 10 their
    // fills interleave by clock; with a huge quantum thread 0's come first (thread order).
    let mut evs = Vec::new();
    for i in 0..5 {
        evs.push(ev(0, Kind::LoadFill, 100 + i, 100, 0, 0));
    }
    for i in 0..50 {
        evs.push(ev(1, Kind::LoadFill, 1000 + i, 10, 0, 0));
    }
    let p = stream(&dir, "q.l1", &h, &evs, &[0, 0]);
    let (fine, _, _) = run(&dir, &p, "fine.vtrace", 10);
    let (coarse, _, _) = run(&dir, &p, "coarse.vtrace", 1 << 40);
    let order = |rs: &[Record]| rs.iter().map(|r| r.thread).collect::<Vec<_>>();
    let mut clocks = [0u64; 2];
    let mut last = 0;
    for r in &fine {
        clocks[r.thread as usize] += r.insts;
        let q = clocks[r.thread as usize] / 10;
        assert!(q >= last, "a fill of an earlier quantum came later");
        last = q;
    }
    assert_eq!(order(&coarse)[..5], [0; 5]);
    assert_ne!(order(&fine)[..5], [0; 5]);
    assert_eq!(fine.len(), 55);
    assert_eq!(granule_mask(64, 0, 1), 1);
    assert_eq!(granule_mask(64, 62, 2), 1 << 31);
    assert_eq!(granule_mask(8, 2, 3), 0b11100);
    std::fs::remove_dir_all(&dir).unwrap();
}
