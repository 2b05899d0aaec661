use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::{
    Header, Kind, Record, Summary, TraceError, BLOCK_TAG, CODEC_LZ4, CODEC_RAW, CODEC_ZSTD, END_MAGIC,
    END_TAG, FIXED_RECORD_BYTES, FORMAT_VERSION, MAGIC, MAX_BLOCK_RECORDS, MIN_FORMAT_VERSION,
};

const MAX_HEADER: u32 = 16 << 20;

/// How a reader decodes blocks.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// Threads decoding blocks ahead of the caller; 0 or 1 decodes in the calling thread.
    pub threads: usize,
    /// Blocks read and decoded ahead at most (memory: about this many blocks, each up to twice
    /// its raw size); 0 picks twice `threads`.
    pub read_ahead: usize,
}

/// One record, borrowed from the reader's decoded block: no copy of the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub thread: u32,
    pub kind: Kind,
    pub addr: u64,
    pub insts: u64,
    pub llc_hits: u32,
    /// The line's `line_size` bytes.
    pub data: &'a [u8],
}

impl RecordRef<'_> {
    /// An owned copy (bytes beyond the line size zero).
    pub fn to_record(&self) -> Record {
        let mut r = Record {
            thread: self.thread,
            kind: self.kind,
            addr: self.addr,
            insts: self.insts,
            llc_hits: self.llc_hits,
            ..Record::default()
        };
        r.data[..self.data.len()].copy_from_slice(self.data);
        r
    }

    /// The line's bytes as 64-bit little-endian words.
    pub fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.data.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()))
    }
}

/// A block's bytes: what the file stores and the raw columns it decodes to.
#[derive(Default)]
struct Buf {
    stored: Vec<u8>,
    raw: Vec<u8>,
}

/// Where a block frame was and what it holds.
#[derive(Clone, Copy)]
struct BlockMeta {
    at: u64,
    end: u64,
    codec: u32,
    n: u32,
}

enum Frame {
    Block(BlockMeta),
    /// The end frame at `at` (its counts not yet checked against the blocks read), ending at `end`.
    End { at: u64, end: u64, summary: Summary },
}

/// The byte stream and how far into it we are.
struct Input<R> {
    src: R,
    offset: u64,
}

impl<R: Read> Input<R> {
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

