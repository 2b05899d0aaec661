//! Veil's trace format: what a real program does to memory below its last-level cache.
//!
//! A trace is a header (program, arguments, input hash, cache geometry, tool version, threads)
//! followed by records, one per LLC fill (load or store miss) and one per dirty writeback, each
//! carrying the line's bytes as they were in memory at that moment and, since the same thread's
//! previous record, the instructions it retired and its L1 misses that hit the LLC.
//! The byte layout is specified in `docs/trace.md` (format version [`FORMAT_VERSION`]).
//!
//! Reading is streaming with constant memory: one block of records is held at a time (with
//! `ReadOptions::threads` > 1, a bounded number of blocks are decoded ahead on other threads).
//! `next_ref` and `for_each_record` hand out borrowed views into the decoded block, with no copy
//! of the line per record.
//!
//! ```no_run
//! use veil_trace::{Record, TraceReader};
//! let mut r = TraceReader::open("gzip.vtrace")?;
//! let mut rec = Record::default();
//! while r.next_into(&mut rec)? {
//!     // rec.addr, rec.data, ...
//! }
//! # Ok::<(), veil_trace::TraceError>(())
//! ```

mod error;
mod reader;
pub mod replay;
pub mod stats;
pub mod synthetic;
mod writer;

pub use error::TraceError;
pub use reader::{BlockColumns, ReadOptions, RecordRef, TraceReader};
pub use writer::{recode, TraceWriter, WriterOptions};

use serde::{Deserialize, Serialize};

/// The format version this crate writes. Version 2 added the LZ4 codec; a version 1 file (what the
/// Valgrind tool streams) is a version 2 file without it and is read too. Any other is refused.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format version this crate reads.
pub const MIN_FORMAT_VERSION: u32 = 1;
/// First eight bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"VEILTRC\0";
/// Last eight bytes of every complete trace file.
pub const END_MAGIC: [u8; 8] = *b"VEILEND\0";
/// Tag opening a block of records.
pub const BLOCK_TAG: [u8; 4] = *b"BLK ";
/// Tag opening the end frame (the summary).
pub const END_TAG: [u8; 4] = *b"END ";
/// Largest line a v1 record carries; `Record::data` always has this many bytes.
pub const MAX_LINE: usize = 64;
/// Largest number of records in one block (bounds a reader's memory).
pub const MAX_BLOCK_RECORDS: u32 = 1 << 20;
/// Bytes of one record's fixed fields in a block's columns (thread, kind, llc_hits, addr, insts).
pub const FIXED_RECORD_BYTES: usize = 4 + 1 + 4 + 8 + 8;
/// Block payload codecs.
pub const CODEC_RAW: u32 = 0;
pub const CODEC_ZSTD: u32 = 1;
/// Since version 2: a CRC-32 (IEEE) of the LZ4 bytes, then one LZ4 block of the raw bytes.
pub const CODEC_LZ4: u32 = 2;

/// How a writer stores a block's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// Uncompressed (what the Valgrind tool streams).
    Raw,
    /// One zstd frame at this level: the smallest files; about 0.9 GB/s decoded per core (docs/trace.md).
    Zstd(i32),
    /// One LZ4 block: files about 1.7x larger than zstd's, decoded about twice as fast.
    Lz4,
}

impl Codec {
    /// The codec's number in a block header.
    pub fn id(self) -> u32 {
        match self {
            Codec::Raw => CODEC_RAW,
            Codec::Zstd(_) => CODEC_ZSTD,
            Codec::Lz4 => CODEC_LZ4,
        }
    }

    /// `raw`, `zstd` (level 3), `zstd:LEVEL` or `lz4`.
    pub fn parse(s: &str) -> Result<Codec, String> {
        match s {
            "raw" => Ok(Codec::Raw),
            "lz4" => Ok(Codec::Lz4),
            "zstd" => Ok(Codec::Zstd(3)),
            _ => match s.strip_prefix("zstd:").map(str::parse::<i32>) {
                Some(Ok(level)) => Ok(Codec::Zstd(level)),
                _ => Err(format!("codec {s:?} is not raw, lz4, zstd or zstd:LEVEL")),
            },
        }
    }
}

