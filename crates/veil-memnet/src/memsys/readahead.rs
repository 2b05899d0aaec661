//! The CPUs' miss streams read ahead on a fixed pool of worker threads: while a core consumes
//! one batch of its records, a worker decodes (or generates) the next. Each stream is its own
//! source with its own state (a trace reader, a synthetic generator with its own random
//! stream), read in order by one job at a time, so the records and the results are the same
//! for any number of threads. The simulation itself stays on the calling thread: the network,
//! the cores and the vaults exchange state every cycle, and per cycle there is too little
//! work to split (see docs/memnet-memsys.md, Speed).

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use rayon::ThreadPool;

use super::cpu::{MissSource, Record};
use crate::error::{ConfigError, SimError};

/// Records per batch: a batch of trace records is about 100 KB per core.
const BATCH: usize = 1024;

/// Most threads a run may ask for.
pub const MAX_THREADS: usize = 1024;

/// The run's thread count: `threads` or every core, checked.
pub fn thread_count(threads: Option<usize>) -> Result<usize, ConfigError> {
    match threads {
        Some(n) if n == 0 || n > MAX_THREADS => Err(ConfigError(format!("threads: must be in 1..={MAX_THREADS} (got {n})"))),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS)),
    }
}

/// Workers beside the simulation's thread: `threads - 1` of them (none for one thread).
pub fn worker_pool(threads: usize) -> Result<Option<Arc<ThreadPool>>, SimError> {
    if threads <= 1 {
        return Ok(None);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads - 1)
        .thread_name(|i| format!("memnet-worker-{i}"))
        .build()
        .map_err(|e| SimError::Config(ConfigError(format!("threads: cannot start {} worker threads: {e}", threads - 1))))?;
    Ok(Some(Arc::new(pool)))
}

/// What a worker hands back: the source, the batch it filled, and whether more may follow
/// (or the error that stopped it after the records in the batch).
type Filled = (Box<dyn MissSource>, Vec<Record>, Result<bool, SimError>);

pub struct ReadAhead {
    cur: Vec<Record>,
    pos: usize,
    next: Option<Receiver<Filled>>,
    /// An error the source raised after the records still in `cur`.
    err: Option<SimError>,
    pool: Arc<ThreadPool>,
}

impl ReadAhead {
    pub fn new(src: Box<dyn MissSource>, pool: Arc<ThreadPool>) -> Self {
        let mut s = Self { cur: Vec::new(), pos: 0, next: None, err: None, pool };
        s.request(src, Vec::with_capacity(BATCH));
        s
    }

    fn request(&mut self, mut src: Box<dyn MissSource>, mut buf: Vec<Record>) {
        let (tx, rx) = sync_channel(1);
        self.pool.spawn(move || {
            buf.clear();
            let more = fill(src.as_mut(), &mut buf);
            // The receiver is gone only when the run was dropped: nothing to tell.
            let _ = tx.send((src, buf, more));
        });
        self.next = Some(rx);
    }
}

fn fill(src: &mut dyn MissSource, buf: &mut Vec<Record>) -> Result<bool, SimError> {
    let mut r = Record::default();
    while buf.len() < BATCH {
        if !src.next_into(&mut r)? {
            return Ok(false);
        }
        buf.push(r.clone());
    }
    Ok(true)
}

impl MissSource for ReadAhead {
    fn next_into(&mut self, r: &mut Record) -> Result<bool, SimError> {
        loop {
            if let Some(x) = self.cur.get(self.pos) {
                *r = x.clone();
                self.pos += 1;
                return Ok(true);
            }
            if let Some(e) = self.err.take() {
                return Err(e);
            }
            let Some(rx) = self.next.take() else { return Ok(false) };
            let (src, filled, more) = rx.recv().map_err(|_| SimError::Conservation("a miss-stream worker thread died".into()))?;
            let spent = std::mem::replace(&mut self.cur, filled);
            self.pos = 0;
            match more {
                // The worker starts on the following batch while the core consumes this one.
                Ok(true) => self.request(src, spent),
                Ok(false) => {}
                Err(e) => self.err = Some(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{simulate, write_synthetic_trace, MemSysConfig, MemSysResult};
    use super::*;

    fn without_clock(mut r: MemSysResult) -> MemSysResult {
        r.wall_seconds = 0.0;
        r.cycles_per_second = 0.0;
        r
    }

    fn run(mut c: MemSysConfig, threads: usize) -> MemSysResult {
        c.threads = Some(threads);
        without_clock(simulate(&c).unwrap())
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        // A trace spanning several batches per core, and synthetic streams (each core its own
        // random stream) with a secure algorithm that draws random permutations (on the
        // simulation thread, in the same order whatever the thread count).
        let dir = std::env::temp_dir().join(format!("memnet-readahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.vtrace");
        write_synthetic_trace(path.to_str().unwrap(), 3 * BATCH * 4 + 17, 4, 5).unwrap();
        let mut trace = MemSysConfig::default();
        trace.cpu.count = 4;
        trace.workload.kind = "trace".into();
        trace.workload.trace = path.to_str().unwrap().into();
        trace.encryption.uarch = "source_otp".into();
        let one = run(trace.clone(), 1);
        assert_eq!(one.reads + one.writes, (3 * BATCH * 4 + 17) as u64);
        assert_eq!(one, run(trace.clone(), 2));
        assert_eq!(one, run(trace, 5));
        let mut synth = MemSysConfig::default();
        synth.workload.requests_per_cpu = 2 * BATCH as u64 + 3;
        synth.injection = "ghost_minimal".into();
        let one = run(synth.clone(), 1);
        assert!(one.dummy_packets > 0);
        assert_eq!(one, run(synth, 2));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn thread_counts_outside_1_to_1024_are_refused() {
        for bad in [0, MAX_THREADS + 1] {
            let mut c = MemSysConfig::default();
            c.threads = Some(bad);
            match simulate(&c) {
                Err(SimError::Config(e)) => assert_eq!(e.0, format!("threads: must be in 1..=1024 (got {bad})")),
                other => panic!("{other:?}"),
            }
        }
        assert!(thread_count(None).unwrap() >= 1);
        assert_eq!(thread_count(Some(1024)).unwrap(), 1024);
    }
}
