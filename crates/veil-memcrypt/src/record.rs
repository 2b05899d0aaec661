//! The trace records the models consume: one per L2 (last-level cache) fill or dirty writeback,
//! with the line's 64 bytes. This mirrors `veil-trace`'s `Record`; [`crate::synth`] generates
//! such streams for tests.

/// What happened to the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A load missed the L2 and fetched the line.
    LoadFill,
    /// A store missed the L2 and fetched the line (write-allocate).
    StoreFill,
    /// A dirty line left the L2; `data` is what is written back.
    Writeback,
}

/// One L2 miss or writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub thread: u32,
    pub kind: Kind,
    /// Byte address of the line (line-aligned).
    pub addr: u64,
    /// Instructions the thread retired since its previous record.
    pub insts: u64,
    /// L1 misses that hit the L2 since the thread's previous record.
    pub llc_hits: u64,
    pub data: [u8; 64],
}

impl Default for Record {
    fn default() -> Self {
        Record { thread: 0, kind: Kind::LoadFill, addr: 0, insts: 0, llc_hits: 0, data: [0; 64] }
    }
}
