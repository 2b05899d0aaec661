//! The shared LLC of a multi-threaded program, replayed offline in a fixed interleaving.
//!
//! Valgrind runs one thread at a time and which thread it runs after a futex wake-up depends on
//! the host's timing, so the order in which threads reach a shared cache inside the tool varies
//! from run to run. Each thread's own L1 misses do not. With `--stream=l1` the Valgrind tool
//! writes, per thread and in the order the host ran them, each L1 miss (load, store or
//! instruction fetch) and each dirty L1 victim; this module replays them through the shared LLC
//! in an order fixed by instruction counts and writes a standard trace (LLC fills and
//! writebacks), so the same program and input give the same bytes.
//!
//! The interleaving: every thread has a clock, its creator's clock when it was created plus the
//! instructions it has retired (all cores equal, one instruction per tick). Time is cut into
//! quanta of `quantum` instructions; quantum after quantum, the threads' events in that quantum
//! are replayed thread by thread in thread order. Waiting at a barrier or a lock takes no time
//! (those calls are left out of the streams; docs/trace.md).
//!
//! Line contents: the bytes a thread's fetch saw inside Valgrind depend on how far other threads
//! had got (lines written by several threads at once). The replay keeps its own copy of memory
//! instead: each line as the stream first showed it (before any traced store reached it), plus
//! the bytes each thread stored, applied when its L1 writes the line back, in replay order. A
//! fill carries that copy, as does a writeback. So the data are those of the modelled write-back
//! hierarchy without coherence (a line written by one thread reaches others when that thread's
//! L1 evicts it), and they repeat run to run.
//!
//! The L1 stream's columns: `kind` 0/1 = an L1 load/store miss, 2 = a dirty L1 victim; for a
//! miss `llc_hits` is 1 for an instruction fetch, else 0; for a victim it is the mask of the
//! granules (line size / 32 bytes each) the thread stored to while the line was in its L1.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::{self, File};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::{Codec, Header, Kind, Record, Summary, TraceError, TraceReader, TraceWriter, WriterOptions, MAX_LINE};

/// Instructions per round-robin quantum when none is given.
pub const DEFAULT_QUANTUM: u64 = 1000;
/// Names the replay algorithm in headers and cache keys; bump when its output changes.
pub const REPLAY_VERSION: &str = "llc-replay 1";

/// Granule mask of the bytes `[offset, offset + len)` of a line (32 granules per line).
pub fn granule_mask(line_size: usize, offset: usize, len: usize) -> u32 {
    let g = (line_size / 32).max(1);
    let (first, last) = (offset / g, (offset + len - 1) / g);
    let mut m = 0u32;
    for i in first..=last.min(31) {
        m |= 1 << i;
    }
    m
}

struct Llc {
    tags: Vec<u64>, // sets x assoc, MRU first: (line << 1) | dirty, or EMPTY
    sets_mask: u64,
    assoc: usize,
}

const EMPTY: u64 = u64::MAX;

impl Llc {
    fn new(h: &Header) -> Llc {
        let assoc = h.llc.assoc as usize;
        let sets = h.llc.size / (assoc as u64 * h.line_size as u64);
        Llc { tags: vec![EMPTY; sets as usize * assoc], sets_mask: sets - 1, assoc }
    }

    /// A demand reference: true on a hit; on a miss the line is inserted and the dirty victim
    /// (if any) returned through `victim`. As the tool's LLC: LRU order changes only here.
    fn reference(&mut self, line: u64, victim: &mut Option<u64>) -> bool {
        let base = (line & self.sets_mask) as usize * self.assoc;
        let set = &mut self.tags[base..base + self.assoc];
        let key = line << 1;
        if let Some(i) = set.iter().position(|&t| t != EMPTY && t | 1 == key | 1) {
            set[..=i].rotate_right(1);
            return true;
        }
        let ev = set[self.assoc - 1];
        set.rotate_right(1);
        set[0] = key;
        *victim = (ev != EMPTY && ev & 1 == 1).then_some(ev >> 1);
        false
    }

