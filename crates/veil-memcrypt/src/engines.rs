//! The crypto engines: `engines` identical pipelines, each accepting one block operation per
//! stage time (latency / stages) and finishing it `latency` later, so the pool as a whole has
//! one issue slot every latency / stages / engines cycles. A request for n operations ready at t
//! takes the first n free slots from t on, wherever earlier requests left gaps (a request may be
//! booked for the future, e.g. a line's decryption when it will have arrived).
//!
//! **Arbitration** (`Arbitration`). Work comes in two classes: *demand* (offsets or pads, demand
//! decryption, MAC checks, writeback encryption, bitmap lines: work the machine cannot do
//! without) and *speculative* (candidate encryptions and MACs). Under `DemandFirst` (the paper's
//! reading: speculation "use[s] idle cycles of pipelined crypto engines", §7) the arbiter at the
//! pipelines' input gives every slot to a ready demand operation first; speculation is lower
//! priority, not pre-emptive: an operation in a pipeline is never aborted (a pipeline cannot
//! give back a stage it has filled without wasting it), a speculative one only enters a slot no
//! demand operation wants. The calendar keeps two rings: demand bookings search only the demand
//! ring (speculation never delays them), speculative bookings search the union. Requests are
//! booked in trace order, so a later miss's demand operation may land on a slot an earlier
//! miss's speculation already holds; the arbiter would have issued the demand operation there
//! and the speculative one later, which the model does not re-time: it counts those
//! `displaced` speculative operations (their results are optimistic by at least one slot).
//! Under `Fcfs` all work shares one ring, served in the order requested: a miss's candidates
//! then occupy slots the demand work of the misses behind it wants.
//! The timing model books a miss's demand requests before its speculation and cancels
//! speculation that could only finish after the demand path (it books only slots before a
//! deadline).

/// How the engines' issue slots are shared between demand and speculative work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arbitration {
    /// Demand work first; speculation only in slots no demand work needs.
    DemandFirst,
    /// One first-come-first-served calendar for all work.
    Fcfs,
}

impl Arbitration {
    pub const KNOWN: [&'static str; 2] = ["demand_first", "fcfs"];

    pub fn parse(s: &str) -> crate::Result<Self> {
        match s {
            "demand_first" => Ok(Arbitration::DemandFirst),
            "fcfs" => Ok(Arbitration::Fcfs),
            _ => Err(crate::Error::config(format!(
                "arbitration: unknown arbitration '{s}' (known: {})",
                Self::KNOWN.join(", ")
            ))),
        }
    }
}

/// Position of the `k`-th (from 0) set bit of `x`, which has more than `k` set bits.
#[inline(always)]
fn select<const BMI2: bool>(x: u64, k: u64) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if BMI2 {
        // SAFETY: instantiated with BMI2 = true only inside `book_bmi2`, on CPUs with BMI2.
        return unsafe { pdep(1 << k, x) }.trailing_zeros();
    }
    let mut f = x;
    for _ in 0..k {
        f &= f - 1;
    }
    f.trailing_zeros()
}

/// The bit of the `k`-th (from 0) set bit of `x`, or 0 when `x` has `k` set bits or fewer
/// (only with BMI2: PDEP computes it in one instruction).
#[inline(always)]
fn select_bit<const BMI2: bool>(x: u64, k: u64) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if BMI2 {
        // SAFETY: instantiated with BMI2 = true only inside `book_bmi2`, on CPUs with BMI2.
        return unsafe { pdep(1u64.checked_shl(k as u32).unwrap_or(0), x) };
    }
    unreachable!("select_bit is only used with BMI2")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
#[inline]
unsafe fn pdep(a: u64, mask: u64) -> u64 {
    core::arch::x86_64::_pdep_u64(a, mask)
}

/// Slots remembered ahead of the oldest one still bookable (a power of two, in u64 words × 64).
const HORIZON_WORDS: usize = 1 << 14;
const HORIZON: u64 = (HORIZON_WORDS * 64) as u64;

