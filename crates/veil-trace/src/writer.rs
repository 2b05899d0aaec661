use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{
    Codec, Header, Record, Summary, TraceError, BLOCK_TAG, END_MAGIC, END_TAG, FIXED_RECORD_BYTES,
    FORMAT_VERSION, MAGIC, MAX_BLOCK_RECORDS,
};

/// How a writer lays out blocks. The defaults: 16,384 records a block, zstd level 3 (Veil's cached
/// traces are written with LZ4 through `set_codec`).
#[derive(Clone, Copy, Debug)]
pub struct WriterOptions {
    /// Records per block (the reader holds one block in memory).
    pub block_records: u32,
    /// zstd level, or `None` for uncompressed blocks (what the Valgrind tool streams). Other
    /// codecs: `TraceWriter::set_codec`.
    pub zstd_level: Option<i32>,
}

impl WriterOptions {
    /// The codec these options ask for.
    pub fn codec(&self) -> Codec {
        self.zstd_level.map_or(Codec::Raw, Codec::Zstd)
    }
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions { block_records: 16384, zstd_level: Some(3) }
    }
}

/// Writes a trace: `create`, `write` each record, `finish`. A writer dropped without `finish`
/// leaves a file that readers report as truncated.
pub struct TraceWriter<W: Write = BufWriter<File>> {
    out: W,
    offset: u64,
    line_size: usize,
    opts: WriterOptions,
    thread: Vec<u32>,
    kind: Vec<u8>,
    hits: Vec<u32>,
    addr: Vec<u64>,
    insts: Vec<u64>,
    data: Vec<u8>,
    raw: Vec<u8>,
    stored: Vec<u8>,
    codec: Codec,
    comp: Option<zstd::bulk::Compressor<'static>>,
    records: u64,
    blocks: u64,
    threads: u32,
}

impl TraceWriter<BufWriter<File>> {
    pub fn create(path: impl AsRef<Path>, header: &Header) -> Result<Self, TraceError> {
        Self::create_with(path, header, WriterOptions::default())
    }

