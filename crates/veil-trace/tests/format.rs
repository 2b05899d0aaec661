use std::io::Cursor;
use std::path::PathBuf;

use veil_trace::{
    synthetic, Codec, Kind, ReadOptions, Record, TraceError, TraceReader, TraceWriter, WriterOptions, FORMAT_VERSION,
    MIN_FORMAT_VERSION,
};

const CODECS: [Codec; 3] = [Codec::Raw, Codec::Zstd(3), Codec::Lz4];

/// Serial, and two decoder threads with a read-ahead smaller than the file's blocks.
const READERS: [ReadOptions; 2] = [ReadOptions { threads: 1, read_ahead: 0 }, ReadOptions { threads: 2, read_ahead: 2 }];

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("veil-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write_file(name: &str, n: usize, opts: WriterOptions, line: u32) -> (PathBuf, Vec<Record>) {
    write_codec(name, n, opts.block_records, opts.codec(), line)
}

fn write_codec(name: &str, n: usize, block_records: u32, codec: Codec, line: u32) -> (PathBuf, Vec<Record>) {
    let path = tmp(name);
    let recs: Vec<Record> = synthetic::records(7, n, 4, line).collect();
    let opts = WriterOptions { block_records, zstd_level: None };
    let mut w = TraceWriter::create_with(&path, &synthetic::header(4, line), opts).unwrap();
    w.set_codec(codec).unwrap();
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

fn read_with(path: &PathBuf, opts: ReadOptions) -> Result<Vec<Record>, TraceError> {
    TraceReader::open_with(path, opts)?.collect()
}

#[test]
fn round_trip_every_codec_line_size_reader_and_api() {
    for codec in CODECS {
        for line in [64u32, 32, 8] {
            let (path, recs) = write_codec(&format!("rt-{}-{line}.vtrace", codec.id()), 3500, 1000, codec, line);
            for opts in READERS {
                let what = format!("{codec:?} line {line} {opts:?}");
                let mut r = TraceReader::open_with(&path, opts).unwrap();
                assert_eq!(r.header(), &synthetic::header(4, line));
                assert_eq!(r.version(), FORMAT_VERSION);
                let mut rec = Record::default();
                let mut got = Vec::new();
                while r.next_into(&mut rec).unwrap() {
                    got.push(rec.clone());
                }
                assert_eq!(got, recs, "next_into, {what}");
                let s = r.summary().expect("summary after the last record");
                assert_eq!((s.records, s.blocks, s.threads), (3500, 4, 4));
                assert_eq!(TraceReader::read_summary(&path).unwrap(), *s);
                assert_eq!(r.offset(), std::fs::metadata(&path).unwrap().len());
                assert_eq!(read_with(&path, opts).unwrap(), recs, "iterator, {what}");
                // Bytes beyond the line size read back as zero.
                assert!(got.iter().all(|r| r.data[line as usize..].iter().all(|&b| b == 0)));

                let mut r = TraceReader::open_with(&path, opts).unwrap();
                let mut by_ref = Vec::new();
                while let Some(v) = r.next_ref().unwrap() {
                    assert_eq!(v.data.len(), line as usize);
                    by_ref.push(v.to_record());
                    // Switching between the APIs mid-block keeps the order.
                    if by_ref.len() % 700 == 0 && r.next_into(&mut rec).unwrap() {
                        by_ref.push(rec.clone());
                    }
                }
                assert_eq!(by_ref, recs, "next_ref, {what}");
                assert!(r.summary().is_some());

                let mut r = TraceReader::open_with(&path, opts).unwrap();
                let first = r.next_ref().unwrap().unwrap().to_record();
                let mut each = vec![first];
                let n = r.for_each_record(|v| each.push(v.to_record())).unwrap();
                assert_eq!(n, 3499);
                assert_eq!(each, recs, "for_each_record, {what}");
                assert_eq!(r.summary().map(|s| s.records), Some(3500));
            }
        }
    }
}

#[test]
fn codecs_can_change_between_blocks() {
    let recs: Vec<Record> = synthetic::records(5, 2600, 3, 64).collect();
    let path = tmp("mixed.vtrace");
    let mut w = TraceWriter::create_with(&path, &synthetic::header(3, 64), WriterOptions { block_records: 500, zstd_level: Some(1) }).unwrap();
    for (k, r) in recs.iter().enumerate() {
        if k % 500 == 0 {
            w.set_codec(CODECS[(k / 500) % 3]).unwrap();
        }
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    let codecs: Vec<u32> = block_offsets(&std::fs::read(&path).unwrap())
        .into_iter()
        .map(|at| u32::from_le_bytes(std::fs::read(&path).unwrap()[at + 4..at + 8].try_into().unwrap()))
        .collect();
    assert_eq!(codecs, vec![0, 1, 2, 0, 1, 2]);
    for opts in READERS {
        assert_eq!(read_with(&path, opts).unwrap(), recs);
    }
}

#[test]
fn lz4_is_larger_than_zstd_and_smaller_than_raw() {
    let size = |codec: Codec| {
        let (p, _) = write_codec(&format!("size-{}.vtrace", codec.id()), 20000, 16384, codec, 64);
        std::fs::metadata(p).unwrap().len()
    };
    let (raw, zstd, lz4) = (size(Codec::Raw), size(Codec::Zstd(3)), size(Codec::Lz4));
    assert!(zstd < lz4 && lz4 < raw, "raw {raw}, zstd {zstd}, lz4 {lz4}");
}

#[test]
fn a_parallel_reader_dropped_early_stops_its_threads() {
    let (path, recs) = write_codec("early.vtrace", 5000, 100, Codec::Lz4, 64);
    for take in [0usize, 1, 150, 4999] {
        let mut r = TraceReader::open_with(&path, ReadOptions { threads: 3, read_ahead: 4 }).unwrap();
        for want in recs.iter().take(take) {
            assert_eq!(&r.next_ref().unwrap().unwrap().to_record(), want);
        }
        drop(r); // joins the reading thread: a hang here fails the test by timeout
    }
}

#[test]
fn codec_names_parse() {
    assert_eq!(Codec::parse("lz4"), Ok(Codec::Lz4));
    assert_eq!(Codec::parse("raw"), Ok(Codec::Raw));
    assert_eq!(Codec::parse("zstd"), Ok(Codec::Zstd(3)));
    assert_eq!(Codec::parse("zstd:-5"), Ok(Codec::Zstd(-5)));
    assert!(Codec::parse("gzip").unwrap_err().contains("gzip"));
    assert!(Codec::parse("zstd:x").is_err());
}

#[test]
fn recode_keeps_header_records_and_stats() {
    let (src, recs) = write_codec("recode-src.vtrace", 3000, 1000, Codec::Raw, 32);
    let dst = tmp("recode-dst.vtrace");
    let s = veil_trace::recode(&src, &dst, Codec::Lz4).unwrap();
    assert_eq!((s.records, s.blocks), (3000, 1)); // the default block size
    let r = TraceReader::open(&dst).unwrap();
    assert_eq!(r.header(), &synthetic::header(4, 32));
    assert_eq!(r.collect::<Result<Vec<_>, _>>().unwrap(), recs);
}

#[test]
fn same_records_give_identical_bytes() {
    for codec in CODECS {
        let (a, _) = write_codec(&format!("same-a-{}.vtrace", codec.id()), 5000, 16384, codec, 64);
        let (b, _) = write_codec(&format!("same-b-{}.vtrace", codec.id()), 5000, 16384, codec, 64);
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }
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
    for codec in CODECS {
        let (path, _) = write_codec(&format!("trunc-{}.vtrace", codec.id()), 1200, 500, codec, 64);
        let full = std::fs::read(&path).unwrap();
        let cut = tmp(&format!("trunc-cut-{}.vtrace", codec.id()));
        // Every prefix up to the header and across a block boundary, then a stride to the end.
        let mut lens: Vec<usize> = (0..200).collect();
        lens.extend((200..full.len()).step_by(97));
        lens.extend(full.len() - 40..full.len());
        for len in lens {
            std::fs::write(&cut, &full[..len]).unwrap();
            for opts in READERS {
                let err = match TraceReader::open_with(&cut, opts) {
                    Err(e) => e,
                    Ok(r) => r.collect::<Result<Vec<_>, _>>().expect_err(&format!("prefix of {len} bytes read as complete")),
                };
                match err {
                    TraceError::Truncated { offset, .. } => assert_eq!(offset, len as u64, "prefix {len} {codec:?} {opts:?}"),
                    other => panic!("prefix {len} {codec:?} {opts:?}: expected truncation, got {other}"),
                }
            }
            assert!(err_text(&cut).contains(&format!("at byte {len}")));
        }
        assert_eq!(read_all(&path).unwrap().len(), 1200);
    }
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
    for codec in [Codec::Zstd(3), Codec::Lz4] {
        let (path, _) = write_codec(&format!("corrupt-{}.vtrace", codec.id()), 1000, 400, codec, 64);
        let full = std::fs::read(&path).unwrap();
        let blocks = block_offsets(&full);
        assert_eq!(blocks.len(), 3);
        let end_frame = u64::from_le_bytes(full[full.len() - 16..full.len() - 8].try_into().unwrap()) as usize;
        let bad = tmp(&format!("corrupt-bad-{}.vtrace", codec.id()));
        for (k, &at) in blocks.iter().enumerate() {
            let end = if k + 1 < blocks.len() { blocks[k + 1] } else { end_frame };
            // In the compressed payload (the zstd checksum or the LZ4 block's CRC catches it),
            // its first and last bytes, and the tag.
            for pos in [at + 20 + (end - at - 20) / 2, at + 20, end - 1, at + 1] {
                let mut b = full.clone();
                b[pos] ^= 0x5a;
                std::fs::write(&bad, &b).unwrap();
                for opts in READERS {
                    let err = TraceReader::open_with(&bad, opts).unwrap().collect::<Result<Vec<_>, _>>().unwrap_err();
                    match err {
                        TraceError::Corrupt { offset, .. } => assert_eq!(offset, at as u64, "byte {pos} {codec:?} {opts:?}"),
                        other => panic!("byte {pos} {codec:?} {opts:?}: expected corruption, got {other}"),
                    }
                }
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
    for opts in READERS {
        let e = TraceReader::open_with(&path, opts).unwrap().next().unwrap().unwrap_err();
        assert_eq!(e.offset(), Some(at as u64));
        assert!(e.to_string().contains("record 17"), "{e}");
    }
}

#[test]
fn another_version_is_refused_naming_both() {
    let (path, _) = write_file("version.vtrace", 10, WriterOptions::default(), 64);
    let mut b = std::fs::read(&path).unwrap();
    for v in [0u32, 3, 7] {
        b[8..12].copy_from_slice(&v.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        let e = TraceReader::open(&path).err().unwrap();
        assert!(matches!(e, TraceError::Version { found, supported: FORMAT_VERSION } if found == v));
        let text = e.to_string();
        assert!(
            text.contains(&format!("version {v} ")) && text.contains(&format!("versions {MIN_FORMAT_VERSION} to {FORMAT_VERSION}")),
            "{text}"
        );
    }
}

#[test]
fn version_1_files_read_and_refuse_lz4_blocks() {
    assert_eq!((MIN_FORMAT_VERSION, FORMAT_VERSION), (1, 2));
    for codec in CODECS {
        let (path, recs) = write_codec(&format!("v1-{}.vtrace", codec.id()), 900, 400, codec, 64);
        let mut b = std::fs::read(&path).unwrap();
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        std::fs::write(&path, &b).unwrap();
        let r = TraceReader::open(&path).unwrap();
        assert_eq!(r.version(), 1);
        match (codec, r.collect::<Result<Vec<_>, _>>()) {
            (Codec::Lz4, Err(e)) => {
                assert_eq!(e.offset(), Some(block_offsets(&b)[0] as u64));
                assert!(e.to_string().contains("unknown block codec 2 in a version 1 trace"), "{e}");
            }
            (Codec::Lz4, Ok(_)) => panic!("a version 1 trace with an LZ4 block was read"),
            (_, got) => assert_eq!(got.unwrap(), recs),
        }
    }
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
