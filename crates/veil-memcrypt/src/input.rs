//! Where records come from: a veil-trace file (real programs) or the synthetic generator, and
//! the JSON entry points the bindings call.

use serde::{Deserialize, Serialize};
use veil_trace::TraceReader;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::check::{Check, Checker};
use crate::record::{Kind, Record};
use crate::sim::{Results, Sim};
use crate::synth::{Synth, SynthConfig};

/// A run: the machine, and either a trace file or a synthetic stream.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    #[serde(default)]
    pub config: Config,
    #[serde(default)]
    pub trace: Option<String>,
    #[serde(default)]
    pub synth: Option<SynthConfig>,
    /// Records to time after the warm-up (0 = the rest of the input).
    #[serde(default)]
    pub max_records: u64,
    /// Records passed over at the start of the input before the warm-up (`config.warmup_records`)
    /// begins: the fast-forward to the measured region (a generator's are generated and dropped).
    #[serde(default)]
    pub skip_records: u64,
    /// Sampled simulation ([`crate::sampled`]); None: every timed record is timed.
    #[serde(default)]
    pub sampling: Option<crate::sampling::Sampling>,
}

fn convert(r: &veil_trace::Record) -> Record {
    let mut data = [0u8; 64];
    data.copy_from_slice(&r.data[..64]);
    Record {
        thread: r.thread,
        kind: match r.kind {
            veil_trace::Kind::LoadFill => Kind::LoadFill,
            veil_trace::Kind::StoreFill => Kind::StoreFill,
            veil_trace::Kind::Writeback => Kind::Writeback,
        },
        addr: r.addr,
        insts: r.insts,
        llc_hits: r.llc_hits as u64,
        data,
    }
}

/// Runs of up to this many records keep their decoded records for the next run in the process.
const CACHED_RECORDS: u64 = 1 << 20;

/// Which records of which file: path, its length and modification time, the records skipped and
/// the record limit (counted from the file's start).
type TraceKey = (String, u64, std::time::SystemTime, u64, u64);

/// The records of the last trace prefix read in this process (a reproducer runs a workload's
/// trace under some twenty machines one after another: decoding it once instead of each time
/// was about half of a run's time). At most `CACHED_RECORDS` records (~100 MB).
struct DecodedTrace {
    key: TraceKey,
    line_size: u32,
    recs: std::sync::Arc<Vec<Record>>,
}

static LAST_TRACE: std::sync::Mutex<Option<DecodedTrace>> = std::sync::Mutex::new(None);

fn cache_key(path: &str, skip: u64, limit: u64) -> Option<TraceKey> {
    if limit - skip > CACHED_RECORDS {
        return None;
    }
    let m = std::fs::metadata(path).ok()?;
    Some((path.to_owned(), m.len(), m.modified().ok()?, skip, limit))
}

/// The line size and records of `key`, if it was the last trace read.
fn cached(key: &TraceKey) -> Option<(u32, std::sync::Arc<Vec<Record>>)> {
    let last = LAST_TRACE.lock().unwrap_or_else(|e| e.into_inner());
    let d = last.as_ref().filter(|d| &d.key == key)?;
    Some((d.line_size, d.recs.clone()))
}

/// Feeds every record of the run's input to `f`; polls `interrupted` every 64 Ki records.
/// The records skipped (`skip_records`) are read but not passed on.
pub fn for_each(run: &Run, interrupted: &dyn Fn() -> bool, mut f: impl FnMut(&Record) -> Result<()>) -> Result<()> {
    let skip = run.skip_records;
    let limit = match run.max_records {
        0 => u64::MAX,
        m => skip.saturating_add(run.config.warmup_records).saturating_add(m),
    };
    let mut n = 0u64;
    match (&run.trace, &run.synth) {
        (Some(path), None) => {
            let line_size_ok = |ls: u32| {
                if ls != run.config.line_bytes {
                    return Err(Error::config(format!(
                        "trace: {path} has {ls}-byte lines; memcrypt encrypts {}-byte lines (Table 2)",
                        run.config.line_bytes
                    )));
                }
                Ok(())
            };
            let key = cache_key(path, skip, limit);
            if let Some((ls, recs)) = key.as_ref().and_then(cached) {
                line_size_ok(ls)?;
                for r in recs.iter() {
                    if n & 0xFFFF == 0 && interrupted() {
                        return Err(Error::Interrupted);
                    }
                    f(r)?;
                    n += 1;
                }
                return Ok(());
            }
            // A sampled run decodes blocks on its threads too: its functional pass is otherwise
            // bound by decoding.
            let threads = run.sampling.as_ref().map_or(1, |s| s.threads);
            let opts = veil_trace::ReadOptions { threads, read_ahead: 0 };
            let mut rd =
                TraceReader::open_with(path, opts).map_err(|e| Error::config(format!("trace: {path}: {e}")))?;
            let ls = rd.header().line_size;
            line_size_ok(ls)?;
            let mut keep = key.as_ref().map(|_| Vec::new());
            let mut tr = veil_trace::Record::default();
            while n < limit && rd.next_into(&mut tr).map_err(|e| Error::config(format!("trace: {path}: {e}")))? {
                if n & 0xFFFF == 0 && interrupted() {
                    return Err(Error::Interrupted);
                }
                n += 1;
                if n <= skip {
                    continue;
                }
                let r = convert(&tr);
                f(&r)?;
                if let Some(v) = keep.as_mut() {
                    v.push(r);
                }
            }
            if let (Some(key), Some(recs)) = (key, keep) {
                *LAST_TRACE.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(DecodedTrace { key, line_size: ls, recs: std::sync::Arc::new(recs) });
            }
        }
        (None, Some(s)) => {
            for rec in Synth::new(s.clone()) {
                if n >= limit {
                    break;
                }
                if n & 0xFFFF == 0 && interrupted() {
                    return Err(Error::Interrupted);
                }
                n += 1;
                if n > skip {
                    f(&rec)?;
                }
            }
        }
        _ => return Err(Error::config("input: give exactly one of 'trace' (a file) and 'synth' (a generator)")),
    }
    Ok(())
}

