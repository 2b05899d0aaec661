//! The functional model over a record stream (`memcrypt.check`): every record through
//! [`SecureMemory`] with real ciphers, MACs, speculation and counters, counting what it finds.

use serde::Serialize;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::fvt::Fvt;
use crate::layout;
use crate::record::{Kind, Record};
use crate::secure::{Counters, SecureMemory};
use crate::tree::BlockOrg;

/// What the functional model found over a whole input.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Check {
    pub fetches: u64,
    pub writebacks: u64,
    /// Fetches that decrypted and authenticated, but to other bytes than the trace's: memory
    /// changed behind the cache (a device or the kernel wrote it, e.g. a file read). The line is
    /// then written again as such a write would (a decryption error would fail its MAC instead,
    /// since MACs cover the plaintext). Zero on a consistent (synthetic) trace.
    pub external_updates: u64,
    /// MAC failures on untampered memory.
    pub integrity_failures: u64,
    pub ct_hits: u64,
    pub mac_hits: u64,
    pub false_hits: u64,
    pub chunks: u64,
    pub spec_ops: u64,
    /// Split counters in memory: minor-counter overflows, and the stored lines they
    /// re-encrypted (every other line of the block memory holds: authenticated and decrypted
    /// under the old nonce, sealed under the new one).
    pub counter_overflows: u64,
    pub overflow_lines: u64,
}

/// The functional model's state over a stream, one record at a time.
pub struct Checker {
    mem: SecureMemory,
    fvt: Fvt,
    c: Check,
}

impl Checker {
    pub fn new(cfg: &Config) -> Result<Self> {
        let scheme = cfg.validate()?;
        let org = BlockOrg::parse(&cfg.counter_block, cfg.minor_counter_bits)?;
        let counters = Counters::with_block(&cfg.counters, cfg.tree_arity, org, cfg.seed)?;
        Ok(Checker {
            mem: SecureMemory::with_counters(scheme, cfg.seed, counters)?,
            fvt: Fvt::new(cfg.fvt_size, cfg.fvt_candidates, cfg.fvt_promote),
            c: Check::default(),
        })
    }

    pub fn step(&mut self, r: &Record) -> Result<()> {
        let (mem, fvt, c) = (&mut self.mem, &mut self.fvt, &mut self.c);
        let line = r.addr >> 6;
        if r.kind == Kind::Writeback {
            c.writebacks += 1;
            return mem.write_line(line, &r.data, fvt);
        }
        if !mem.contains(line) {
            mem.load_line(line, &r.data, fvt)?;
        }
        c.fetches += 1;
        match mem.fetch_line(line, fvt) {
            Ok(f) => {
                if f.plaintext != r.data {
                    c.external_updates += 1;
                    mem.write_line(line, &r.data, fvt)?;
                }
                c.ct_hits += f.ct_hits as u64;
                c.mac_hits += f.mac_hits as u64;
                c.false_hits += f.false_hits as u64;
                c.chunks += f.chunks as u64;
                c.spec_ops += f.spec_ops;
            }
            Err(Error::Integrity(_)) => c.integrity_failures += 1,
            Err(e) => return Err(e),
        }
        for x in layout::words(&r.data) {
            fvt.observe(x);
        }
        Ok(())
    }

    pub fn finish(mut self) -> Check {
        (self.c.counter_overflows, self.c.overflow_lines) = self.mem.overflows();
        self.c
    }
}
