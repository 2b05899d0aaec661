//! PC-SDRAM timing (the paper integrates "a more accurate DRAM model [8] ... bank conflicts,
//! page miss, row miss are modeled based on the PC SDRAM specification"): independent banks
//! with open rows (open-page policy), so an access is a row hit (CAS), a row miss to a closed
//! bank (RCD + CAS) or a row conflict (RP + RCD + CAS), followed by the burst over one shared
//! data bus (64 bytes / bus width beats, one per bus clock). All timings are in bus clocks;
//! the CPU:memory clock ratio turns them into core cycles, so a slower bus (1:6) lengthens
//! every miss. Lines are interleaved across banks at row granularity (row = consecutive lines),
//! so streaming accesses hit open rows.

/// Row-buffer outcome counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct DramStats {
    pub row_hits: u64,
    pub row_closed: u64,
    pub row_conflicts: u64,
}

#[derive(Clone, Copy, Debug)]
struct Bank {
    open_row: u64,
    ready: f64,
}

pub struct Dram {
    banks: Vec<Bank>,
    bus_free: f64,
    clk: f64,
    t_cas: f64,
    t_rcd: f64,
    t_rp: f64,
    beats: f64,
    lines_per_row: u64,
    pipelined_cas: bool,
    pub stats: DramStats,
}

const CLOSED: u64 = u64::MAX;

impl Dram {
    /// `clk` = core cycles per bus clock; timings in bus clocks.
    #[allow(clippy::too_many_arguments)]
    pub fn new(banks: u32, row_bytes: u64, bus_bytes: u32, clk: f64, t_cas: f64, t_rcd: f64, t_rp: f64, pipelined_cas: bool) -> Self {
        Dram {
            banks: vec![Bank { open_row: CLOSED, ready: 0.0 }; banks as usize],
            bus_free: 0.0,
            clk,
            t_cas,
            t_rcd,
            t_rp,
            beats: (64 / bus_bytes) as f64,
            lines_per_row: row_bytes / 64,
            pipelined_cas,
            stats: DramStats::default(),
        }
    }

    /// Reads or writes one 64-byte line (line index) requested at core cycle `t`; returns the
    /// cycle its last beat has crossed the bus.
    #[inline]
    pub fn access(&mut self, t: f64, line: u64) -> f64 {
        let row_seq = line / self.lines_per_row;
        let nb = self.banks.len() as u64;
        let b = &mut self.banks[(row_seq % nb) as usize];
        let row = row_seq / nb;
        let start = t.max(b.ready);
        let lat = if b.open_row == row {
            self.stats.row_hits += 1;
            self.t_cas
        } else if b.open_row == CLOSED {
            self.stats.row_closed += 1;
            self.t_rcd + self.t_cas
        } else {
            self.stats.row_conflicts += 1;
            self.t_rp + self.t_rcd + self.t_cas
        };
        b.open_row = row;
        let data = (start + lat * self.clk).max(self.bus_free);
        let done = data + self.beats * self.clk;
        self.bus_free = done;
        b.ready = if self.pipelined_cas {
            // The column read issues CAS before its data (later when the bus is busy); the bank
            // takes its next command (a read to the open row, or a precharge) once the burst has
            // been read out of the array, while this read's CAS latency runs: PC SDRAM allows
            // READ to READ and READ to PRECHARGE after the burst length, not after CL.
            data - self.t_cas * self.clk + self.beats * self.clk
        } else {
            // The bank is held until the burst starts.
            data
        };
        done
    }

    /// Latency of an isolated access of each kind, core cycles: (hit, closed, conflict).
    pub fn unloaded(&self) -> (f64, f64, f64) {
        let x = self.beats * self.clk;
        (
            self.t_cas * self.clk + x,
            (self.t_rcd + self.t_cas) * self.clk + x,
            (self.t_rp + self.t_rcd + self.t_cas) * self.clk + x,
        )
    }
}
