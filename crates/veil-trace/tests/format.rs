use std::io::Cursor;
use std::path::PathBuf;

use veil_trace::{synthetic, Kind, Record, TraceError, TraceReader, TraceWriter, WriterOptions, FORMAT_VERSION};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("veil-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write_file(name: &str, n: usize, opts: WriterOptions, line: u32) -> (PathBuf, Vec<Record>) {
    let path = tmp(name);
    let recs: Vec<Record> = synthetic::records(7, n, 4, line).collect();
    let mut w = TraceWriter::create_with(&path, &synthetic::header(4, line), opts).unwrap();
    for r in &recs {
        w.write(r).unwrap();
    }
    let s = w.finish().unwrap();
    assert_eq!(s.records, n as u64);
    (path, recs)
}

fn read_all(path: &PathBuf) -> Result<Vec<Record>, TraceError> {
    TraceReader::open(path)?.collect()
}

#[test]
fn round_trip_over_block_boundaries_both_codecs_and_line_sizes() {
    for (codec, level) in [("zstd", Some(3)), ("raw", None)] {
        for line in [64u32, 32, 8] {
            let opts = WriterOptions { block_records: 1000, zstd_level: level };
            let (path, recs) = write_file(&format!("rt-{codec}-{line}.vtrace"), 3500, opts, line);
            let mut r = TraceReader::open(&path).unwrap();
            assert_eq!(r.header(), &synthetic::header(4, line));
            let mut rec = Record::default();
            let mut got = Vec::new();
            while r.next_into(&mut rec).unwrap() {
                got.push(rec.clone());
            }
            assert_eq!(got, recs, "{codec} line {line}");
            let s = r.summary().expect("summary after the last record");
            assert_eq!((s.records, s.blocks, s.threads), (3500, 4, 4));
            assert_eq!(TraceReader::read_summary(&path).unwrap(), *s);
            assert_eq!(read_all(&path).unwrap(), recs);
            // Bytes beyond the line size read back as zero.
            assert!(got.iter().all(|r| r.data[line as usize..].iter().all(|&b| b == 0)));
        }
    }
}

