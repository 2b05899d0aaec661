//! PC-SDRAM timing (the paper integrates "a more accurate DRAM model [8] ... bank conflicts,
//! page miss, row miss are modeled based on the PC SDRAM specification"): independent banks
//! with open rows (open-page policy), so an access is a row hit (CAS), a row miss to a closed
//! bank (RCD + CAS) or a row conflict (RP + RCD + CAS), followed by the burst over one shared
//! data bus (64 bytes / bus width beats, one per bus clock). All timings are in bus clocks;
//! the CPU:memory clock ratio turns them into core cycles, so a slower bus (1:6) lengthens
//! every miss. Lines are interleaved across banks at row granularity (row = consecutive lines),
//! so streaming accesses hit open rows.
//!
//! **Requests come in trace order, not time order.** A miss that waits for the line holding its
//! address, a bitmap line, a prefetch or a writeback asks for memory at a time later or earlier
//! than the request made just before it. Holding each bank and the bus in call order (a single
//! `ready` time each) would make an earlier request queue behind a later one's reservation, so
//! that one dependent miss delays every independent miss issued before it in time. Instead the
//! banks and the bus keep their reservations as busy intervals and a request takes the first gap
//! at or after its time that fits, as a controller that sees requests in time order would do.
//! Approximations: the row a request finds open is the row of the reservation before it in time,
//! and a later reservation keeps the row outcome it was booked with when an earlier request is
//! slotted in before it; the caller retires reservations that end before the earliest time any
//! future request can have (the core's time), so the lists stay short, and each list marks its
//! last gap long enough for any request, where the searches start (most later reservations
//! follow one another with no room between them).

/// Row-buffer outcome counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct DramStats {
    pub row_hits: u64,
    pub row_closed: u64,
    pub row_conflicts: u64,
}

/// A reservation: the bank (or the bus) is busy in [start, end); for a bank, the row it opens.
#[derive(Clone, Copy, Debug)]
struct Busy {
    start: f64,
    end: f64,
    row: u64,
}

/// Reservations by start time. Retired ones are skipped by `head` and dropped in batches (a
/// front removal per request cost more than the rest of the search); new ones go in near the
/// end, so the searches run from the end back.
///
/// Most reservations that start after a request's time follow one another with no room
/// between them, so a search used to test every one of them. `open` marks where the last gap
/// that might hold something is: every gap before a reservation at an index (into `v`) above
/// `open` is shorter than `min_hold`, the shortest time any request holds the resource, so
/// no request fits in it whatever row it finds open or however late it can start (a start is
/// never before the end of the reservation before it, and adding is monotone in floating
/// point). The searches start at `open` and give the same gap as a walk over all of them.
#[derive(Clone, Debug)]
struct Reservations {
    v: Vec<Busy>,
    head: usize,
    open: usize,
    min_hold: f64,
}

impl Reservations {
    fn new(min_hold: f64) -> Self {
        Reservations { v: Vec::new(), head: 0, open: 0, min_hold }
    }

    #[inline]
    fn live(&self) -> &[Busy] {
        &self.v[self.head..]
    }

    /// One past the last gap (an index into `live()`) a request may fit in: the gaps before
    /// reservations at this index and above are too short. The gap before the first live
    /// reservation starts at minus infinity and always counts.
    #[inline]
    fn searched(&self) -> usize {
        (self.open.max(self.head) - self.head + 1).min(self.v.len() - self.head)
    }

    /// Whether the gap before `v[at]` (at > 0) is long enough for the shortest hold.
    #[inline]
    fn gap_open(&self, at: usize) -> bool {
        self.v[at - 1].end + self.min_hold <= self.v[at].start
    }

    /// Inserts `b` at `i` (an index into `live()`, which keeps starts sorted).
    #[inline(always)]
    fn insert(&mut self, i: usize, b: Busy) {
        let at = self.head + i;
        if at == self.v.len() {
            // The gap before a reservation added at the end may be the new last long one.
            let free = if i > 0 { self.v[at - 1].end } else { f64::NEG_INFINITY };
            self.open = if free + self.min_hold <= b.start { at } else { self.open };
            self.v.push(b);
        } else {
            self.v.insert(at, b);
            // The gap `b` went into is split in two; the gaps after it move up by one.
            self.open = if self.open > at {
                self.open + 1
            } else if self.gap_open(at + 1) {
                at + 1
            } else {
                at
            };
        }
    }