    /// Marks a present line dirty without touching the LRU order; false if absent.
    fn mark_dirty(&mut self, line: u64) -> bool {
        let base = (line & self.sets_mask) as usize * self.assoc;
        let set = &mut self.tags[base..base + self.assoc];
        match set.iter_mut().find(|t| **t != EMPTY && **t | 1 == (line << 1) | 1) {
            Some(t) => {
                *t |= 1;
                true
            }
            None => false,
        }
    }
}

#[derive(Default, Clone)]
struct ThreadState {
    start: u64,
    clock: u64,
    pending_insts: u64,
    pending_hits: u32,
    llc_hits: u64,
    load_fills: u64,
    store_fills: u64,
    ifetch_fills: u64,
    writebacks: u64,
    to_memory: u64,
}

/// Removes the spool folder however the replay ends.
struct Spool(PathBuf);

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn spool_path(dir: &Path, t: u32) -> PathBuf {
    dir.join(format!("thread-{t}.vtrace"))
}

/// Replays the L1 stream read from `input` (a trace whose header says `"stream": "l1"`) through
/// the shared LLC and writes the standard trace to `out` with `header` (its `extra` gains
/// `stream: "llc"` and `replay: {version, quantum, ...}`). Per-thread streams are spooled
/// (zstd) in `spool_dir`, which is created and removed; the output's blocks use `codec`.
/// Returns the summary written.
pub fn replay<R: Read>(
    mut input: TraceReader<R>,
    out: impl AsRef<Path>,
    mut header: Header,
    quantum: u64,
    spool_dir: impl AsRef<Path>,
    codec: Codec,
) -> Result<Summary, TraceError> {
    if quantum == 0 {
        return Err(TraceError::Invalid("replay quantum must be at least one instruction".into()));
    }
    header.validate().map_err(TraceError::Invalid)?;
    let line_size = header.line_size as usize;
    let dir = spool_dir.as_ref().to_path_buf();
    fs::create_dir_all(&dir).map_err(|source| TraceError::Open { path: dir.display().to_string(), source })?;
    let _guard = Spool(dir.clone());

    // 1. Split by thread (the host's order), keeping each line as the stream first showed it.
    let (spooled, mut memory) = split_by_thread(&mut input, &dir, &header)?;
    let tool_summary = input.summary().cloned().unwrap_or_default();
    let mut stats = tool_summary.stats.clone();
    let volatile = zero_volatile(&mut stats, &mut memory, line_size)?;
    let tool_threads: Vec<Value> = stats.get("threads").and_then(Value::as_array).cloned().unwrap_or_default();
    let n = spooled.max(tool_threads.len());
    let mut th = vec![ThreadState::default(); n];
    for (i, s) in tool_threads.iter().enumerate() {
        th[i].start = s.get("start").and_then(Value::as_u64).unwrap_or(0);
    }

    // 2. Replay in quanta of the threads' clocks, thread order within a quantum.
    let w = interleave(&dir, spooled, &mut th, &mut header, &mut memory, quantum, out, codec)?;

    // 3. The summary: the tool's per-thread counts with the LLC's filled in.
    let merged: Vec<Value> = (0..n)
        .map(|t| {
            let mut v = tool_threads.get(t).cloned().unwrap_or_else(|| json!({}));
            let s = &th[t];
            if let Some(o) = v.as_object_mut() {
                for (k, x) in [
                    ("llc_hits", s.llc_hits),
                    ("load_fills", s.load_fills + s.ifetch_fills),
                    ("store_fills", s.store_fills),
                    ("ifetch_fills", s.ifetch_fills),
                    ("writebacks", s.writebacks),
                    ("l1_writebacks_to_memory", s.to_memory),
                ] {
                    o.insert(k.into(), json!(x));
                }
            }
            v
        })
        .collect();
    if let Some(o) = stats.as_object_mut() {
        o.insert("threads".into(), Value::Array(merged));
        o.insert(
            "replay".into(),
            json!({"version": REPLAY_VERSION, "quantum": quantum, "l1_events": tool_summary.records,
                   "volatile_lines": volatile.len()}),
        );
    } else {
        stats = json!({"threads": merged, "replay": {"version": REPLAY_VERSION, "quantum": quantum}});
    }
    w.finish_with(stats)
}