/// 2^63 as a float: slot numbers below it convert through i64.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// The ring word holding slot `s`.
#[inline(always)]
fn ring(s: u64) -> usize {
    ((s / 64) as usize) & (HORIZON_WORDS - 1)
}

#[derive(Clone, Debug)]
pub struct Engines {
    /// Core cycles between issue slots of the pool.
    pub iv: f64,
    /// Core cycles from issue to result.
    pub lat: f64,
    /// Occupied slots (every class), a ring over [base, base + HORIZON). Fixed-size arrays:
    /// indices are masked to the ring, so the compiler drops the bounds checks of the booking
    /// loops.
    busy: Box<[u64; HORIZON_WORDS]>,
    /// Slots held by demand work alone (`DemandFirst` only; what demand bookings search), and
    /// its full-word summary.
    dbusy: Box<[u64; HORIZON_WORDS]>,
    dfull: Box<[u64; HORIZON_WORDS / 64]>,
    demand_first: bool,
    /// Speculative operations a later demand booking landed on (see the module doc).
    pub displaced: u64,
    /// One bit per word of `busy`: set when all its 64 slots are taken. When the engines are
    /// saturated, bookings pile up far ahead of the present and a request would otherwise step
    /// through hundreds of full words to find a free slot (it was 90% of the model's time on
    /// memory-bound traces); with this it skips 64 full words per step.
    full: Box<[u64; HORIZON_WORDS / 64]>,
    base: u64,
    pub demand_ops: u64,
    /// Operations spent on speculation alone (candidate encryptions and MACs).
    pub spec_ops: u64,
    /// Operations spent re-encrypting and re-MACing written-back lines: neither demand nor
    /// speculation, and done by every encrypting machine, speculating or not.
    pub writeback_ops: u64,
    /// The CPU has BMI2 and POPCNT (checked once): bookings use them.
    bmi2: bool,
    /// Book as before the speed work (word-by-word walk over full words, portable bit loops,
    /// no one-slot fast path): same results, kept as the benchmark's same-run baseline.
    reference: bool,
}