    /// Skips the reservations at the front that end by `t`; returns the row of the last one.
    #[inline]
    fn retire(&mut self, t: f64) -> Option<u64> {
        let mut row = None;
        while let Some(b) = self.v.get(self.head) {
            if b.end > t {
                break;
            }
            row = Some(b.row);
            self.head += 1;
        }
        if self.head >= 64 && self.head * 2 >= self.v.len() {
            self.v.drain(..self.head);
            self.open = self.open.saturating_sub(self.head);
            self.head = 0;
        }
        row
    }
}

#[derive(Clone, Debug)]
struct Bank {
    busy: Reservations,
    /// The row open after the last retired reservation.
    retired_row: u64,
}

#[derive(Clone)]
pub struct Dram {
    banks: Vec<Bank>,
    /// The data bus's reservations (they never overlap; each lasts one burst).
    bus: Reservations,
    clk: f64,
    t_cas: f64,
    t_rcd: f64,
    t_rp: f64,
    beats: f64,
    bus_bytes: u32,
    /// Lines per row and banks as shifts and masks where they are powers of two (a 64-bit
    /// division takes tens of cycles, and the model divides twice per access).
    row_shift: u32,
    bank_shift: Option<u32>,
    pipelined_cas: bool,
    /// By row outcome, in core cycles: the latency from the command to the data, and how long
    /// the bank is held with no wait for the bus (computed once, as `latency` and `hold` do).
    lat_cycles: [f64; 3],
    hold_cycles: [f64; 3],
    /// Accesses by row outcome (hit, closed, conflict): indexed, not matched, since the outcome
    /// is as good as random and a branch on it mispredicts.
    counts: [u64; 3],
    /// Every access as a bus observer sees it, (command time, line, last beat), when asked
    /// for (`log_accesses`): the memory bus's view for the leakage observer.
    log: Option<Vec<(f64, u64, f64)>>,
}

const CLOSED: u64 = u64::MAX;

/// Row outcome of an access: 0 a hit, 1 a closed bank, 2 a conflict (an index, not a branch).
#[inline]
fn outcome(open: u64, row: u64) -> usize {
    (open != row) as usize + (open != row && open != CLOSED) as usize
}