/// Phase 1: each thread's records to its spool file in `dir` (fill data zeroed: the replay's
/// memory supplies it); returns the number of thread slots and each line's first contents.
fn split_by_thread<R: Read>(
    input: &mut TraceReader<R>,
    dir: &Path,
    header: &Header,
) -> Result<(usize, HashMap<u64, [u8; MAX_LINE]>), TraceError> {
    let spool_opts = WriterOptions { block_records: 1 << 14, zstd_level: Some(1) };
    let mut spools: Vec<Option<TraceWriter>> = Vec::new();
    let mut memory: HashMap<u64, [u8; MAX_LINE]> = HashMap::new();
    let mut rec = Record::default();
    while input.next_into(&mut rec)? {
        let t = rec.thread as usize;
        if t >= spools.len() {
            spools.resize_with(t + 1, || None);
        }
        if spools[t].is_none() {
            spools[t] = Some(TraceWriter::create_with(spool_path(dir, rec.thread), header, spool_opts)?);
        }
        memory.entry(rec.addr).or_insert(rec.data);
        if rec.kind != Kind::Writeback {
            rec.data = [0; MAX_LINE]; // the replay's memory supplies fill data
        }
        spools[t].as_mut().unwrap().write(&rec)?;
    }
    for w in spools.iter_mut().filter_map(Option::take) {
        w.finish()?;
    }
    Ok((spools.len(), memory))
}

/// Granules written by atomics or inside synchronisation calls: zero in the replay's memory
/// (their bytes in a first-touch snapshot depend on the host's order). Takes the tool's
/// `volatile` list out of `stats` and returns it.
fn zero_volatile(
    stats: &mut Value,
    memory: &mut HashMap<u64, [u8; MAX_LINE]>,
    line_size: usize,
) -> Result<Vec<Value>, TraceError> {
    let volatile = stats.as_object_mut().and_then(|o| o.remove("volatile"));
    let volatile: Vec<Value> = volatile.and_then(|v| v.as_array().cloned()).unwrap_or_default();
    let g = (line_size / 32).max(1);
    for pair in &volatile {
        let (Some(addr), Some(mask)) = (pair.get(0).and_then(Value::as_u64), pair.get(1).and_then(Value::as_u64))
        else {
            return Err(TraceError::Invalid(format!("summary: volatile entry {pair} is not [address, mask]")));
        };
        if let Some(line) = memory.get_mut(&addr) {
            for i in (0..32.min(line_size / g)).filter(|i| mask >> i & 1 == 1) {
                line[i * g..(i + 1) * g].fill(0);
            }
        }
    }
    Ok(volatile)
}

