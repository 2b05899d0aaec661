//! Trace-driven CPU cores: each replays one thread's LLC-miss stream, closed loop.
//!
//! A core executes the `insts` instructions that precede a miss at `ipc` instructions per
//! core cycle (at most `issue_width`), then issues the miss if one of its `mshrs` miss
//! status holding registers is free; fills are read requests, writebacks write requests
//! (they hold an MSHR until the write response, as a write buffer entry would). Execution
//! overlaps outstanding misses, but not beyond the reorder buffer: a load miss blocks
//! retirement, so the core cannot run more than `rob` instructions past its oldest
//! outstanding load miss. That is the interval model's view of an out-of-order core
//! (Genbrugge, Eyerman, Eeckhout, HPCA 2010): memory-level parallelism limited by the MSHRs
//! and by the misses that fit in one ROB. Store misses and writebacks do not block (store
//! buffer). Simplification: when a ROB stall ends the instructions after the ROB limit are
//! not charged again (the core resumes at the record). The core is done when its stream is
//! exhausted and every miss has returned.

use crate::error::SimError;

/// Records are the trace format's (veil-trace): thread, kind, address, instructions since the
/// thread's previous record, LLC hits, line data.
pub use veil_trace::{Kind, Record};

/// A stream of one thread's records, read lazily (memory does not grow with trace length).
pub trait MissSource: Send {
    /// Fills `r` with the next record; false at the end of the stream.
    fn next_into(&mut self, r: &mut Record) -> Result<bool, SimError>;
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct CoreStats {
    pub node: u32,
    pub reads: u64,
    pub writes: u64,
    pub instructions: u64,
    /// Cycles a ready miss waited for a free MSHR.
    pub mshr_stall_cycles: u64,
    /// Cycles the core could not execute because its ROB was full behind a load miss.
    pub rob_stall_cycles: u64,
    pub finished_at: u64,
    /// Sum and max of read round-trip latencies (cycles, issue to response).
    pub read_latency_sum: u64,
    pub read_latency_max: u64,
}

pub struct Core {
    pub node: u32,
    source: Box<dyn MissSource>,
    pub rec: Record,
    has_rec: bool,
    exhausted: bool,
    /// Cycle the pending record may issue (its instructions executed).
    ready_at: f64,
    /// `ready_at` rounded up to a cycle (kept beside it: polled every cycle).
    ready_cycle: u64,
    outstanding: u32,
    mshrs: u32,
    /// Network cycles per instruction.
    cycles_per_inst: f64,
    rob: u64,
    /// Instructions retired before the pending record, and the positions of outstanding
    /// load misses (oldest first; a response frees the oldest of its core, loads return
    /// their MSHR in any order but the ROB limit only needs the oldest position).
    position: u64,
    loads: std::collections::VecDeque<u64>,
    /// First cycle whose poll is not yet accounted: polls that could do nothing but count a
    /// stall are skipped (`due`) and counted when the core is next polled or answered.
    acct: u64,
    pub done: bool,
    pub stats: CoreStats,
}

impl Core {
    pub fn new(node: u32, source: Box<dyn MissSource>, mshrs: u32, cycles_per_inst: f64, rob: u64) -> Self {
        Self {
            node,
            source,
            rec: Record::default(),
            has_rec: false,
            exhausted: false,
            ready_at: 0.0,
            ready_cycle: 0,
            outstanding: 0,
            mshrs,
            cycles_per_inst,
            rob,
            position: 0,
            loads: std::collections::VecDeque::new(),
            acct: 0,
            done: false,
            stats: CoreStats { node, ..Default::default() },
        }
    }

    /// The record the core may issue at `now`, if any (the caller then calls `issued`).
    pub fn ready(&mut self, now: u64) -> Result<Option<&Record>, SimError> {
        self.catch_up(now);
        self.acct = now + 1;
        if self.done || self.exhausted && !self.has_rec {
            return Ok(None);
        }
        if !self.has_rec {
            if !self.source.next_into(&mut self.rec)? {
                self.exhausted = true;
                return Ok(None);
            }
            self.has_rec = true;
            self.set_ready_at(self.ready_at + self.rec.insts as f64 * self.cycles_per_inst);
            self.stats.instructions += self.rec.insts;
            self.position += self.rec.insts;
        }
        if self.rob_full() {
            self.stats.rob_stall_cycles += 1;
            self.set_ready_at(self.ready_at.max(now as f64 + 1.0));
            return Ok(None);
        }
        if now < self.ready_cycle {
            return Ok(None);
        }
        if self.outstanding >= self.mshrs {
            self.stats.mshr_stall_cycles += 1;
            return Ok(None);
        }
        Ok(Some(&self.rec))
    }

    fn set_ready_at(&mut self, t: f64) {
        self.ready_at = t;
        self.ready_cycle = t.ceil() as u64;
    }

    pub fn issued(&mut self, now: u64) {
        self.has_rec = false;
        self.outstanding += 1;
        // Execution continues from now, or from when the instructions were done.
        self.set_ready_at(self.ready_at.max(now as f64));
        match self.rec.kind {
            Kind::Writeback => self.stats.writes += 1,
            Kind::LoadFill => {
                self.stats.reads += 1;
                self.loads.push_back(self.position);
            }
            Kind::StoreFill => self.stats.reads += 1,
        }
    }

