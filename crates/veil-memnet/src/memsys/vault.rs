//! A vault controller of a 3D-stacked memory module: one request queue, FR-FCFS scheduling
//! over the vault's banks (layers x banks per layer), and DRAM bank timing.
//!
//! Timing is kept per bank (open row, when its next command sequence may start, last
//! activation and last write) and per vault (the TSV data bus: one line every
//! `max(tCCD, line)` cycles). A request is decided whole when it is scheduled: closed page =
//! activate, column command tRCD later, data tCL later, auto-precharge after tRAS / write
//! recovery; open page = a row hit goes straight to the column command, a miss precharges
//! the open row first (tRP). FR-FCFS (Rixner et al., ISCA 2000): among the first `window`
//! queued requests, the oldest row hit whose bank is free goes first, else the oldest request
//! whose bank is free.

use std::collections::VecDeque;

/// DRAM timing in network cycles (see `ModuleConfig` for the values in ns and their sources).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub trp: u64,
    pub tccd: u64,
    pub trcd: u64,
    pub tcl: u64,
    pub twr: u64,
    pub tras: u64,
    /// Data bus cycles of one line (bursts per line x tBURST).
    pub line: u64,
    pub open_page: bool,
    pub window: usize,
}

#[derive(Clone, Copy, Debug)]
pub struct Req {
    pub msg: u32,
    pub bank: u32,
    pub row: u64,
    pub write: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    open_row: Option<u64>,
    /// The bank may start its next command sequence (it was given a column command).
    free_at: u64,
    /// Closed page: precharge done; open page: unused.
    pre_done: u64,
    act_at: u64,
    wr_done: u64,
}

#[derive(Clone, Debug, Default)]
pub struct VaultStats {
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    pub max_queue: usize,
}

#[derive(Clone, Debug)]
pub struct Vault {
    pub queue: VecDeque<Req>,
    banks: Vec<Bank>,
    col_ready: u64,
    /// Nothing can be scheduled before this cycle (all candidate banks busy).
    pub wake: u64,
    pub stats: VaultStats,
}

impl Vault {
    pub fn new(banks: usize) -> Self {
        Self { queue: VecDeque::new(), banks: vec![Bank::default(); banks], col_ready: 0, wake: 0, stats: VaultStats::default() }
    }

    pub fn push(&mut self, r: Req) {
        self.queue.push_back(r);
        self.stats.max_queue = self.stats.max_queue.max(self.queue.len());
        self.wake = 0;
    }

    /// Schedules at most one request at cycle `now`: returns it and the cycle its data
    /// transfer ends (read data out of the vault, or write data written).
    pub fn schedule(&mut self, now: u64, t: &Timing) -> Option<(Req, u64)> {
        if self.queue.is_empty() || now < self.wake {
            return None;
        }
        let n = self.queue.len().min(t.window);
        let mut pick = None;
        let mut earliest = u64::MAX;
        for i in 0..n {
            let r = self.queue[i];
            let b = &self.banks[r.bank as usize];
            if b.free_at > now {
                earliest = earliest.min(b.free_at);
                continue;
            }
            if t.open_page && b.open_row == Some(r.row) {
                pick = Some(i);
                break;
            }
            if pick.is_none() {
                pick = Some(i);
                if !t.open_page {
                    break;
                }
            }
        }
        let Some(i) = pick else {
            self.wake = earliest;
            return None;
        };
        let r = self.queue.remove(i).unwrap();
        let b = &mut self.banks[r.bank as usize];
        let col = if t.open_page && b.open_row == Some(r.row) {
            self.stats.row_hits += 1;
            now.max(self.col_ready)
        } else {
            let act = if t.open_page {
                match b.open_row {
                    Some(_) => now.max(b.act_at + t.tras).max(b.wr_done + t.twr) + t.trp,
                    None => now,
                }
            } else {
                now.max(b.pre_done)
            };
            b.act_at = act;
            b.open_row = Some(r.row);
            (act + t.trcd).max(self.col_ready)
        };
        let done = col + t.tcl + t.line;
        if r.write {
            b.wr_done = done;
            self.stats.writes += 1;
        } else {
            self.stats.reads += 1;
        }
        self.col_ready = col + t.tccd.max(t.line);
        b.free_at = col;
        if !t.open_page {
            // Auto-precharge: after the data (reads) or write recovery (writes), not before tRAS.
            let pre = (b.act_at + t.tras).max(if r.write { done + t.twr } else { col + t.line });
            b.pre_done = pre + t.trp;
            b.open_row = None;
            b.free_at = col;
        }
        self.wake = 0;
        Some((r, done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(open: bool) -> Timing {
        Timing { trp: 10, tccd: 4, trcd: 13, tcl: 13, twr: 10, tras: 27, line: 8, open_page: open, window: 32 }
    }

    /// Steps from `now` until the vault schedules something: (request, data end).
    fn next_scheduled(v: &mut Vault, mut now: u64, t: &Timing) -> (Req, u64) {
        loop {
            if let Some(x) = v.schedule(now, t) {
                return x;
            }
            now += 1;
        }
    }

    #[test]
    fn closed_page_read_takes_trcd_tcl_and_the_burst() {
        let mut v = Vault::new(8);
        v.push(Req { msg: 0, bank: 0, row: 5, write: false });
        let (_, done) = v.schedule(100, &timing(false)).unwrap();
        assert_eq!(done, 100 + 13 + 13 + 8);
        // The same bank again: it must wait for tRAS and tRP.
        v.push(Req { msg: 1, bank: 0, row: 5, write: false });
        let (_, done2) = next_scheduled(&mut v, 101, &timing(false));
        assert_eq!(done2, 100 + 27 + 10 + 13 + 13 + 8);
    }

    #[test]
    fn fr_fcfs_prefers_the_open_row() {
        let t = timing(true);
        let mut v = Vault::new(8);
        v.push(Req { msg: 0, bank: 0, row: 1, write: false });
        v.schedule(0, &t).unwrap();
        v.push(Req { msg: 1, bank: 0, row: 2, write: false });
        v.push(Req { msg: 2, bank: 0, row: 1, write: false });
        let (first, _) = next_scheduled(&mut v, 1, &t);
        assert_eq!(first.msg, 2, "the row hit goes before the older miss");
        assert_eq!(v.stats.row_hits, 1);
    }

    #[test]
    fn open_page_miss_pays_precharge() {
        let t = timing(true);
        let mut v = Vault::new(8);
        v.push(Req { msg: 0, bank: 3, row: 1, write: false });
        v.schedule(0, &t).unwrap();
        v.push(Req { msg: 1, bank: 3, row: 9, write: false });
        let (_, done) = next_scheduled(&mut v, 1, &t);
        // precharge after tRAS (27), +tRP, +tRCD, +tCL, +line.
        assert_eq!(done, 27 + 10 + 13 + 13 + 8);
    }
}