/// Phase 2: the spooled threads' records through the LLC in quanta of their clocks, thread order
/// within a quantum; the LLC's fills and writebacks to `out` (the header marked as replayed).
/// Returns the writer, for the summary.
#[allow(clippy::too_many_arguments)]
fn interleave(
    dir: &Path,
    spooled: usize,
    th: &mut [ThreadState],
    header: &mut Header,
    memory: &mut HashMap<u64, [u8; MAX_LINE]>,
    quantum: u64,
    out: impl AsRef<Path>,
    codec: Codec,
) -> Result<TraceWriter, TraceError> {
    let line_size = header.line_size as usize;
    let mut readers: Vec<Option<TraceReader>> = (0..spooled)
        .map(|t| {
            let p = spool_path(dir, t as u32);
            if p.exists() {
                TraceReader::open(p).map(Some)
            } else {
                Ok(None)
            }
        })
        .collect::<Result<_, _>>()?;
    let mut next: Vec<Record> = vec![Record::default(); readers.len()];
    let mut heap = BinaryHeap::new();
    for t in 0..readers.len() {
        if let Some(r) = readers[t].as_mut() {
            if r.next_into(&mut next[t])? {
                heap.push(Reverse(((th[t].start + th[t].clock + next[t].insts) / quantum, t)));
            }
        }
    }
    let mut llc = Llc::new(header);
    header.extra.insert("stream".into(), json!("llc"));
    header.extra.insert(
        "replay".into(),
        json!({"version": REPLAY_VERSION, "quantum": quantum,
               "order": "thread clocks (creator's clock at creation + own instructions) in quanta, thread order within a quantum"}),
    );
    let mut w = TraceWriter::create(out, header)?;
    w.set_codec(codec)?;
    let line_bytes = line_size as u64;
    while let Some(Reverse((q, t))) = heap.pop() {
        loop {
            let ev = &next[t];
            let s = &mut th[t];
            s.clock += ev.insts;
            s.pending_insts += ev.insts;
            let line = ev.addr / line_bytes;
            match ev.kind {
                Kind::Writeback => {
                    let mem = memory.entry(ev.addr).or_insert(ev.data);
                    let g = (line_size / 32).max(1);
                    for i in 0..32.min(line_size / g) {
                        if ev.llc_hits >> i & 1 == 1 {
                            mem[i * g..(i + 1) * g].copy_from_slice(&ev.data[i * g..(i + 1) * g]);
                        }
                    }
                    if !llc.mark_dirty(line) {
                        s.to_memory += 1;
                        s.writebacks += 1;
                        emit(&mut w, t, Kind::Writeback, ev.addr, s, memory)?;
                    }
                }
                kind => {
                    let mut victim = None;
                    if llc.reference(line, &mut victim) {
                        s.llc_hits += 1;
                        s.pending_hits += 1;
                    } else {
                        match (kind, ev.llc_hits) {
                            (Kind::StoreFill, _) => s.store_fills += 1,
                            (_, 1) => s.ifetch_fills += 1,
                            _ => s.load_fills += 1,
                        }
                        let addr = ev.addr;
                        emit(&mut w, t, kind, addr, s, memory)?;
                        if let Some(v) = victim {
                            s.writebacks += 1;
                            emit(&mut w, t, Kind::Writeback, v * line_bytes, s, memory)?;
                        }
                    }
                }
            }
            let r = readers[t].as_mut().unwrap();
            if !r.next_into(&mut next[t])? {
                break;
            }
            let nq = (th[t].start + th[t].clock + next[t].insts) / quantum;
            if nq != q {
                heap.push(Reverse((nq, t)));
                break;
            }
        }
    }
    Ok(w)
}

fn emit<W: Write>(
    w: &mut TraceWriter<W>,
    t: usize,
    kind: Kind,
    addr: u64,
    s: &mut ThreadState,
    memory: &HashMap<u64, [u8; MAX_LINE]>,
) -> Result<(), TraceError> {
    let data = memory.get(&addr).copied().unwrap_or([0; MAX_LINE]);
    w.write(&Record { thread: t as u32, kind, addr, insts: s.pending_insts, llc_hits: s.pending_hits, data })?;
    s.pending_insts = 0;
    s.pending_hits = 0;
    Ok(())
}

/// `replay` on a file (an L1 stream written with `--stream=l1 --out=FILE`).
pub fn replay_file(
    input: impl AsRef<Path>,
    out: impl AsRef<Path>,
    quantum: u64,
    codec: Codec,
) -> Result<Summary, TraceError> {
    let r = TraceReader::open(input)?;
    let header = r.header().clone();
    let out = out.as_ref();
    let spool = out.with_extension("spool");
    replay::<BufReader<File>>(r, out, header, quantum, spool, codec)
}