    /// Position of the load this core issued at `position` (its response carries it back).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// A response arrived; `load_at` is the position of a load miss it answers.
    pub fn completed(&mut self, read_latency: Option<u64>, load_at: Option<u64>) {
        self.outstanding -= 1;
        if let Some(p) = load_at {
            if let Some(i) = self.loads.iter().position(|&x| x == p) {
                self.loads.remove(i);
            }
        }
        if let Some(l) = read_latency {
            self.stats.read_latency_sum += l;
            self.stats.read_latency_max = self.stats.read_latency_max.max(l);
        }
    }

    /// Marks the core done when nothing is left; true if it just finished.
    pub fn check_done(&mut self, now: u64) -> bool {
        if !self.done && self.exhausted && !self.has_rec && self.outstanding == 0 {
            self.done = true;
            self.stats.finished_at = now;
            return true;
        }
        false
    }

    /// Earliest cycle this core can do something without a response arriving: its next
    /// record's instructions are done (None when it waits for a response or is done).
    pub fn next_time(&self) -> Option<u64> {
        if self.done || self.waiting() {
            return None;
        }
        Some(self.ready_cycle)
    }

    /// Only a response can move this core on: it holds a record behind a full ROB or with
    /// every MSHR taken, or its stream is over and misses are still out.
    pub fn waiting(&self) -> bool {
        if !self.has_rec {
            return self.exhausted && self.outstanding > 0;
        }
        self.outstanding >= self.mshrs || self.rob_full()
    }

    fn rob_full(&self) -> bool {
        self.loads.front().is_some_and(|&o| self.position >= o + self.rob)
    }

    /// Whether `ready(now)` could do more than count a stall: issue, fetch a record, or find
    /// the core done. Until then the core is not polled.
    pub fn due(&self, now: u64) -> bool {
        if self.done {
            return false;
        }
        if !self.has_rec {
            return !self.exhausted || self.outstanding == 0;
        }
        !self.waiting() && now >= self.ready_cycle
    }

    /// Accounts the cycles before `to` in which the core was not polled (its state did not
    /// change in them: only a poll or a response changes it, and both come here first).
    pub fn catch_up(&mut self, to: u64) {
        if to > self.acct {
            self.skip_waiting(self.acct, to);
            self.acct = to;
        }
    }

    /// Cycles `from..to` passed without a poll while this core waited for a response: counts
    /// them as `ready` polled once per cycle would have (stall cycles, and a ROB stall's
    /// `ready_at` moving to the cycle after each poll).
    fn skip_waiting(&mut self, from: u64, to: u64) {
        if to <= from || !self.has_rec || !self.waiting() {
            return;
        }
        if self.rob_full() {
            self.stats.rob_stall_cycles += to - from;
            self.set_ready_at(self.ready_at.max(to as f64));
        } else {
            self.stats.mshr_stall_cycles += to.saturating_sub(from.max(self.ready_cycle));
        }
    }

    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Script(std::vec::IntoIter<(u64, Kind)>);

    impl MissSource for Script {
        fn next_into(&mut self, r: &mut Record) -> Result<bool, SimError> {
            Ok(self.0.next().map(|(insts, kind)| {
                r.insts = insts;
                r.kind = kind;
            }).is_some())
        }
    }

    /// Runs one core against responses that come `latency(i)` cycles after its i-th issue,
    /// half of them before the cycle's poll (an event) and half after it (a delivery).
    /// `every_cycle`: polled each cycle, as before polls were skipped.
    fn replay(every_cycle: bool, mshrs: u32, rob: u64) -> CoreStats {
        let recs: Vec<(u64, Kind)> = (0..400u64)
            .map(|i| ((i * 7919) % 23, [Kind::LoadFill, Kind::LoadFill, Kind::StoreFill, Kind::Writeback][(i % 4) as usize]))
            .collect();
        let mut c = Core::new(0, Box::new(Script(recs.into_iter())), mshrs, 0.37, rob);
        // (cycle, before the poll, read latency, load position)
        let mut due: Vec<(u64, bool, Option<u64>, Option<u64>)> = Vec::new();
        let mut issued = 0u64;
        for now in 0..200_000u64 {
            let answer = |c: &mut Core, due: &mut Vec<(u64, bool, Option<u64>, Option<u64>)>, before: bool| {
                while let Some(i) = due.iter().position(|d| d.0 == now && d.1 == before) {
                    let d = due.remove(i);
                    c.catch_up(if before { now } else { now + 1 });
                    c.completed(d.2, d.3);
                    c.check_done(now);
                }
            };
            answer(&mut c, &mut due, true);
            if every_cycle || c.due(now) {
                while let Some(kind) = c.ready(now).unwrap().map(|r| r.kind) {
                    let load = (kind == Kind::LoadFill).then(|| c.position());
                    let read = kind != Kind::Writeback;
                    c.issued(now);
                    let lat = 5 + (issued * 37) % 90;
                    due.push((now + lat, issued % 2 == 0, read.then_some(lat), load));
                    issued += 1;
                }
                c.check_done(now);
            }
            answer(&mut c, &mut due, false);
            if c.done {
                break;
            }
        }
        assert!(c.done);
        c.stats
    }

    #[test]
    fn skipped_polls_count_the_stalls_polling_every_cycle_counts() {
        for (mshrs, rob) in [(1, 4096), (2, 16), (4, 6), (16, 64)] {
            let a = replay(true, mshrs, rob);
            let b = replay(false, mshrs, rob);
            assert_eq!(a, b, "mshrs {mshrs}, rob {rob}");
            assert!(a.rob_stall_cycles + a.mshr_stall_cycles > 100, "mshrs {mshrs}, rob {rob}: {a:?}");
        }
        assert!(replay(true, 2, 16).rob_stall_cycles > 100 && replay(true, 1, 4096).mshr_stall_cycles > 100);
    }
}