#[cfg(target_arch = "x86_64")]
fn has_bmi2() -> bool {
    std::is_x86_feature_detected!("bmi2") && std::is_x86_feature_detected!("popcnt")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_bmi2() -> bool {
    false
}

impl Engines {
    /// Switches to the pre-optimisation booking (see `reference`).
    pub fn use_reference_booking(&mut self) {
        self.reference = true;
        self.bmi2 = false;
    }

    /// Books with the portable code only (no POPCNT/BMI2), as on a CPU without them.
    pub fn use_portable_code(&mut self) {
        self.bmi2 = false;
    }

    pub fn new(latency_cycles: f64, stages: u32, engines: u32) -> Self {
        Self::with_arbitration(latency_cycles, stages, engines, Arbitration::Fcfs)
    }

    pub fn with_arbitration(latency_cycles: f64, stages: u32, engines: u32, arb: Arbitration) -> Self {
        let ring = || -> Box<[u64; HORIZON_WORDS]> { vec![0; HORIZON_WORDS].into_boxed_slice().try_into().expect("ring size") };
        let summary =
            || -> Box<[u64; HORIZON_WORDS / 64]> { vec![0; HORIZON_WORDS / 64].into_boxed_slice().try_into().expect("summary size") };
        Engines {
            iv: latency_cycles / stages as f64 / engines as f64,
            lat: latency_cycles,
            busy: ring(),
            full: summary(),
            dbusy: ring(),
            dfull: summary(),
            demand_first: arb == Arbitration::DemandFirst,
            displaced: 0,
            base: 0,
            demand_ops: 0,
            spec_ops: 0,
            writeback_ops: 0,
            bmi2: has_bmi2(),
            reference: false,
        }
    }

    /// Back to the state [`Self::with_arbitration`] gives with the same parameters: every slot
    /// free, nothing counted. A sampled run's windows reuse calendars this way: a new one,
    /// allocated on the pass's thread after another thread freed the last, cost page faults
    /// and zeroing there (`crate::sampled`).
    pub fn reset(&mut self) {
        self.busy.fill(0);
        self.dbusy.fill(0);
        self.full.fill(0);
        self.dfull.fill(0);
        self.base = 0;
        self.displaced = 0;
        self.demand_ops = 0;
        self.spec_ops = 0;
        self.writeback_ops = 0;
    }

    /// The first slot an operation ready at `t` can take.
    #[inline]
    pub fn slot(&self, t: f64) -> u64 {
        // ceil(x) for x >= 0 without a libm call (baseline x86-64 has no rounding instruction);
        // negative and NaN give 0 as `ceil().max(0.0) as u64` did.
        let x = t / self.iv;
        if (0.0..TWO_63).contains(&x) {
            // Below 2^63 the signed conversions give the same values and are one instruction
            // each (x86-64 before AVX-512 has no unsigned ones: `as u64` is a dozen).
            let s = x as i64;
            return if (s as f64) < x { s as u64 + 1 } else { s as u64 };
        }
        let s = x as u64;
        if (s as f64) < x {
            s.saturating_add(1)
        } else {
            s
        }
    }

    /// Issue time of slot `s`.
    #[inline]
    pub fn time(&self, s: u64) -> f64 {
        // The signed conversion below 2^63, as in `slot`: the same value.
        if s < 1 << 63 {
            s as i64 as f64 * self.iv
        } else {
            s as f64 * self.iv
        }
    }

    /// Moves the window so that slot `s` fits, forgetting the oldest slots.
    #[inline(always)]
    fn reach(&mut self, s: u64) {
        if s >= self.base + HORIZON {
            self.move_window(s);
        }
    }

    /// [`Self::reach`]'s rare part (once per half ring), kept out of the booking loops.
    #[cold]
    #[inline(never)]
    fn move_window(&mut self, s: u64) {
        let new_base = (s - HORIZON / 2) & !63;
        // Forget the words from the old base up to the new one (at most the whole ring), in at
        // most two contiguous runs of the ring.
        let words = ((new_base.min(self.base + HORIZON) - self.base) / 64) as usize;
        let start = ((self.base / 64) as usize) & (HORIZON_WORDS - 1);
        let first = words.min(HORIZON_WORDS - start);
        self.forget(start, start + first);
        self.forget(0, words - first);
        self.base = new_base;
    }

    /// Clears ring words `a..b` and their summary bits.
    fn forget(&mut self, a: usize, b: usize) {
        if a >= b {
            return;
        }
        self.busy[a..b].fill(0);
        self.dbusy[a..b].fill(0);
        for i in a / 64..=(b - 1) / 64 {
            let lo = (a.max(i * 64) - i * 64) as u32;
            let hi = (b.min(i * 64 + 64) - i * 64) as u32;
            let span = if hi - lo == 64 { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
            self.full[i] &= !span;
            self.dfull[i] &= !span;
        }
    }

    /// The first slot from word-aligned slot `s` on whose word is not full, or the end of the
    /// window (slots past it alias older words of the ring, and `reach` must move the window
    /// there exactly as a word-by-word walk would).
    #[inline]
    fn skip_full<const DEM: bool>(&self, mut s: u64) -> u64 {
        let end = self.base + HORIZON;
        while s < end {
            let wi = ring(s);
            let open = !(if DEM { self.dfull[wi / 64] } else { self.full[wi / 64] }) >> (wi % 64);
            if open != 0 {
                return (s + 64 * open.trailing_zeros() as u64).min(end);
            }
            s += 64 * (64 - (wi % 64)) as u64;
        }
        end
    }

    /// When an operation booked at slot `s` for work ready at `t` has its result: with zero
    /// latency no slot is booked (every operation issues at once, see `book`).
    #[inline]
    pub fn done(&self, s: u64, t: f64) -> f64 {
        if self.iv > 0.0 {
            self.time(s) + self.lat
        } else {
            t + self.lat
        }
    }

    /// Books up to `n` operations ready at `t` into free slots before slot `limit` (exclusive),
    /// in slot order; returns how many were booked. For each op index in `targets` (ascending)
    /// that was booked, `slots` gets its slot at the same position. Works a 64-slot word at a
    /// time: a miss's few hundred candidates cost a few word operations, not one step each.
    /// This is the speculative class: under `DemandFirst` it takes only slots no demand or
    /// speculative booking holds.
    pub fn book(&mut self, t: f64, n: u64, limit: u64, targets: &[u64], slots: &mut [u64]) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.bmi2 {
            // SAFETY: `bmi2` is set only where the CPU has BMI2 and POPCNT.
            return unsafe { self.book_bmi2::<false>(t, n, limit, targets, slots) };
        }
        self.book_with::<false, false>(t, n, limit, targets, slots)
    }

    /// [`Self::book`] for demand work: under `DemandFirst` it sees only other demand bookings
    /// (speculation never delays it); under `Fcfs` it is `book`.
    pub fn book_demand(&mut self, t: f64, n: u64, limit: u64, targets: &[u64], slots: &mut [u64]) -> u64 {
        if !self.demand_first {
            return self.book(t, n, limit, targets, slots);
        }
        #[cfg(target_arch = "x86_64")]
        if self.bmi2 {
            // SAFETY: `bmi2` is set only where the CPU has BMI2 and POPCNT.
            return unsafe { self.book_bmi2::<true>(t, n, limit, targets, slots) };
        }
        self.book_with::<false, true>(t, n, limit, targets, slots)
    }

    /// [`Self::book`] compiled with POPCNT and BMI2 (PDEP finds the k-th free slot of a word in
    /// one instruction, where the portable code clears bits one at a time: that loop was most
    /// of a booking's cost with hundreds of candidates per miss).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt,bmi1,bmi2")]
    #[inline]
    unsafe fn book_bmi2<const DEM: bool>(&mut self, t: f64, n: u64, limit: u64, targets: &[u64], slots: &mut [u64]) -> u64 {
        self.book_with::<true, DEM>(t, n, limit, targets, slots)
    }

    /// Marks `taken` (slots of ring word `wi`) in the ring a booking of class `DEM` searched and,
    /// for a demand booking under `DemandFirst`, in the union ring too (counting the
    /// speculative operations it lands on).
    #[inline(always)]
    fn take<const DEM: bool>(&mut self, wi: usize, taken: u64) {
        if DEM {
            self.dbusy[wi] |= taken;
            self.dfull[wi / 64] |= ((self.dbusy[wi] == u64::MAX) as u64) << (wi % 64);
            self.displaced += (self.busy[wi] & taken).count_ones() as u64;
        }
        self.busy[wi] |= taken;
        // Set the summary bit when the word is full, without a branch.
        self.full[wi / 64] |= ((self.busy[wi] == u64::MAX) as u64) << (wi % 64);
    }

    #[inline(always)]
    fn searched<const DEM: bool>(&self, wi: usize) -> u64 {
        if DEM {
            self.dbusy[wi]
        } else {
            self.busy[wi]
        }
    }

    #[inline(always)]
    fn book_with<const BMI2: bool, const DEM: bool>(
        &mut self,
        t: f64,
        n: u64,
        limit: u64,
        targets: &[u64],
        slots: &mut [u64],
    ) -> u64 {
        if n == 0 {
            return 0;
        }
        if self.iv <= 0.0 {
            // Zero latency: unlimited throughput, every operation issues at once.
            slots[..targets.len()].fill(0);
            return n;
        }
        let mut s = self.slot(t).max(self.base);
        let mut k = 0u64;
        let mut ti = 0;
        while k < n && s < limit {
            self.reach(s);
            let wi = ring(s);
            let word_base = s & !63;
            let mut free = !self.searched::<DEM>(wi) & (u64::MAX << (s % 64));
            if limit < word_base + 64 {
                free &= (1u64 << (limit - word_base)) - 1;
            }
            let avail = free.count_ones() as u64;
            let take = avail.min(n - k);
            // Keep only the lowest `take` free slots: those below the take-th. Whether a
            // request ends in this word is as good as random (a third of these branches were
            // mispredicted), so with BMI2 it is computed without one: PDEP gives the take-th
            // free slot's bit, or 0 when there are only `take`, and one less is the mask.
            if BMI2 {
                free &= select_bit::<BMI2>(free, take).wrapping_sub(1);
            } else if take < avail {
                free &= (1u64 << select::<BMI2>(free, take)) - 1;
            }
            self.take::<DEM>(wi, free);
            while ti < targets.len() && targets[ti] < k + take {
                slots[ti] = word_base + select::<BMI2>(free, targets[ti] - k) as u64;
                ti += 1;
            }
            k += take;
            s = word_base + 64;
            // The summary walk only when the next word is full (it would return `s` otherwise).
            if k < n && s < self.base + HORIZON && !self.reference && self.searched::<DEM>(ring(s)) == u64::MAX {
                s = self.skip_full::<DEM>(s);
            }
        }
        k
    }

    /// Books `n` demand operations ready at `t`; returns the completion time of the last.
    #[inline(always)]
    pub fn demand(&mut self, t: f64, n: u64) -> f64 {
        self.demand_ops += n;
        if self.iv <= 0.0 {
            return t + self.lat;
        }
        if n == 1 && !self.reference {
            let s = self.book_one(t);
            return self.time(s) + self.lat;
        }
        let mut last = [0u64];
        self.book_demand(t, n, u64::MAX, &[n - 1], &mut last);
        self.time(last[0]) + self.lat
    }

    /// [`Self::book`] of one operation with no deadline, returning its slot: most demand
    /// requests (a chunk's MAC check, a line's offsets) find a free slot in their first word.
    /// Demand class.
    #[inline(always)]
    pub fn book_one(&mut self, t: f64) -> u64 {
        let s = self.slot(t).max(self.base);
        if s < self.base + HORIZON {
            let wi = ring(s);
            let held = if self.demand_first { self.dbusy[wi] } else { self.busy[wi] };
            let free = !held & (u64::MAX << (s % 64));
            if free != 0 {
                let bit = free & free.wrapping_neg();
                if self.demand_first {
                    self.take::<true>(wi, bit);
                } else {
                    self.take::<false>(wi, bit);
                }
                return (s & !63) + bit.trailing_zeros() as u64;
            }
        }
        let mut slot = [0u64];
        self.book_demand(t, 1, u64::MAX, &[0], &mut slot);
        slot[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_pool_issues_one_op_per_slot_and_fills_gaps() {
        // 48-stage TDES at 96 cycles on 2 engines: one slot per cycle.
        let mut e = Engines::new(96.0, 48, 2);
        assert_eq!(e.iv, 1.0);
        // Decryption booked for when its line arrives (t = 300) ...
        assert_eq!(e.demand(300.0, 8), 307.0 + 96.0);
        // ... leaves the slots before it to a miss issued now.
        assert_eq!(e.demand(10.0, 1), 10.0 + 96.0);
        // Speculation from 295 takes 295..299, skips the booked 300..307, goes on at 308.
        let mut slots = [0u64; 8];
        let n = e.book(295.0, 8, u64::MAX, &[0, 1, 2, 3, 4, 5, 6, 7], &mut slots);
        assert_eq!(n, 8);
        assert_eq!(slots, [295, 296, 297, 298, 299, 308, 309, 310]);
        // A deadline cuts a request short.
        assert_eq!(e.book(311.0, 10, 315, &[], &mut []), 4);
        // Across words: 200 ops from slot 311 skip nothing (all free) and end at 510.
        let mut last = [0u64; 2];
        assert_eq!(e.book(311.0, 200, u64::MAX, &[0, 199], &mut last), 200);
        assert_eq!(last, [315, 514]);
        // Far in the future the window moves on and old slots are forgotten.
        assert_eq!(e.demand(1e9, 1), 1e9 + 96.0);
        assert_eq!(e.demand(1e9, 1), 1e9 + 1.0 + 96.0);
    }

    #[test]
    fn bmi2_and_portable_bookings_agree_and_slot_is_ceil() {
        let mut a = Engines::new(65.0, 65, 4);
        let mut b = a.clone();
        b.bmi2 = false;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut t = 0.0;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Steps long enough that the window moves on many times.
            t += (x % 97) as f64 * 3.7;
            let n = 1 + x % 300;
            let limit = if x % 3 == 0 { a.slot(t) + (x >> 20) % 400 } else { u64::MAX };
            let targets: Vec<u64> = (0..n).step_by(1 + (x >> 40) as usize % 37).collect();
            let (mut sa, mut sb) = (vec![0; targets.len()], vec![0; targets.len()]);
            let ka = a.book(t, n, limit, &targets, &mut sa);
            let kb = b.book(t, n, limit, &targets, &mut sb);
            assert_eq!((ka, &sa[..]), (kb, &sb[..]));
        }
        assert_eq!(a.busy, b.busy);
        assert!(a.base > 4 * HORIZON, "the window moved on");
        // The summary marks exactly the full words.
        for (i, &w) in a.busy.iter().enumerate() {
            assert_eq!(a.full[i / 64] >> (i % 64) & 1 == 1, w == u64::MAX, "word {i}");
        }
        for t in [-3.0, -0.25, -0.2, 0.0, 0.1, 0.25, 0.26, 1.0, 7.99, 1e9 + 0.5, 2.0e15 + 0.125, 2.3e15, 1e17, f64::NAN, f64::INFINITY] {
            assert_eq!(a.slot(t), (t / a.iv).ceil().max(0.0) as u64, "t = {t}");
        }
        for s in [0, 1, 12345, (1 << 53) + 1, (1 << 62) + 7, u64::MAX] {
            assert_eq!(a.time(s), s as f64 * a.iv);
        }
    }

    #[test]
    fn demand_first_keeps_speculation_out_of_demand_slots() {
        // One slot per cycle. Speculation booked first (an earlier miss's candidates) ...
        let mut e = Engines::with_arbitration(96.0, 48, 2, Arbitration::DemandFirst);
        assert_eq!(e.book(100.0, 20, u64::MAX, &[], &mut []), 20);
        // ... does not delay a later miss's demand decryption: it takes slot 105 as if alone,
        // and the 8 speculative operations it lands on are counted as displaced.
        assert_eq!(e.demand(105.0, 8), 112.0 + 96.0);
        assert_eq!(e.displaced, 8);
        // Speculation sees both: the next candidates go after everything booked.
        let mut s = [0u64];
        e.book(100.0, 1, u64::MAX, &[0], &mut s);
        assert_eq!(s[0], 120);
        // Under fcfs the same demand request waits behind the candidates.
        let mut f = Engines::with_arbitration(96.0, 48, 2, Arbitration::Fcfs);
        f.book(100.0, 20, u64::MAX, &[], &mut []);
        assert_eq!(f.demand(105.0, 8), 127.0 + 96.0);
        assert_eq!(f.displaced, 0);
        assert!(Arbitration::parse("lifo").unwrap_err().to_string().contains("known: demand_first, fcfs"));
    }
}