    pub fn create_with(path: impl AsRef<Path>, header: &Header, opts: WriterOptions) -> Result<Self, TraceError> {
        let path = path.as_ref();
        let f = File::create(path)
            .map_err(|source| TraceError::Open { path: path.display().to_string(), source })?;
        TraceWriter::new(BufWriter::with_capacity(1 << 20, f), header, opts)
    }
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W, header: &Header, opts: WriterOptions) -> Result<Self, TraceError> {
        header.validate().map_err(TraceError::Invalid)?;
        if opts.block_records == 0 || opts.block_records > MAX_BLOCK_RECORDS {
            return Err(TraceError::Invalid(format!(
                "block_records {} is not in 1..={MAX_BLOCK_RECORDS}",
                opts.block_records
            )));
        }
        let json = serde_json::to_vec(header).map_err(|e| TraceError::Invalid(e.to_string()))?;
        let n = opts.block_records as usize;
        let line_size = header.line_size as usize;
        let mut w = TraceWriter {
            out,
            offset: 0,
            line_size,
            opts,
            thread: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            hits: Vec::with_capacity(n),
            addr: Vec::with_capacity(n),
            insts: Vec::with_capacity(n),
            data: Vec::with_capacity(n * line_size),
            raw: Vec::new(),
            stored: Vec::new(),
            codec: Codec::Raw,
            comp: None,
            records: 0,
            blocks: 0,
            threads: 0,
        };
        w.set_codec(opts.codec())?;
        w.put(&MAGIC)?;
        w.put(&FORMAT_VERSION.to_le_bytes())?;
        w.put(&(json.len() as u32).to_le_bytes())?;
        w.put(&json)?;
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> Result<(), TraceError> {
        let offset = self.offset;
        self.out.write_all(b).map_err(|source| TraceError::Io { offset, source })?;
        self.offset += b.len() as u64;
        Ok(())
    }

    pub fn write(&mut self, r: &Record) -> Result<(), TraceError> {
        if r.addr % self.line_size as u64 != 0 {
            return Err(TraceError::Invalid(format!(
                "record {}: address {:#x} is not aligned to the {}-byte line",
                self.records, r.addr, self.line_size
            )));
        }
        self.thread.push(r.thread);
        self.kind.push(r.kind as u8);
        self.hits.push(r.llc_hits);
        self.addr.push(r.addr);
        self.insts.push(r.insts);
        self.data.extend_from_slice(&r.data[..self.line_size]);
        self.threads = self.threads.max(r.thread + 1);
        self.records += 1;
        if self.thread.len() == self.opts.block_records as usize {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Stores the blocks written from now on, the one being filled included, with `codec` (each
    /// block names its own codec).
    pub fn set_codec(&mut self, codec: Codec) -> Result<(), TraceError> {
        self.comp = match codec {
            Codec::Zstd(level) => {
                let bad = |e: std::io::Error| TraceError::Invalid(format!("zstd level {level}: {e}"));
                let mut c = zstd::bulk::Compressor::new(level).map_err(bad)?;
                // The frame checksum is what turns a flipped byte into a reported corruption.
                c.include_checksum(true).map_err(bad)?;
                c.include_contentsize(true).map_err(bad)?;
                Some(c)
            }
            _ => None,
        };
        self.codec = codec;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    fn flush_block(&mut self) -> Result<(), TraceError> {
        let n = self.thread.len();
        if n == 0 {
            return Ok(());
        }
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        raw.reserve(n * (FIXED_RECORD_BYTES + self.line_size));
        // Columns, not rows: each column compresses far better on its own.
        raw.extend(self.thread.iter().flat_map(|v| v.to_le_bytes()));
        raw.extend_from_slice(&self.kind);
        raw.extend(self.hits.iter().flat_map(|v| v.to_le_bytes()));
        raw.extend(self.addr.iter().flat_map(|v| v.to_le_bytes()));
        raw.extend(self.insts.iter().flat_map(|v| v.to_le_bytes()));
        raw.extend_from_slice(&self.data);
        self.stored.clear();
        match (self.codec, self.comp.as_mut()) {
            (Codec::Zstd(_), Some(c)) => {
                self.stored.reserve(zstd::zstd_safe::compress_bound(raw.len()));
                c.compress_to_buffer(&raw[..], &mut self.stored)
                    .map_err(|source| TraceError::Io { offset: self.offset, source })?;
            }
            (Codec::Lz4, _) => {
                self.stored.resize(4 + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
                let len = lz4_flex::block::compress_into(&raw, &mut self.stored[4..])
                    .map_err(|e| TraceError::Invalid(format!("LZ4: {e}")))?;
                self.stored.truncate(4 + len);
                let crc = crc32fast::hash(&self.stored[4..]);
                self.stored[..4].copy_from_slice(&crc.to_le_bytes());
            }
            _ => {}
        }
        let codec = self.codec.id();
        let payload_len = if self.codec == Codec::Raw { raw.len() } else { self.stored.len() };
        let mut head = [0u8; 20];
        head[0..4].copy_from_slice(&BLOCK_TAG);
        head[4..8].copy_from_slice(&codec.to_le_bytes());
        head[8..12].copy_from_slice(&(n as u32).to_le_bytes());
        head[12..16].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        head[16..20].copy_from_slice(&(payload_len as u32).to_le_bytes());
        self.put(&head)?;
        if self.codec != Codec::Raw {
            let stored = std::mem::take(&mut self.stored);
            let r = self.put(&stored);
            self.stored = stored;
            r?;
        } else {
            self.put(&raw)?;
        }
        self.raw = raw;
        self.blocks += 1;
        self.thread.clear();
        self.kind.clear();
        self.hits.clear();
        self.addr.clear();
        self.insts.clear();
        self.data.clear();
        Ok(())
    }

    /// Writes the last block and the end frame; returns the summary written.
    pub fn finish(self) -> Result<Summary, TraceError> {
        self.finish_with(serde_json::Value::Null)
    }

    /// As `finish`, keeping the producer's statistics in the summary.
    pub fn finish_with(mut self, stats: serde_json::Value) -> Result<Summary, TraceError> {
        self.flush_block()?;
        let summary = Summary { records: self.records, blocks: self.blocks, threads: self.threads, stats };
        let json = serde_json::to_vec(&summary).map_err(|e| TraceError::Invalid(e.to_string()))?;
        let end_at = self.offset;
        self.put(&END_TAG)?;
        self.put(&(json.len() as u32).to_le_bytes())?;
        self.put(&json)?;
        self.put(&end_at.to_le_bytes())?;
        self.put(&END_MAGIC)?;
        let offset = self.offset;
        self.out.flush().map_err(|source| TraceError::Io { offset, source })?;
        Ok(summary)
    }
}

/// Rewrites the trace at `src` into `dst` with `codec`: the same header, records and producer
/// statistics, in the current format version. Returns the new file's summary.
pub fn recode(src: impl AsRef<Path>, dst: impl AsRef<Path>, codec: Codec) -> Result<Summary, TraceError> {
    let mut r = crate::TraceReader::open(src)?;
    let mut w = TraceWriter::create(dst, r.header())?;
    w.set_codec(codec)?;
    let mut rec = Record::default();
    while r.next_into(&mut rec)? {
        w.write(&rec)?;
    }
    let stats = r.summary().map(|s| s.stats.clone()).unwrap_or_default();
    w.finish_with(stats)
}