    /// Reads the next frame: a block's stored bytes into `buf` (raw blocks straight into
    /// `buf.raw`), or the end frame.
    fn read_frame(&mut self, version: u32, line_size: usize, buf: &mut Buf) -> Result<Frame, TraceError> {
        let at = self.offset;
        let mut tag = [0u8; 4];
        self.fill(&mut tag, "a block header")?;
        if tag == END_TAG {
            return self.read_end(at);
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
        let want = n as usize * (FIXED_RECORD_BYTES + line_size);
        if raw_len != want {
            return Err(corrupt(format!("block of {n} records claims {raw_len} bytes, expected {want}")));
        }
        let most = match codec {
            CODEC_RAW => raw_len,
            CODEC_ZSTD => zstd::zstd_safe::compress_bound(raw_len),
            CODEC_LZ4 if version >= 2 => 4 + lz4_flex::block::get_maximum_output_size(raw_len),
            other => return Err(corrupt(format!("unknown block codec {other} in a version {version} trace"))),
        };
        if codec == CODEC_RAW && stored_len != raw_len {
            return Err(corrupt(format!("raw block stores {stored_len} bytes, expected {raw_len}")));
        }
        if stored_len > most {
            return Err(corrupt(format!("compressed block of {stored_len} bytes is too large")));
        }
        let into = if codec == CODEC_RAW { &mut buf.raw } else { &mut buf.stored };
        into.resize(stored_len, 0);
        self.fill(into, "a block's records")?;
        Ok(Frame::Block(BlockMeta { at, end: self.offset, codec, n }))
    }

    fn read_end(&mut self, at: u64) -> Result<Frame, TraceError> {
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
        let summary: Summary = serde_json::from_slice(&json)
            .map_err(|e| TraceError::Corrupt { offset: at + 8, what: format!("summary is not valid JSON: {e}") })?;
        Ok(Frame::End { at, end: self.offset, summary })
    }
}

thread_local! {
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decodes a block's stored bytes into `buf.raw` and checks its kinds.
fn decode(meta: &BlockMeta, line_size: usize, buf: &mut Buf) -> Result<(), TraceError> {
    let corrupt = |what: String| TraceError::Corrupt { offset: meta.at, what };
    let n = meta.n as usize;
    let raw_len = n * (FIXED_RECORD_BYTES + line_size);
    match meta.codec {
        CODEC_ZSTD => {
            buf.raw.clear();
            buf.raw.reserve(raw_len);
            let got = ZSTD.with(|z| {
                let mut z = z.borrow_mut();
                if z.is_none() {
                    *z = Some(zstd::bulk::Decompressor::new().map_err(|source| TraceError::Io { offset: meta.at, source })?);
                }
                z.as_mut().unwrap().decompress_to_buffer(&buf.stored[..], &mut buf.raw).map_err(|e| corrupt(format!("block does not decompress: {e}")))
            })?;
            if got != raw_len {
                return Err(corrupt(format!("block decompresses to {got} bytes, expected {raw_len}")));
            }
        }
        CODEC_LZ4 => {
            let s = &buf.stored[..];
            if s.len() < 4 || crc32fast::hash(&s[4..]) != u32::from_le_bytes(s[..4].try_into().unwrap()) {
                return Err(corrupt("block fails its CRC-32 check".into()));
            }
            // Every byte is written by the decoder when it succeeds with the full length.
            buf.raw.resize(raw_len, 0);
            let got = lz4_flex::block::decompress_into(&s[4..], &mut buf.raw)
                .map_err(|e| corrupt(format!("block does not decompress: {e}")))?;
            if got != raw_len {
                return Err(corrupt(format!("block decompresses to {got} bytes, expected {raw_len}")));
            }
        }
        _ => {}
    }
    if let Some(k) = buf.raw[4 * n..5 * n].iter().position(|&k| Kind::from_u8(k).is_none()) {
        return Err(corrupt(format!("record {k} of the block has kind {}", buf.raw[4 * n + k])));
    }
    // A record is a whole line: an address inside one is damage (or a bad writer), not data.
    let mask = line_size as u64 - 1;
    if let Some(k) = buf.raw[9 * n..17 * n]
        .chunks_exact(8)
        .position(|a| u64::from_le_bytes(a.try_into().unwrap()) & mask != 0)
    {
        let a = u64::from_le_bytes(buf.raw[9 * n + 8 * k..9 * n + 8 * k + 8].try_into().unwrap());
        return Err(corrupt(format!("record {k} of the block has address {a:#x}, not aligned to the {line_size}-byte line")));
    }
    Ok(())
}

enum Msg {
    Block(BlockMeta, Buf),
    End { at: u64, end: u64, summary: Summary },
    Failed(TraceError),
}

/// Blocks decoded ahead on a thread pool: one thread reads frames in file order and hands each to
/// the pool; the reader takes them back in order. At most `read_ahead` buffers exist, so memory
/// stays bounded whatever the trace's length.
struct Pipeline {
    results: Receiver<(u64, Msg)>,
    free: Option<SyncSender<Buf>>,
    waiting: BTreeMap<u64, Msg>,
    next: u64,
    stop: Arc<AtomicBool>,
    feeder: Option<JoinHandle<()>>,
}

impl Pipeline {
    fn start<R: Read + Send + 'static>(
        mut input: Input<R>,
        version: u32,
        line_size: usize,
        opts: ReadOptions,
    ) -> Result<Pipeline, TraceError> {
        let threads = opts.threads.max(1);
        let ahead = if opts.read_ahead == 0 { 2 * threads } else { opts.read_ahead }.max(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("veil-trace-decode-{i}"))
            .build()
            .map_err(|e| TraceError::Invalid(format!("cannot start decoder threads: {e}")))?;
        // One more slot than buffers: the reader's own buffer goes back too, and never waits.
        let (free_tx, free_rx) = sync_channel::<Buf>(ahead + 1);
        for _ in 0..ahead {
            free_tx.send(Buf::default()).expect("the channel has room");
        }
        let (res_tx, results) = sync_channel::<(u64, Msg)>(ahead + 1);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let feeder = std::thread::Builder::new()
            .name("veil-trace-read".into())
            .spawn(move || {
                let mut seq = 0u64;
                // Ends when the reader is dropped (no more free buffers come back) or at the end.
                while let Ok(mut buf) = free_rx.recv() {
                    if stopped.load(Ordering::Relaxed) {
                        return;
                    }
                    match input.read_frame(version, line_size, &mut buf) {
                        Ok(Frame::Block(meta)) => {
                            let tx = res_tx.clone();
                            pool.spawn(move || {
                                // A panic must still answer for its block, or the reader would wait forever.
                                let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    decode(&meta, line_size, &mut buf)
                                }));
                                let msg = match done {
                                    Ok(Ok(())) => Msg::Block(meta, buf),
                                    Ok(Err(e)) => Msg::Failed(e),
                                    Err(_) => Msg::Failed(TraceError::Invalid(format!(
                                        "decoding the block at byte {} panicked",
                                        meta.at
                                    ))),
                                };
                                let _ = tx.send((seq, msg));
                            });
                        }
                        Ok(Frame::End { at, end, summary }) => {
                            let _ = res_tx.send((seq, Msg::End { at, end, summary }));
                            return;
                        }
                        Err(e) => {
                            let _ = res_tx.send((seq, Msg::Failed(e)));
                            return;
                        }
                    }
                    seq += 1;
                }
            })
            .map_err(|e| TraceError::Invalid(format!("cannot start the reading thread: {e}")))?;
        Ok(Pipeline { results, free: Some(free_tx), waiting: BTreeMap::new(), next: 0, stop, feeder: Some(feeder) })
    }

    /// The next frame in file order; `done` is the buffer the reader has finished with.
    fn next(&mut self, done: Buf) -> Msg {
        if let Some(free) = &self.free {
            let _ = free.send(done);
        }
        loop {
            if let Some(m) = self.waiting.remove(&self.next) {
                self.next += 1;
                return m;
            }
            match self.results.recv() {
                Ok((seq, m)) => {
                    self.waiting.insert(seq, m);
                }
                Err(_) => {
                    return Msg::Failed(TraceError::Invalid("the trace's reading thread stopped unexpectedly".into()))
                }
            }
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // The feeder stops at its next frame.
        self.stop.store(true, Ordering::Relaxed);
        self.free = None;
        self.waiting.clear();
        while self.results.try_recv().is_ok() {}
        if let Some(h) = self.feeder.take() {
            // It may be waiting to hand over a frame: keep taking until it has gone.
            while !h.is_finished() {
                if self.results.recv_timeout(std::time::Duration::from_millis(1)).is_err() && h.is_finished() {
                    break;
                }
            }
            let _ = h.join();
        }
    }
}

