//! Synthetic LLC-miss streams, one per core, read lazily like a trace: `uniform` (every
//! line equally likely), `hotspot` (a fraction of misses to the hot modules), `stream`
//! (consecutive lines from a per-core start), `batch` (uniform with no instructions between
//! misses: the cores keep their MSHRs full). A fill is followed by a writeback of another
//! line with probability `write_fraction` (a dirty eviction).

use rand::Rng;
use veil_core::StreamRng;

use super::addrmap::AddressMap;
use super::cpu::{Kind, MissSource, Record};
use crate::error::{ConfigError, SimError};

pub const WORKLOAD_NAMES: &[(&str, &str)] = &[
    ("uniform", "uniform random lines over every module"),
    ("hotspot", "a fraction of misses to the hot modules, the rest uniform"),
    ("stream", "consecutive lines from a per-core start"),
    ("batch", "uniform with no instructions between misses (MSHRs kept full)"),
    ("trace", "a trace file's LLC-miss streams, one thread per core"),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    Uniform,
    Hotspot,
    Stream,
}

pub struct Synthetic {
    rng: StreamRng,
    map: AddressMap,
    pattern: Pattern,
    thread: u32,
    left: u64,
    write_fraction: f64,
    insts_per_miss: f64,
    hot: Vec<u64>,
    hot_fraction: f64,
    next_line: u64,
    writeback_due: bool,
}

impl Synthetic {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rng: StreamRng,
        map: AddressMap,
        pattern: Pattern,
        thread: u32,
        records: u64,
        write_fraction: f64,
        insts_per_miss: f64,
        hot: Vec<u64>,
        hot_fraction: f64,
    ) -> Self {
        let lines = map.capacity / 64;
        let start = (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % lines;
        Self { rng, map, pattern, thread, left: records, write_fraction, insts_per_miss, hot, hot_fraction, next_line: start, writeback_due: false }
    }

    fn random_line(&mut self, module: Option<u64>) -> u64 {
        let rng = &mut self.rng;
        self.map.compose(module, &mut |n| rng.gen_range(0..n))
    }
}

impl MissSource for Synthetic {
    fn next_into(&mut self, r: &mut Record) -> Result<bool, SimError> {
        if self.left == 0 {
            return Ok(false);
        }
        self.left -= 1;
        r.thread = self.thread;
        r.llc_hits = 0;
        if self.writeback_due {
            self.writeback_due = false;
            r.kind = Kind::Writeback;
            r.insts = 0;
            r.addr = self.random_line(None);
            self.rng.fill(&mut r.data[..]);
            return Ok(true);
        }
        r.kind = if self.rng.gen::<f64>() < 0.5 { Kind::LoadFill } else { Kind::StoreFill };
        // Exponential gaps with the configured mean (0 = batch: back to back).
        r.insts = if self.insts_per_miss > 0.0 {
            let u: f64 = self.rng.gen::<f64>();
            (-(1.0 - u).ln() * self.insts_per_miss).round() as u64
        } else {
            0
        };
        r.addr = match self.pattern {
            Pattern::Uniform => self.random_line(None),
            Pattern::Hotspot => {
                if !self.hot.is_empty() && self.rng.gen::<f64>() < self.hot_fraction {
                    let m = self.hot[self.rng.gen_range(0..self.hot.len())];
                    self.random_line(Some(m))
                } else {
                    self.random_line(None)
                }
            }
            Pattern::Stream => {
                let a = self.next_line * 64;
                self.next_line = (self.next_line + 1) % (self.map.capacity / 64);
                a
            }
        };
        r.data = [0; 64];
        self.writeback_due = self.left > 0 && self.rng.gen::<f64>() < self.write_fraction;
        Ok(true)
    }
}

/// One thread's records from a trace file (veil-trace format), read block by block: each core
/// opens the file itself and skips the other threads' records, so memory stays one block per
/// core whatever the trace's length.
pub struct TraceStream {
    reader: veil_trace::TraceReader,
    thread: u32,
    path: String,
}

impl TraceStream {
    pub fn open(path: &str, thread: u32) -> Result<Self, ConfigError> {
        let reader = veil_trace::TraceReader::open(path).map_err(|e| ConfigError(format!("workload.trace '{path}': {e}")))?;
        Ok(Self { reader, thread, path: path.into() })
    }
}

impl MissSource for TraceStream {
    fn next_into(&mut self, r: &mut Record) -> Result<bool, SimError> {
        loop {
            let more = self.reader.next_into(r).map_err(|e| ConfigError(format!("workload.trace '{}': {e}", self.path)))?;
            if !more {
                return Ok(false);
            }
            if r.thread == self.thread {
                return Ok(true);
            }
        }
    }
}

/// A core with no thread to run.
pub struct Empty;

impl MissSource for Empty {
    fn next_into(&mut self, _r: &mut Record) -> Result<bool, SimError> {
        Ok(false)
    }
}
