use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;

use crate::{
    Header, Kind, Record, Summary, TraceError, BLOCK_TAG, CODEC_RAW, CODEC_ZSTD, END_MAGIC, END_TAG,
    FIXED_RECORD_BYTES, FORMAT_VERSION, MAGIC, MAX_BLOCK_RECORDS,
};

const MAX_HEADER: u32 = 16 << 20;

/// Streams records out of a trace, one block in memory at a time.
pub struct TraceReader<R: Read = BufReader<File>> {
    src: R,
    offset: u64,
    header: Header,
    line_size: usize,
    stored: Vec<u8>,
    raw: Vec<u8>,
    dec: zstd::bulk::Decompressor<'static>,
    n: usize,
    i: usize,
    block_at: u64,
    records: u64,
    blocks: u64,
    summary: Option<Summary>,
    failed: bool,
}

impl TraceReader<BufReader<File>> {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|source| TraceError::Open { path: path.display().to_string(), source })?;
        TraceReader::new(BufReader::with_capacity(1 << 20, f))
    }

    /// The summary of a complete file, read from its end without reading the records.
    pub fn read_summary(path: impl AsRef<Path>) -> Result<Summary, TraceError> {
        let path = path.as_ref();
        let mut f =
            File::open(path).map_err(|source| TraceError::Open { path: path.display().to_string(), source })?;
        let io = |offset: u64| move |source| TraceError::Io { offset, source };
        let len = f.seek(SeekFrom::End(0)).map_err(io(0))?;
        if len < 16 {
            return Err(TraceError::Truncated { offset: len, what: "the end frame" });
        }
        let mut tail = [0u8; 16];
        f.seek(SeekFrom::Start(len - 16)).map_err(io(len - 16))?;
        f.read_exact(&mut tail).map_err(io(len - 16))?;
        if tail[8..] != END_MAGIC {
            return Err(TraceError::Truncated { offset: len, what: "a trace without its end frame" });
        }
        let end_at = u64::from_le_bytes(tail[..8].try_into().unwrap());
        if end_at + 8 > len - 16 {
            return Err(TraceError::Corrupt { offset: len - 16, what: format!("end frame offset {end_at} out of range") });
        }
        f.seek(SeekFrom::Start(end_at)).map_err(io(end_at))?;
        let mut head = [0u8; 8];
        f.read_exact(&mut head).map_err(io(end_at))?;
        if head[..4] != END_TAG {
            return Err(TraceError::Corrupt { offset: end_at, what: "no end frame where the trailer points".into() });
        }
        let n = u32::from_le_bytes(head[4..].try_into().unwrap()) as u64;
        if end_at + 8 + n != len - 16 {
            return Err(TraceError::Corrupt { offset: end_at + 4, what: format!("summary length {n} does not fit the file") });
        }
        let mut json = vec![0u8; n as usize];
        f.read_exact(&mut json).map_err(io(end_at + 8))?;
        serde_json::from_slice(&json)
            .map_err(|e| TraceError::Corrupt { offset: end_at + 8, what: format!("summary is not valid JSON: {e}") })
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the preamble and header from any byte stream (a file, a pipe).
    pub fn new(src: R) -> Result<Self, TraceError> {
        let mut r = TraceReader {
            src,
            offset: 0,
            header: Header {
                workload: String::new(),
                program: String::new(),
                args: vec![],
                input_hash: String::new(),
                l1: crate::CacheGeometry { size: 0, assoc: 0 },
                llc: crate::CacheGeometry { size: 0, assoc: 0 },
                line_size: 0,
                tool_version: String::new(),
                threads: 0,
                extra: Default::default(),
            },
            line_size: 0,
            stored: Vec::new(),
            raw: Vec::new(),
            dec: zstd::bulk::Decompressor::new().map_err(|source| TraceError::Io { offset: 0, source })?,
            n: 0,
            i: 0,
            block_at: 0,
            records: 0,
            blocks: 0,
            summary: None,
            failed: false,
        };
        let mut pre = [0u8; 16];
        r.fill(&mut pre, "the preamble")?;
        if pre[..8] != MAGIC {
            return Err(TraceError::Corrupt { offset: 0, what: "not a Veil trace (bad magic)".into() });
        }
        let version = u32::from_le_bytes(pre[8..12].try_into().unwrap());
        if version != FORMAT_VERSION {
            return Err(TraceError::Version { found: version, supported: FORMAT_VERSION });
        }
        let hlen = u32::from_le_bytes(pre[12..16].try_into().unwrap());
        if hlen > MAX_HEADER {
            return Err(TraceError::Corrupt { offset: 12, what: format!("header length {hlen} is implausible") });
        }
        let mut json = vec![0u8; hlen as usize];
        r.fill(&mut json, "the header")?;
        r.header = serde_json::from_slice(&json)
            .map_err(|e| TraceError::Corrupt { offset: 16, what: format!("header is not a valid trace header: {e}") })?;
        r.header.validate().map_err(|what| TraceError::Corrupt { offset: 16, what: format!("header: {what}") })?;
        r.line_size = r.header.line_size as usize;
        Ok(r)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The end frame's summary, once the last record has been read.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn fill(&mut self, buf: &mut [u8], what: &'static str) -> Result<(), TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.src.read(&mut buf[got..]) {
                Ok(0) => return Err(TraceError::Truncated { offset: self.offset + got as u64, what }),
                Ok(k) => got += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => return Err(TraceError::Io { offset: self.offset + got as u64, source }),
            }
        }
        self.offset += got as u64;
        Ok(())
    }

    /// Reads the next frame; false at the end frame.
    fn load_block(&mut self) -> Result<bool, TraceError> {
        let at = self.offset;
        let mut tag = [0u8; 4];
        self.fill(&mut tag, "a block header")?;
        if tag == END_TAG {
            self.read_end(at)?;
            return Ok(false);
        }
        if tag != BLOCK_TAG {
            return Err(TraceError::Corrupt { offset: at, what: format!("expected a block or end tag, found {tag:02x?}") });
        }
        let mut head = [0u8; 16];
        self.fill(&mut head, "a block header")?;
        let word = |k: usize| u32::from_le_bytes(head[4 * k..4 * k + 4].try_into().unwrap());
        let (codec, n, raw_len, stored_len) = (word(0), word(1), word(2) as usize, word(3) as usize);
        let corrupt = |what: String| TraceError::Corrupt { offset: at, what };
        if n == 0 || n > MAX_BLOCK_RECORDS {
            return Err(corrupt(format!("block of {n} records")));
        }
        let want = n as usize * (FIXED_RECORD_BYTES + self.line_size);
        if raw_len != want {
            return Err(corrupt(format!("block of {n} records claims {raw_len} bytes, expected {want}")));
        }
        match codec {
            CODEC_RAW => {
                if stored_len != raw_len {
                    return Err(corrupt(format!("raw block stores {stored_len} bytes, expected {raw_len}")));
                }
                let mut raw = std::mem::take(&mut self.raw);
                raw.resize(raw_len, 0);
                let r = self.fill(&mut raw, "a block's records");
                self.raw = raw;
                r?;
            }
            CODEC_ZSTD => {
                if stored_len > zstd::zstd_safe::compress_bound(raw_len) {
                    return Err(corrupt(format!("compressed block of {stored_len} bytes is too large")));
                }
                let mut stored = std::mem::take(&mut self.stored);
                stored.resize(stored_len, 0);
                let r = self.fill(&mut stored, "a block's records");
                self.stored = stored;
                r?;
                self.raw.clear();
                self.raw.reserve(raw_len);
                let got = self
                    .dec
                    .decompress_to_buffer(&self.stored[..], &mut self.raw)
                    .map_err(|e| corrupt(format!("block does not decompress: {e}")))?;
                if got != raw_len {
                    return Err(corrupt(format!("block decompresses to {got} bytes, expected {raw_len}")));
                }
            }
            other => return Err(corrupt(format!("unknown block codec {other}"))),
        }
        if let Some(k) = self.raw[4 * n as usize..5 * n as usize].iter().position(|&k| Kind::from_u8(k).is_none()) {
            return Err(corrupt(format!("record {k} of the block has kind {}", self.raw[4 * n as usize + k])));
        }
        self.block_at = at;
        self.n = n as usize;
        self.i = 0;
        self.blocks += 1;
        Ok(true)
    }

    fn read_end(&mut self, at: u64) -> Result<(), TraceError> {
        let mut len = [0u8; 4];
        self.fill(&mut len, "the end frame")?;
        let n = u32::from_le_bytes(len);
        if n > MAX_HEADER {
            return Err(TraceError::Corrupt { offset: at + 4, what: format!("summary length {n} is implausible") });
        }
        let mut json = vec![0u8; n as usize];
        self.fill(&mut json, "the end frame")?;
        let mut tail = [0u8; 16];
        self.fill(&mut tail, "the end frame")?;
        if tail[8..] != END_MAGIC || u64::from_le_bytes(tail[..8].try_into().unwrap()) != at {
            return Err(TraceError::Corrupt { offset: self.offset - 16, what: "bad trailer".into() });
        }
        let s: Summary = serde_json::from_slice(&json)
            .map_err(|e| TraceError::Corrupt { offset: at + 8, what: format!("summary is not valid JSON: {e}") })?;
        if s.records != self.records || s.blocks != self.blocks {
            return Err(TraceError::Corrupt {
                offset: at,
                what: format!(
                    "summary counts {} records in {} blocks, the file holds {} in {}",
                    s.records, s.blocks, self.records, self.blocks
                ),
            });
        }
        self.summary = Some(s);
        Ok(())
    }

    /// Fills `rec` with the next record; false at the end of the trace.
    #[inline]
    pub fn next_into(&mut self, rec: &mut Record) -> Result<bool, TraceError> {
        if self.i == self.n {
            if self.summary.is_some() || self.failed {
                return Ok(false);
            }
            match self.load_block() {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    self.failed = true;
                    return Err(e);
                }
            }
        }
        let (i, n, raw) = (self.i, self.n, &self.raw[..]);
        let u32_at = |off: usize| u32::from_le_bytes(raw[off..off + 4].try_into().unwrap());
        let u64_at = |off: usize| u64::from_le_bytes(raw[off..off + 8].try_into().unwrap());
        rec.thread = u32_at(4 * i);
        // Checked for the whole block when it was loaded.
        rec.kind = Kind::from_u8(raw[4 * n + i]).unwrap_or_default();
        rec.llc_hits = u32_at(5 * n + 4 * i);
        rec.addr = u64_at(9 * n + 8 * i);
        rec.insts = u64_at(17 * n + 8 * i);
        let ls = self.line_size;
        let d = FIXED_RECORD_BYTES * n + ls * i;
        rec.data[..ls].copy_from_slice(&raw[d..d + ls]);
        if ls < rec.data.len() {
            rec.data[ls..].fill(0);
        }
        self.i += 1;
        self.records += 1;
        Ok(true)
    }

    /// The current block's columns, for bulk consumers (the Python bindings): thread, kind,
    /// llc_hits, addr, insts, data. Call after `next_block` returned true.
    pub fn block_columns(&self) -> BlockColumns<'_> {
        let (n, raw) = (self.n, &self.raw[..]);
        BlockColumns {
            n,
            line_size: self.line_size,
            thread: &raw[..4 * n],
            kind: &raw[4 * n..5 * n],
            llc_hits: &raw[5 * n..9 * n],
            addr: &raw[9 * n..17 * n],
            insts: &raw[17 * n..25 * n],
            data: &raw[25 * n..(25 + self.line_size) * n],
        }
    }

    /// Skips the rest of the current block and loads the next whole block; false at the end.
    pub fn next_block(&mut self) -> Result<bool, TraceError> {
        if self.summary.is_some() || self.failed {
            return Ok(false);
        }
        self.records += (self.n - self.i) as u64;
        self.i = self.n;
        match self.load_block() {
            Ok(true) => {
                self.records += self.n as u64;
                self.i = self.n;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

/// Little-endian column bytes of one block (see docs/trace.md for the layout).
pub struct BlockColumns<'a> {
    pub n: usize,
    pub line_size: usize,
    pub thread: &'a [u8],
    pub kind: &'a [u8],
    pub llc_hits: &'a [u8],
    pub addr: &'a [u8],
    pub insts: &'a [u8],
    pub data: &'a [u8],
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut rec = Record::default();
        match self.next_into(&mut rec) {
            Ok(true) => Some(Ok(rec)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