/// The later of two times (neither is NaN): `f64::max` also handles NaN, at six instructions.
#[inline]
fn later(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

impl Dram {
    /// `clk` = core cycles per bus clock; timings in bus clocks; `row_bytes` a power of two of
    /// at least one line.
    #[allow(clippy::too_many_arguments)]
    pub fn new(banks: u32, row_bytes: u64, bus_bytes: u32, clk: f64, t_cas: f64, t_rcd: f64, t_rp: f64, pipelined_cas: bool) -> Self {
        assert!(row_bytes >= 64 && row_bytes.is_power_of_two(), "row_bytes: a power of two >= 64");
        let mut d = Dram {
            banks: Vec::new(),
            bus: Reservations::new(0.0),
            clk,
            t_cas,
            t_rcd,
            t_rp,
            beats: (64 / bus_bytes) as f64,
            bus_bytes,
            row_shift: (row_bytes / 64).trailing_zeros(),
            bank_shift: banks.is_power_of_two().then(|| banks.trailing_zeros()),
            pipelined_cas,
            lat_cycles: [0.0; 3],
            hold_cycles: [0.0; 3],
            counts: [0; 3],
            log: None,
        };
        for o in 0..3 {
            d.lat_cycles[o] = d.latency(o) * clk;
            d.hold_cycles[o] = d.hold(d.latency(o));
        }
        let min_hold = d.hold_cycles.iter().copied().fold(f64::INFINITY, f64::min);
        d.banks = vec![Bank { busy: Reservations::new(min_hold), retired_row: CLOSED }; banks as usize];
        d.bus = Reservations::new(d.beats * clk);
        d
    }

    /// Bus clocks from the bank's command to the data, by row outcome.
    #[inline]
    fn latency(&self, o: usize) -> f64 {
        [self.t_cas, self.t_rcd + self.t_cas, self.t_rp + self.t_rcd + self.t_cas][o]
    }

    /// Accesses so far by row outcome.
    pub fn stats(&self) -> DramStats {
        DramStats { row_hits: self.counts[0], row_closed: self.counts[1], row_conflicts: self.counts[2] }
    }

    /// Core cycles the bank is held from its command, with no wait for the bus: until the burst
    /// is out of the array (pipelined CAS) or until the burst starts.
    #[inline]
    fn hold(&self, lat: f64) -> f64 {
        if self.pipelined_cas {
            // The column read issues CAS before its data; the bank takes its next command (a read
            // to the open row, or a precharge) once the burst has been read out of the array,
            // while this read's CAS latency runs: PC SDRAM allows READ to READ and READ to
            // PRECHARGE after the burst length, not after CL.
            (lat - self.t_cas + self.beats) * self.clk
        } else {
            lat * self.clk
        }
    }

    /// The bank of a line and its row there: rows are interleaved across the banks.
    #[inline]
    fn place(&self, line: u64) -> (usize, u64) {
        let row_seq = line >> self.row_shift;
        match self.bank_shift {
            Some(s) => ((row_seq & ((1 << s) - 1)) as usize, row_seq >> s),
            None => {
                let nb = self.banks.len() as u64;
                ((row_seq % nb) as usize, row_seq / nb)
            }
        }
    }

    /// Reads or writes one 64-byte line (line index) requested at core cycle `t`; returns the
    /// cycle its last beat has crossed the bus.
    #[inline]
    pub fn access(&mut self, t: f64, line: u64) -> f64 {
        self.access_extra(t, line, 0)
    }

    /// [`Self::access`] of a line with `extra_bytes` more stored beside it in the same row (its
    /// MACs): one longer burst (extra beats on the bus) that holds the bank as much longer.
    #[inline]
    pub fn access_extra(&mut self, t: f64, line: u64, extra_bytes: u32) -> f64 {
        let extra = extra_bytes.div_ceil(self.bus_bytes) as f64 * self.clk;
        let (bi, row) = self.place(line);

        // The bank: the earliest gap at or after t that holds the command, with the row the
        // reservation before it left open. Walked from the last gap that may be long enough
        // back; gaps before a reservation that starts by t cannot hold it, nor can any earlier
        // one.
        let (bank_at, start, o) = {
            let b = &self.banks[bi];
            let live = b.busy.live();
            let prev = |k: usize| if k > 0 { (live[k - 1].row, live[k - 1].end) } else { (b.retired_row, f64::NEG_INFINITY) };
            // Only the position is kept in the loop, so that it needs no branch but its exit.
            let mut at = live.len();
            let mut k = b.busy.searched();
            while k > 0 && live[k - 1].start > t {
                let (open, free) = prev(k - 1);
                let fits = later(t, free) + self.hold_cycles[outcome(open, row)] + extra <= live[k - 1].start;
                at = if fits { k - 1 } else { at };
                k -= 1;
            }
            let (open, free) = prev(at);
            (at, later(t, free), outcome(open, row))
        };
        self.counts[o] += 1;
        let lat = self.lat_cycles[o];

        // The bus: the earliest gap at or after the data's time that holds the burst, found
        // the same way.
        let burst = self.bus.min_hold + extra;
        let ready = start + lat;
        let (bus_at, data) = {
            let live = self.bus.live();
            let free = |k: usize| if k > 0 { live[k - 1].end } else { f64::NEG_INFINITY };
            let mut at = live.len();
            let mut k = self.bus.searched();
            while k > 0 && live[k - 1].start >= ready + burst {
                let fits = later(ready, free(k - 1)) + burst <= live[k - 1].start;
                at = if fits { k - 1 } else { at };
                k -= 1;
            }
            (at, later(ready, free(at)))
        };
        let done = data + burst;
        self.bus.insert(bus_at, Busy { start: data, end: done, row: 0 });

        // The bank is held as long as its burst waits for the bus.
        let end = data - lat + self.hold_cycles[o] + extra;
        self.banks[bi].busy.insert(bank_at, Busy { start, end, row });
        if let Some(log) = &mut self.log {
            log.push((start, line, done));
        }
        done
    }

    /// From now on, keep every access (command time, line, last beat) for [`Self::accesses`].
    pub fn log_accesses(&mut self) {
        self.log.get_or_insert_with(Vec::new);
    }

    /// The accesses kept since [`Self::log_accesses`] (empty if it was not called).
    pub fn accesses(&self) -> &[(f64, u64, f64)] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// Forgets reservations that end by `t`: no request is made before the core's time, so
    /// they can no longer delay one (a bank keeps the row its last one left open).
    #[inline]
    pub fn retire(&mut self, t: f64) {
        self.bus.retire(t);
        for b in &mut self.banks {
            if let Some(row) = b.busy.retire(t) {
                b.retired_row = row;
            }
        }
    }

    /// Functional warm-up: `line`'s row is left open in its bank, as an access would leave it,
    /// without timing (only before the first timed access: reservations are not touched).
    pub fn warm(&mut self, line: u64) {
        let (bi, row) = self.place(line);
        self.banks[bi].retired_row = row;
    }

    /// Latency of an isolated access of each kind, core cycles: (hit, closed, conflict).
    pub fn unloaded(&self) -> (f64, f64, f64) {
        let burst = self.bus.min_hold;
        (self.lat_cycles[0] + burst, self.lat_cycles[1] + burst, self.lat_cycles[2] + burst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Table 2's SDRAM at 1:5: 4 banks, 4 KB rows (64 lines), CAS 20, RCD 7, RP 7, 8 beats.
    fn table2() -> Dram {
        Dram::new(4, 4096, 8, 5.0, 20.0, 7.0, 7.0, true)
    }

    #[test]
    fn isolated_accesses_cost_their_unloaded_latency() {
        let mut d = table2();
        let (hit, closed, conflict) = d.unloaded();
        assert_eq!((hit, closed, conflict), (140.0, 175.0, 210.0));
        assert_eq!(d.access(0.0, 0), closed);
        assert_eq!(d.access(1000.0, 1), 1000.0 + hit);
        // Line 256 is row 1 of bank 0: a conflict.
        assert_eq!(d.access(2000.0, 256), 2000.0 + conflict);
        // After a retire the bank still knows its open row.
        d.retire(5000.0);
        assert_eq!(d.access(5000.0, 257), 5000.0 + hit);
    }

    #[test]
    fn simultaneous_requests_share_the_bus_and_a_bank() {
        let mut d = table2();
        // Banks 0 and 1 (lines 0 and 64): both closed, the second burst follows the first.
        assert_eq!(d.access(0.0, 0), 175.0);
        assert_eq!(d.access(0.0, 64), 215.0);
        // Bank 0 again, another row: it takes its command once the first burst is out of the
        // array (RCD + 8 beats = 75 cycles), then RP + RCD + CAS + the burst.
        assert_eq!(d.access(0.0, 256), 75.0 + 210.0);
    }

    #[test]
    fn a_request_for_later_does_not_delay_an_earlier_one() {
        // Booked in this order: a dependent miss at 1000, then an independent one at 0 (another
        // bank) and one at 0 in the same bank, which fits before the reservation at 1000.
        let mut d = table2();
        assert_eq!(d.access(1000.0, 0), 1175.0);
        assert_eq!(d.access(0.0, 64), 175.0);
        assert_eq!(d.access(0.0, 1), 175.0 + 40.0, "same bank, closed row, after line 64's burst");
        // A burst that fits in a gap of the bus takes it; one that would overlap a reserved burst
        // (line 0's, 1135..1175) goes after it.
        assert_eq!(d.access(850.0, 128), 1025.0);
        assert_eq!(d.access(1000.0, 192), 1175.0 + 40.0);
    }

    /// The search as it was before the gap marker (`Reservations::open`), the precomputed
    /// latencies and the shifts: every reservation that starts after the request is tried, from
    /// the last one back. The model must give exactly its results.
    mod walk_all {
        use super::super::{outcome, Busy, DramStats, Reservations, CLOSED};

        /// The lists as they were: a plain insert (`Reservations::retire` is unchanged but for
        /// moving the marker, which this search never reads).
        fn insert(r: &mut Reservations, i: usize, b: Busy) {
            r.v.insert(r.head + i, b);
        }

        /// The timings, `latency` and `hold` are the model's (unchanged); the lists, the
        /// search and the counts are the reference's own.
        pub struct Dram {
            p: super::super::Dram,
            banks: Vec<(Reservations, u64)>,
            bus: Reservations,
            lines_per_row: u64,
            counts: [u64; 3],
        }

        impl Dram {
            #[allow(clippy::too_many_arguments)]
            pub fn new(banks: u32, row_bytes: u64, bus_bytes: u32, clk: f64, t_cas: f64, t_rcd: f64, t_rp: f64, pipelined_cas: bool) -> Self {
                Dram {
                    p: super::super::Dram::new(banks, row_bytes, bus_bytes, clk, t_cas, t_rcd, t_rp, pipelined_cas),
                    banks: vec![(Reservations::new(0.0), CLOSED); banks as usize],
                    bus: Reservations::new(0.0),
                    lines_per_row: row_bytes / 64,
                    counts: [0; 3],
                }
            }

            pub fn stats(&self) -> DramStats {
                DramStats { row_hits: self.counts[0], row_closed: self.counts[1], row_conflicts: self.counts[2] }
            }

            pub fn access(&mut self, t: f64, line: u64) -> f64 {
                let row_seq = line / self.lines_per_row;
                let nb = self.banks.len() as u64;
                let bi = (row_seq % nb) as usize;
                let row = row_seq / nb;
                let (bank_at, start, o) = {
                    let (busy, retired_row) = &self.banks[bi];
                    let live = busy.live();
                    let prev = |k: usize| if k > 0 { (live[k - 1].row, live[k - 1].end) } else { (*retired_row, f64::NEG_INFINITY) };
                    let (open, free) = prev(live.len());
                    let mut best = (live.len(), t.max(free), outcome(open, row));
                    let mut k = live.len();
                    while k > 0 && live[k - 1].start > t {
                        let (open, free) = prev(k - 1);
                        let (o, s) = (outcome(open, row), t.max(free));
                        if s + self.p.hold(self.p.latency(o)) <= live[k - 1].start {
                            best = (k - 1, s, o);
                        }
                        k -= 1;
                    }
                    best
                };
                self.counts[o] += 1;
                let lat = self.p.latency(o);
                let burst = self.p.beats * self.p.clk;
                let ready = start + lat * self.p.clk;
                let (bus_at, data) = {
                    let live = self.bus.live();
                    let free = |k: usize| if k > 0 { live[k - 1].end } else { f64::NEG_INFINITY };
                    let mut best = (live.len(), ready.max(free(live.len())));
                    let mut k = live.len();
                    while k > 0 && live[k - 1].start >= ready + burst {
                        let c = ready.max(free(k - 1));
                        if c + burst <= live[k - 1].start {
                            best = (k - 1, c);
                        }
                        k -= 1;
                    }
                    best
                };
                let done = data + burst;
                insert(&mut self.bus, bus_at, Busy { start: data, end: done, row: 0 });
                let end = data - lat * self.p.clk + self.p.hold(lat);
                insert(&mut self.banks[bi].0, bank_at, Busy { start, end, row });
                done
            }

            pub fn retire(&mut self, t: f64) {
                self.bus.retire(t);
                for (busy, retired_row) in &mut self.banks {
                    if let Some(row) = busy.retire(t) {
                        *retired_row = row;
                    }
                }
            }
        }
    }

    /// Checks what the searches rely on: starts in order, and every gap after `open` too short
    /// for the shortest hold.
    fn check_marker(r: &Reservations) {
        let live = r.live();
        for k in 1..live.len() {
            assert!(live[k - 1].start <= live[k].start, "starts out of order at {k}");
            if r.head + k > r.open {
                assert!(live[k - 1].end + r.min_hold > live[k].start, "gap {k} after the marker {} is long enough", r.open);
            }
        }
    }

    #[test]
    fn the_gap_marker_finds_what_a_walk_over_every_reservation_finds() {
        use rand::{Rng, SeedableRng};
        // Table 2's SDRAM with and without pipelined CAS at three clock ratios, a bank count that
        // is not a power of two (division, not a mask), and short timings with a 16-byte bus.
        let machines: [(u32, u64, u32, f64, f64, f64, f64); 5] = [
            (4, 4096, 8, 5.0, 20.0, 7.0, 7.0),
            (4, 4096, 8, 4.0, 20.0, 7.0, 7.0),
            (8, 2048, 8, 6.0, 20.0, 7.0, 7.0),
            (3, 1024, 8, 1.0, 3.0, 3.0, 3.0),
            (2, 128, 16, 1.0, 2.0, 0.0, 5.0),
        ];
        let mut compared = 0u64;
        for (m, &(banks, row_bytes, bus, clk, cas, rcd, rp)) in machines.iter().enumerate() {
            for pipelined in [true, false] {
                let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(m as u64 * 2 + pipelined as u64);
                let mut new = Dram::new(banks, row_bytes, bus, clk, cas, rcd, rp, pipelined);
                let mut old = walk_all::Dram::new(banks, row_bytes, bus, clk, cas, rcd, rp, pipelined);
                // The core's time; requests come at it, shortly after, far later (a dependent
                // miss), on the clock's grid or off it, and now and then before it.
                let mut now = 0.0f64;
                let mut line = 0u64;
                let mut next_retire = 0u32;
                // Bursts that went into a gap before one booked earlier: the searches' hard case.
                let (mut latest, mut slotted) = (0.0f64, 0u32);
                for n in 0..40_000u32 {
                    now += [0.0, 1.0, 7.5, rng.gen_range(0.0..60.0)][rng.gen_range(0..4)];
                    let t = match rng.gen_range(0..10) {
                        0..=2 => now,
                        3..=5 => now + rng.gen_range(0..200) as f64,
                        6 => now + rng.gen_range(0.0..3000.0),
                        7 => now + rng.gen_range(0..40) as f64 * clk,
                        8 => (now - rng.gen_range(0.0..100.0)).max(0.0),
                        _ => now + rng.gen_range(0.0..20.0),
                    };
                    // Runs of lines (row hits), a small set of rows (conflicts), anywhere.
                    line = match rng.gen_range(0..3) {
                        0 => line + 1,
                        1 => rng.gen_range(0..64u64) * (row_bytes / 64) * rng.gen_range(1..4u64),
                        _ => rng.gen_range(0..1u64 << 24),
                    };
                    let (a, b) = (new.access(t, line), old.access(t, line));
                    assert_eq!(a.to_bits(), b.to_bits(), "machine {m}, pipelined {pipelined}, request {n} at {t} for line {line}: {a} vs {b}");
                    compared += 1;
                    slotted += (a < latest) as u32;
                    latest = latest.max(a);
                    if next_retire == 0 {
                        new.retire(now);
                        old.retire(now);
                        next_retire = rng.gen_range(0..300);
                    }
                    next_retire -= 1;
                    if n % 997 == 0 {
                        check_marker(&new.bus);
                        new.banks.iter().for_each(|b| check_marker(&b.busy));
                    }
                }
                let (a, b) = (new.stats(), old.stats());
                assert_eq!((a.row_hits, a.row_closed, a.row_conflicts), (b.row_hits, b.row_closed, b.row_conflicts));
                assert!(a.row_hits > 1000 && a.row_closed > 0 && a.row_conflicts > 1000, "machine {m}: {a:?}");
                assert!(slotted > 3000, "machine {m}: {slotted} bursts slotted into gaps");
            }
        }
        assert_eq!(compared, 400_000);
    }

    #[test]
    fn monotone_requests_are_served_in_order() {
        // In time order the gaps change nothing: each access waits for its bank and the bus as
        // a first-come first-served controller would make it.
        let mut d = table2();
        let mut last = 0.0;
        for k in 0..64u64 {
            let done = d.access(k as f64 * 10.0, (k * 97) % 1024);
            assert!(done >= last + 40.0 || k == 0, "bursts never overlap: {k} {done} {last}");
            last = done;
        }
    }
}
