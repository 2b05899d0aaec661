//! Synthetic L2 miss streams with controlled value locality, for tests and as a fallback input:
//! a program touching `footprint_lines` lines through an L2 of `cache_lines` lines (FIFO
//! replacement; at most half the footprint), so a bigger L2 hits more and misses less, whose words are zero with probability `p_zero`, one of 16 small constants with
//! `p_small`, and random otherwise. Memory stays consistent: a fill returns what the last
//! writeback of that line wrote, so decryption can be checked against the trace.

use std::collections::{HashMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::record::{Kind, Record};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SynthConfig {
    pub records: u64,
    pub footprint_lines: u64,
    pub cache_lines: usize,
    /// Mean instructions between two L2 accesses (the L1 misses); a resident line is an L2 hit.
    pub insts_per_access: u64,
    pub store_share: f64,
    pub p_zero: f64,
    pub p_small: f64,
    /// Misses come in sequential runs of up to this many lines (1 = independent lines).
    pub run_lines: u64,
    pub seed: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            records: 100_000,
            footprint_lines: 1 << 16,
            cache_lines: 4096,
            insts_per_access: 30,
            store_share: 0.3,
            p_zero: 0.3,
            p_small: 0.15,
            run_lines: 1,
            seed: 1,
        }
    }
}

/// Generates the record stream of a [`SynthConfig`].
pub struct Synth {
    cfg: SynthConfig,
    rng: Xoshiro256PlusPlus,
    memory: HashMap<u64, [u8; 64]>,
    cached: VecDeque<(u64, bool)>,
    resident: HashMap<u64, usize>,
    pending: Option<Record>,
    emitted: u64,
    run: (u64, u64),
}

impl Synth {
    pub fn new(cfg: SynthConfig) -> Self {
        let rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
        Synth {
            cfg,
            rng,
            memory: HashMap::new(),
            cached: VecDeque::new(),
            resident: HashMap::new(),
            pending: None,
            emitted: 0,
            run: (0, 0),
        }
    }

    fn word(&mut self) -> u64 {
        let u: f64 = self.rng.gen();
        if u < self.cfg.p_zero {
            0
        } else if u < self.cfg.p_zero + self.cfg.p_small {
            [1, 2, 3, 4, 8, 16, 32, 64, 255, 0xffff_ffff, u64::MAX, 10, 100, 7, 0x4000, 0x8000]
                [self.rng.gen_range(0..16)]
        } else {
            self.rng.gen()
        }
    }

    /// A line of the footprint: half the time from its hot eighth.
    fn pick(&mut self) -> u64 {
        let hot = self.rng.gen_bool(0.5);
        let span = if hot { (self.cfg.footprint_lines / 8).max(1) } else { self.cfg.footprint_lines.max(1) };
        self.rng.gen_range(0..span)
    }

    fn line_data(&mut self) -> [u8; 64] {
        let mut d = [0u8; 64];
        for i in 0..8 {
            let w = self.word();
            d[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        d
    }
}

impl Iterator for Synth {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if let Some(r) = self.pending.take() {
            self.emitted += 1;
            return Some(r);
        }
        if self.emitted >= self.cfg.records {
            return None;
        }
        // A skewed reuse pattern: half the misses go to the first eighth of the footprint.
        let mut insts = 0;
        let mut hits = 0;
        let line = loop {
            insts += self.rng.gen_range(1..=2 * self.cfg.insts_per_access.max(1));
            let next_in_run = self.run.0 + 1;
            let cand = if self.run.1 > 0 && next_in_run < self.cfg.footprint_lines {
                self.run = (next_in_run, self.run.1 - 1);
                next_in_run
            } else {
                let l = self.pick();
                self.run = (l, self.rng.gen_range(0..self.cfg.run_lines.max(1)));
                l
            };
            if self.resident.contains_key(&cand) {
                hits += 1;
                continue;
            }
            break cand;
        };
        let store = self.rng.gen_bool(self.cfg.store_share);
        let mut wb = None;
        if self.cached.len() >= self.cfg.cache_lines.min(self.cfg.footprint_lines as usize / 2).max(1) {
            let (old, dirty) = self.cached.pop_front().unwrap();
            self.resident.remove(&old);
            if dirty {
                // The program changed a few words of the line while it was cached.
                let mut d = self.memory[&old];
                for _ in 0..self.rng.gen_range(1..=3) {
                    let i = self.rng.gen_range(0..8);
                    let w = self.word();
                    d[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
                }
                self.memory.insert(old, d);
                wb = Some(Record { kind: Kind::Writeback, addr: old * 64, data: d, ..Default::default() });
            }
        }
        let data = match self.memory.get(&line) {
            Some(d) => *d,
            None => {
                let d = self.line_data();
                self.memory.insert(line, d);
                d
            }
        };
        self.cached.push_back((line, store));
        self.resident.insert(line, 0);
        let fill = Record {
            kind: if store { Kind::StoreFill } else { Kind::LoadFill },
            addr: line * 64,
            insts,
            llc_hits: hits,
            data,
            ..Default::default()
        };
        self.emitted += 1;
        match wb {
            Some(w) => {
                self.pending = Some(fill);
                Some(w)
            }
            None => Some(fill),
        }
    }
}
