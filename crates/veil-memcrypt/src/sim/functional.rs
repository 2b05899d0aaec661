//! What a sampled run (`crate::sampled`) needs of the machine: functional warm-up, a fork of
//! the warmed state with idle timing state, and snapshots of the counters between which a
//! window's measured records lie.

use super::{LineMap, Results, Sim, MAC_REGION};
use crate::deps::PointerDeps;
use crate::engines::Engines;
use crate::config::{Config, MacStore};
use crate::error::Result;
use crate::record::Record;

impl Sim {
    on_x86_v3! {
        /// Functional warm-up of a sampled run (`crate::sampled`): what [`Self::warm`] trains, and
        /// besides the rows the record leaves open in SDRAM and the counter cache's contents, so a
        /// window starts from the state the records before it left (only its timing state, the
        /// core, the bookings of memory and engines and the pointer table, starts idle; the window's
        /// detailed warm-up rebuilds it).
        ///
        /// On x86-64-v3 where the CPU has it: it is the sequential part of a sampled run, and its
        /// speed bounds the run's.
        pub fn warm_functional(rec: &Record) => warm_functional_with
    }

    #[inline(always)]
    fn warm_functional_with(&mut self, rec: &Record) {
        self.warm_body(rec);
        let line = rec.addr >> 6;
        if self.mac_store == MacStore::Separate {
            self.dram
                .warm(MAC_REGION + line * self.mac_bytes as u64 / 64);
        }
        self.dram.warm(line);
    }

    /// Results so far without draining the outstanding misses: `cycles` is the core's time now,
    /// and the two means are left as sums (`mean_memory_cycles`, `mean_crypto_cycles`), so that
    /// the difference of two snapshots is the work between them (`crate::sampled`).
    pub fn snapshot(&self) -> Results {
        let mut r = self.r.clone();
        r.cycles = self.t;
        r.spec_ops = self.eng.spec_ops;
        r.writeback_ops = self.eng.writeback_ops;
        r.demand_ops = self.eng.demand_ops;
        r.spec_displaced = self.eng.displaced;
        let d = self.dram.stats();
        r.dram_row_hits = d.row_hits;
        r.dram_row_closed = d.row_closed;
        r.dram_row_conflicts = d.row_conflicts;
        r.dram_accesses = d.row_hits + d.row_closed + d.row_conflicts;
        r.mean_memory_cycles = self.mem_sum;
        r.mean_crypto_cycles = self.crypto_sum;
        r.dram_unloaded = self.dram.unloaded();
        r
    }

    /// A copy of this machine's functional state (what [`Self::warm_functional`] trains) with
    /// idle timing state: the same as a clone of a machine that has only been warmed, without
    /// copying its empty engine calendars (a quarter of a megabyte, most of a clone's cost; a
    /// fresh calendar's zeroed pages are only mapped when touched). `cfg` must be this machine's.
    pub fn fork(&self, cfg: &Config) -> Result<Self> {
        self.fork_reusing(cfg, None)
    }

    /// [`Self::fork`] into the allocations of `spare` (a machine of the same config a window is
    /// done with, [`Self::into_spare`]): the same machine, without allocating a quarter of a
    /// megabyte of calendars and the stored-bitmap map for every window.
    pub fn fork_reusing(&self, cfg: &Config, spare: Option<Spare>) -> Result<Self> {
        let mut s = Sim::new_with(cfg, spare)?;
        s.fvt = self.fvt.clone();
        s.line_bm.clone_from(&self.line_bm);
        s.adaptive.clone_from(&self.adaptive);
        s.bitmaps = self.bitmaps.clone();
        s.prefetcher = self.prefetcher.clone();
        s.tlb = self.tlb.clone();
        s.ctr = self.ctr.clone();
        s.dram = self.dram.clone();
        s.warm_left = 0;
        s.x86_v3 = self.x86_v3;
        Ok(s)
    }

    /// What [`Self::fork_reusing`] can reuse of this machine, cleared (the calendars and the
    /// pointer table as new, the stored-bitmap map emptied but keeping its room). Clearing is
    /// done here, by whoever is done with the machine: in a sampled run a worker thread, off the
    /// pass's thread.
    pub fn into_spare(self) -> Spare {
        let Sim { mut eng, mut deps, mut line_bm, .. } = self;
        eng.reset();
        if let Some(d) = deps.as_mut() {
            d.reset();
        }
        line_bm.clear();
        Spare { eng, deps, line_bm }
    }

    /// Ends the warm-up phase of `Config::warmup_records` now (a clone for a sampled window
    /// times every record it is given).
    pub fn end_warmup(&mut self) {
        self.warm_left = 0;
    }
}

/// The allocations of a machine a sampled window is done with, cleared for the next window's
/// fork ([`Sim::into_spare`], [`Sim::fork_reusing`]).
pub struct Spare {
    pub(super) eng: Engines,
    pub(super) deps: Option<PointerDeps>,
    pub(super) line_bm: LineMap<([u8; 64], u64)>,
}