#[test]
fn same_records_give_identical_bytes() {
    let (a, _) = write_file("same-a.vtrace", 5000, WriterOptions::default(), 64);
    let (b, _) = write_file("same-b.vtrace", 5000, WriterOptions::default(), 64);
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn reads_from_a_stream() {
    let recs: Vec<Record> = synthetic::records(3, 2500, 2, 64).collect();
    let mut buf = Vec::new();
    let mut w = TraceWriter::new(&mut buf, &synthetic::header(2, 64), WriterOptions { block_records: 1024, zstd_level: None }).unwrap();
    for r in &recs {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    let got: Vec<Record> = TraceReader::new(Cursor::new(buf)).unwrap().map(Result::unwrap).collect();
    assert_eq!(got, recs);
}

#[test]
fn every_truncation_is_reported_where_the_bytes_end() {
    let opts = WriterOptions { block_records: 500, zstd_level: Some(1) };
    let (path, _) = write_file("trunc.vtrace", 1200, opts, 64);
    let full = std::fs::read(&path).unwrap();
    let cut = tmp("trunc-cut.vtrace");
    // Every prefix up to the header and across a block boundary, then a stride to the end.
    let mut lens: Vec<usize> = (0..200).collect();
    lens.extend((200..full.len()).step_by(97));
    lens.extend(full.len() - 40..full.len());
    for len in lens {
        std::fs::write(&cut, &full[..len]).unwrap();
        let err = match TraceReader::open(&cut) {
            Err(e) => e,
            Ok(r) => r.collect::<Result<Vec<_>, _>>().expect_err(&format!("prefix of {len} bytes read as complete")),
        };
        match err {
            TraceError::Truncated { offset, .. } => assert_eq!(offset, len as u64, "prefix {len}"),
            other => panic!("prefix {len}: expected truncation, got {other}"),
        }
        assert!(err_text(&cut).contains(&format!("at byte {len}")));
    }
    assert_eq!(read_all(&path).unwrap().len(), 1200);
}

fn err_text(path: &PathBuf) -> String {
    match TraceReader::open(path) {
        Err(e) => e.to_string(),
        Ok(r) => r.collect::<Result<Vec<_>, _>>().unwrap_err().to_string(),
    }
}

/// Offsets of the block frames in a file written by `write_file`.
fn block_offsets(bytes: &[u8]) -> Vec<usize> {
    let hlen = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut at = 16 + hlen;
    let mut out = vec![];
    while &bytes[at..at + 4] == b"BLK " {
        out.push(at);
        at += 20 + u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
    }
    out
}

#[test]
fn a_flipped_byte_is_corruption_at_its_block() {
    let opts = WriterOptions { block_records: 400, zstd_level: Some(3) };
    let (path, _) = write_file("corrupt.vtrace", 1000, opts, 64);
    let full = std::fs::read(&path).unwrap();
    let blocks = block_offsets(&full);
    assert_eq!(blocks.len(), 3);
    let bad = tmp("corrupt-bad.vtrace");
    for (k, &at) in blocks.iter().enumerate() {
        let end = if k + 1 < blocks.len() { blocks[k + 1] } else { full.len() - 60 };
        // In the compressed payload (the zstd checksum catches it) and in the tag.
        for pos in [at + 20 + (end - at - 20) / 2, at + 1] {
            let mut b = full.clone();
            b[pos] ^= 0x5a;
            std::fs::write(&bad, &b).unwrap();
            let err = TraceReader::open(&bad).unwrap().collect::<Result<Vec<_>, _>>().unwrap_err();
            match err {
                TraceError::Corrupt { offset, .. } => assert_eq!(offset, at as u64, "byte {pos}"),
                other => panic!("byte {pos}: expected corruption, got {other}"),
            }
        }
    }
}

#[test]
fn a_bad_kind_in_a_raw_block_is_corruption() {
    let opts = WriterOptions { block_records: 100, zstd_level: None };
    let (path, _) = write_file("kind.vtrace", 100, opts, 64);
    let mut b = std::fs::read(&path).unwrap();
    let at = block_offsets(&b)[0];
    b[at + 20 + 4 * 100 + 17] = 9; // record 17's kind
    std::fs::write(&path, &b).unwrap();
    let e = TraceReader::open(&path).unwrap().next().unwrap().unwrap_err();
    assert_eq!(e.offset(), Some(at as u64));
    assert!(e.to_string().contains("record 17"), "{e}");
}

#[test]
fn another_version_is_refused_naming_both() {
    let (path, _) = write_file("version.vtrace", 10, WriterOptions::default(), 64);
    let mut b = std::fs::read(&path).unwrap();
    b[8..12].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    let e = TraceReader::open(&path).err().unwrap();
    assert!(matches!(e, TraceError::Version { found: 7, supported: FORMAT_VERSION }));
    let text = e.to_string();
    assert!(text.contains("version 7") && text.contains(&format!("version {FORMAT_VERSION}")), "{text}");
}

#[test]
fn not_a_trace_and_missing_file() {
    let path = tmp("junk.vtrace");
    std::fs::write(&path, b"this is not a trace at all, just text").unwrap();
    assert!(TraceReader::open(&path).err().unwrap().to_string().contains("bad magic"));
    let e = TraceReader::open(tmp("nope.vtrace")).err().unwrap();
    assert!(matches!(e, TraceError::Open { .. }), "{e}");
}

#[test]
fn writer_refuses_what_the_format_cannot_hold() {
    let mut h = synthetic::header(1, 64);
    h.line_size = 128;
    assert!(TraceWriter::create(tmp("big.vtrace"), &h).is_err());
    h.line_size = 48;
    assert!(TraceWriter::create(tmp("odd.vtrace"), &h).is_err());
    let mut w = TraceWriter::create(tmp("unaligned.vtrace"), &synthetic::header(1, 64)).unwrap();
    let r = Record { addr: 0x1008, ..Record::default() };
    assert!(w.write(&r).unwrap_err().to_string().contains("not aligned"));
}

#[test]
fn unfinished_writer_leaves_a_truncated_file() {
    let path = tmp("unfinished.vtrace");
    {
        let mut w = TraceWriter::create_with(&path, &synthetic::header(1, 64), WriterOptions { block_records: 10, zstd_level: Some(1) }).unwrap();
        for r in synthetic::records(1, 25, 1, 64) {
            w.write(&r).unwrap();
        }
    }
    let len = std::fs::metadata(&path).unwrap().len();
    let e = read_all(&path).unwrap_err();
    assert!(matches!(e, TraceError::Truncated { offset, .. } if offset == len), "{e}");
    assert!(TraceReader::read_summary(&path).is_err());
}

#[test]
fn stats_count_kinds_and_frequent_values() {
    let line = 64u32;
    let recs: Vec<Record> = synthetic::records(11, 4000, 3, line).collect();
    let path = tmp("stats.vtrace");
    let mut w = TraceWriter::create(&path, &synthetic::header(3, line)).unwrap();
    for r in &recs {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    let s = veil_trace::stats::compute(&path, &[1, 8]).unwrap();
    let fills: Vec<&Record> = recs.iter().filter(|r| r.kind != Kind::Writeback).collect();
    assert_eq!(s.fills, fills.len() as u64);
    assert_eq!(s.fetched_words, fills.len() as u64 * 8);
    let zeros = fills.iter().flat_map(|r| r.words(64)).filter(|&w| w == 0).count() as f64;
    assert_eq!(s.top_values[0].0, 0, "zero is the most frequent synthetic value");
    assert!((s.coverage[0].1 - zeros / s.fetched_words as f64).abs() < 1e-12);
    let insts: u64 = recs.iter().map(|r| r.insts).sum();
    assert_eq!(s.insts, insts);
    assert!((s.mpki - s.fills as f64 * 1000.0 / insts as f64).abs() < 1e-9);
}