/// Streams records out of a trace, one block in memory at a time (a bounded few with
/// `ReadOptions::threads` > 1).
pub struct TraceReader<R: Read = BufReader<File>> {
    /// `None` once a pipeline owns the stream.
    input: Option<Input<R>>,
    pipeline: Option<Pipeline>,
    version: u32,
    header: Header,
    line_size: usize,
    buf: Buf,
    n: usize,
    i: usize,
    /// End of the last frame handed out.
    offset: u64,
    records: u64,
    blocks: u64,
    summary: Option<Summary>,
    failed: bool,
}

impl TraceReader<BufReader<File>> {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TraceError> {
        Self::open_with(path, ReadOptions::default())
    }

    /// As `open`, decoding blocks on `opts.threads` threads ahead of the caller.
    pub fn open_with(path: impl AsRef<Path>, opts: ReadOptions) -> Result<Self, TraceError> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|source| TraceError::Open { path: path.display().to_string(), source })?;
        // Small: block payloads are read past it, straight into their buffers (one copy, not two).
        let mut r = TraceReader::new(BufReader::with_capacity(64 << 10, f))?;
        if opts.threads > 1 {
            let input = r.input.take().expect("a new reader owns its input");
            r.pipeline = Some(Pipeline::start(input, r.version, r.line_size, opts)?);
        }
        Ok(r)
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
        let mut input = Input { src, offset: 0 };
        let mut pre = [0u8; 16];
        input.fill(&mut pre, "the preamble")?;
        if pre[..8] != MAGIC {
            return Err(TraceError::Corrupt { offset: 0, what: "not a Veil trace (bad magic)".into() });
        }
        let version = u32::from_le_bytes(pre[8..12].try_into().unwrap());
        if !(MIN_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(TraceError::Version { found: version, supported: FORMAT_VERSION });
        }
        let hlen = u32::from_le_bytes(pre[12..16].try_into().unwrap());
        if hlen > MAX_HEADER {
            return Err(TraceError::Corrupt { offset: 12, what: format!("header length {hlen} is implausible") });
        }
        let mut json = vec![0u8; hlen as usize];
        input.fill(&mut json, "the header")?;
        let header: Header = serde_json::from_slice(&json)
            .map_err(|e| TraceError::Corrupt { offset: 16, what: format!("header is not a valid trace header: {e}") })?;
        header.validate().map_err(|what| TraceError::Corrupt { offset: 16, what: format!("header: {what}") })?;
        Ok(TraceReader {
            offset: input.offset,
            input: Some(input),
            pipeline: None,
            version,
            line_size: header.line_size as usize,
            header,
            buf: Buf::default(),
            n: 0,
            i: 0,
            records: 0,
            blocks: 0,
            summary: None,
            failed: false,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The end frame's summary, once the last record has been read.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    /// Bytes of the file up to the end of the last block handed out (or of the header).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Makes the next block current; false at the end frame (or after an error).
    fn load_block(&mut self) -> Result<bool, TraceError> {
        if self.summary.is_some() || self.failed {
            return Ok(false);
        }
        let r = self.load_block_inner();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn load_block_inner(&mut self) -> Result<bool, TraceError> {
        let msg = match (&mut self.pipeline, &mut self.input) {
            (Some(p), _) => p.next(std::mem::take(&mut self.buf)),
            (None, Some(input)) => match input.read_frame(self.version, self.line_size, &mut self.buf)? {
                Frame::Block(meta) => {
                    decode(&meta, self.line_size, &mut self.buf)?;
                    Msg::Block(meta, std::mem::take(&mut self.buf))
                }
                Frame::End { at, end, summary } => Msg::End { at, end, summary },
            },
            (None, None) => unreachable!("a reader always has its input or its pipeline"),
        };
        match msg {
            Msg::Block(meta, buf) => {
                self.buf = buf;
                self.offset = meta.end;
                self.n = meta.n as usize;
                self.i = 0;
                self.blocks += 1;
                self.records += meta.n as u64;
                Ok(true)
            }
            Msg::End { at, end, summary } => {
                if summary.records != self.records || summary.blocks != self.blocks {
                    return Err(TraceError::Corrupt {
                        offset: at,
                        what: format!(
                            "summary counts {} records in {} blocks, the file holds {} in {}",
                            summary.records, summary.blocks, self.records, self.blocks
                        ),
                    });
                }
                self.offset = end;
                self.n = 0;
                self.i = 0;
                self.summary = Some(summary);
                self.pipeline = None;
                Ok(false)
            }
            Msg::Failed(e) => Err(e),
        }
    }

    /// The current block's record `i` (checked kinds: see `decode`).
    #[inline(always)]
    fn record_at(&self, i: usize) -> RecordRef<'_> {
        let (n, raw, ls) = (self.n, &self.buf.raw[..], self.line_size);
        let u32_at = |off: usize| u32::from_le_bytes(raw[off..off + 4].try_into().unwrap());
        let u64_at = |off: usize| u64::from_le_bytes(raw[off..off + 8].try_into().unwrap());
        let d = FIXED_RECORD_BYTES * n + ls * i;
        RecordRef {
            thread: u32_at(4 * i),
            kind: Kind::from_u8(raw[4 * n + i]).unwrap_or_default(),
            llc_hits: u32_at(5 * n + 4 * i),
            addr: u64_at(9 * n + 8 * i),
            insts: u64_at(17 * n + 8 * i),
            data: &raw[d..d + ls],
        }
    }

    /// Fills `rec` with the next record; false at the end of the trace.
    #[inline]
    pub fn next_into(&mut self, rec: &mut Record) -> Result<bool, TraceError> {
        if self.i == self.n && !self.load_block()? {
            return Ok(false);
        }
        let r = self.record_at(self.i);
        rec.thread = r.thread;
        rec.kind = r.kind;
        rec.llc_hits = r.llc_hits;
        rec.addr = r.addr;
        rec.insts = r.insts;
        let ls = r.data.len();
        rec.data[..ls].copy_from_slice(r.data);
        if ls < rec.data.len() {
            rec.data[ls..].fill(0);
        }
        self.i += 1;
        Ok(true)
    }

    /// The next record as a view into the decoded block (valid until the next call); `None` at
    /// the end of the trace. A lending iterator: `while let Some(r) = reader.next_ref()? { .. }`.
    #[inline]
    pub fn next_ref(&mut self) -> Result<Option<RecordRef<'_>>, TraceError> {
        if self.i == self.n && !self.load_block()? {
            return Ok(None);
        }
        self.i += 1;
        Ok(Some(self.record_at(self.i - 1)))
    }

    /// Calls `f` on every remaining record, in order, with views into the decoded blocks (the
    /// fastest way through a trace); returns how many.
    pub fn for_each_record(&mut self, mut f: impl FnMut(RecordRef<'_>)) -> Result<u64, TraceError> {
        let mut count = 0u64;
        loop {
            let (n, ls, from) = (self.n, self.line_size, self.i);
            let raw = &self.buf.raw[..n * (FIXED_RECORD_BYTES + ls)];
            let (thread, rest) = raw.split_at(4 * n);
            let (kind, rest) = rest.split_at(n);
            let (hits, rest) = rest.split_at(4 * n);
            let (addr, rest) = rest.split_at(8 * n);
            let (insts, data) = rest.split_at(8 * n);
            let cols = thread
                .chunks_exact(4)
                .zip(kind)
                .zip(hits.chunks_exact(4))
                .zip(addr.chunks_exact(8))
                .zip(insts.chunks_exact(8))
                .zip(data.chunks_exact(ls))
                .skip(from);
            for (((((t, &k), h), a), i), d) in cols {
                f(RecordRef {
                    thread: u32::from_le_bytes(t.try_into().unwrap()),
                    kind: Kind::from_u8(k).unwrap_or_default(),
                    llc_hits: u32::from_le_bytes(h.try_into().unwrap()),
                    addr: u64::from_le_bytes(a.try_into().unwrap()),
                    insts: u64::from_le_bytes(i.try_into().unwrap()),
                    data: d,
                });
            }
            count += (n - from) as u64;
            self.i = n;
            if !self.load_block()? {
                return Ok(count);
            }
        }
    }

    /// The current block's columns, for bulk consumers (the Python bindings): thread, kind,
    /// llc_hits, addr, insts, data. Call after `next_block` returned true.
    pub fn block_columns(&self) -> BlockColumns<'_> {
        let (n, raw) = (self.n, &self.buf.raw[..]);
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
        self.i = self.n;
        let more = self.load_block()?;
        if more {
            self.i = self.n;
        }
        Ok(more)
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