/// What the cache did to the line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Kind {
    /// The LLC fetched the line from memory for a load (or an instruction fetch).
    #[default]
    LoadFill = 0,
    /// The LLC fetched the line from memory for a store (write-allocate).
    StoreFill = 1,
    /// The LLC evicted a dirty line: its bytes go back to memory.
    Writeback = 2,
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        match v {
            0 => Some(Kind::LoadFill),
            1 => Some(Kind::StoreFill),
            2 => Some(Kind::Writeback),
            _ => None,
        }
    }
}

/// One LLC event of one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Thread that caused it (0 = the program's first thread, numbered in creation order).
    pub thread: u32,
    pub kind: Kind,
    /// Line-aligned byte address.
    pub addr: u64,
    /// Instructions this thread retired since its previous record.
    pub insts: u64,
    /// This thread's L1 misses that hit the LLC since its previous record.
    pub llc_hits: u32,
    /// The line as in memory when fetched (fills) or as written back (writebacks); bytes beyond
    /// the header's line size are zero.
    pub data: [u8; MAX_LINE],
}

impl Default for Record {
    fn default() -> Self {
        Record { thread: 0, kind: Kind::LoadFill, addr: 0, insts: 0, llc_hits: 0, data: [0; MAX_LINE] }
    }
}

impl Record {
    /// The line's bytes as 64-bit little-endian words (the unit frequent-value schemes track).
    pub fn words(&self, line_size: usize) -> impl Iterator<Item = u64> + '_ {
        self.data[..line_size].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()))
    }
}

/// Size and associativity of one cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheGeometry {
    /// Bytes.
    pub size: u64,
    /// Ways per set.
    pub assoc: u32,
}

/// The trace header: where the trace came from and the cache that filtered it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Workload name in Veil's suite, or "" for an arbitrary command.
    #[serde(default)]
    pub workload: String,
    /// Program path as run.
    pub program: String,
    pub args: Vec<String>,
    /// Hash of the program's input (hex; how it is computed is the producer's, see docs/trace.md).
    pub input_hash: String,
    /// Each thread's private L1 data cache.
    pub l1: CacheGeometry,
    /// The shared last-level cache.
    pub llc: CacheGeometry,
    /// Line size in bytes, a power of two from 8 to 64, the same at every level.
    pub line_size: u32,
    /// Version of the tool that produced the records.
    pub tool_version: String,
    /// Threads the workload was run with (its worker count; 0 = not known in advance).
    /// The summary's `threads` gives the threads that actually left records.
    pub threads: u32,
    /// Anything else a producer wants to keep (readers ignore keys they do not know).
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Header {
    pub fn validate(&self) -> Result<(), String> {
        let ls = self.line_size;
        if !(8..=MAX_LINE as u32).contains(&ls) || !ls.is_power_of_two() {
            return Err(format!("line_size {ls} is not a power of two from 8 to {MAX_LINE}"));
        }
        for (name, g) in [("l1", self.l1), ("llc", self.llc)] {
            if g.assoc == 0 || g.size == 0 || g.size % (g.assoc as u64 * ls as u64) != 0 {
                return Err(format!(
                    "{name}: size {} is not a whole number of sets of {} ways of {ls}-byte lines",
                    g.size, g.assoc
                ));
            }
        }
        Ok(())
    }
}

/// The end frame: written by `finish`, so its presence proves the trace is complete.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Records in the file (checked by the reader).
    pub records: u64,
    /// Blocks in the file (checked by the reader).
    pub blocks: u64,
    /// Threads that left at least one record (1 + the highest thread id).
    pub threads: u32,
    /// Producer's statistics (for the Valgrind tool: per-thread accesses, misses, instructions).
    #[serde(default)]
    pub stats: serde_json::Value,
}