/// The timing model over the run's input.
pub fn simulate_run(run: &Run, interrupted: &dyn Fn() -> bool) -> Result<Results> {
    let mut sim = Sim::new(&run.config)?;
    for_each(run, interrupted, |r| {
        sim.step(r);
        Ok(())
    })?;
    Ok(sim.finish())
}

/// Replays the input through the functional model (real ciphers, MACs and speculation).
pub fn check_run(run: &Run, interrupted: &dyn Fn() -> bool) -> Result<Check> {
    let mut ch = Checker::new(&run.config)?;
    for_each(run, interrupted, |r| ch.step(r))?;
    Ok(ch.finish())
}

fn parse(json: &str) -> std::result::Result<Run, String> {
    serde_json::from_str(json).map_err(|e| format!("config: {e}"))
}

/// JSON in, JSON out (the bindings' entry point).
pub fn simulate_json(json: &str, interrupted: &dyn Fn() -> bool) -> std::result::Result<String, Error> {
    let run = parse(json).map_err(Error::Config)?;
    let r = simulate_run(&run, interrupted)?;
    Ok(serde_json::to_string(&r).expect("results serialise"))
}

pub fn check_json(json: &str, interrupted: &dyn Fn() -> bool) -> std::result::Result<String, Error> {
    let run = parse(json).map_err(Error::Config)?;
    let r = check_run(&run, interrupted)?;
    Ok(serde_json::to_string(&r).expect("results serialise"))
}

pub fn default_config_json() -> String {
    serde_json::to_string(&Config::default()).expect("config serialises")
}

/// Writes a synthetic miss stream to a veil-trace file with the given line size (the first
/// `line_size` bytes of each line), so that the trace path can be exercised without a tracer.
pub fn write_synth_trace(path: &str, line_size: u32, synth: &SynthConfig) -> Result<u64> {
    let io = |e: veil_trace::TraceError| Error::config(format!("trace: {path}: {e}"));
    let mut w = veil_trace::TraceWriter::create(path, &veil_trace::synthetic::header(1, line_size)).map_err(io)?;
    let ls = line_size as usize;
    let mut n = 0;
    for r in Synth::new(synth.clone()) {
        let mut data = [0u8; veil_trace::MAX_LINE];
        data[..ls].copy_from_slice(&r.data[..ls.min(64)]);
        let kind = match r.kind {
            Kind::LoadFill => veil_trace::Kind::LoadFill,
            Kind::StoreFill => veil_trace::Kind::StoreFill,
            Kind::Writeback => veil_trace::Kind::Writeback,
        };
        w.write(&veil_trace::Record { thread: r.thread, kind, addr: r.addr, insts: r.insts, llc_hits: r.llc_hits as u32, data })
            .map_err(io)?;
        n += 1;
    }
    w.finish().map_err(io)?;
    Ok(n)
}

/// CPU seconds this thread has run (wall seconds where the platform has no thread clock): on a
/// shared machine the CPU time of one thread is what "records/s on one core" means, where wall
/// time also counts the time other processes held the core.
fn thread_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
}

/// Speed of the model alone: reads the input into memory, then times the timing model over it
/// (with `reference`, booking the engines as before the speed work). Returns (records, CPU
/// seconds to read and decode, CPU seconds of the model), thread CPU time.
pub fn time_model(run: &Run, reference: bool) -> Result<(u64, f64, f64)> {
    let t = thread_seconds();
    let mut recs = Vec::new();
    for_each(run, &|| false, |r| {
        recs.push(*r);
        Ok(())
    })?;
    let read = thread_seconds() - t;
    let t = thread_seconds();
    let mut sim = Sim::new(&run.config)?;
    if reference {
        sim.use_reference_booking();
    }
    for r in &recs {
        sim.step(r);
    }
    std::hint::black_box(sim.finish());
    Ok((recs.len() as u64, read, thread_seconds() - t))
}
