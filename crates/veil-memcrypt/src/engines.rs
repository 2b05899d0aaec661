//! The crypto engines: `engines` identical pipelines, each accepting one block operation per
//! stage time (latency / stages) and finishing it `latency` later. Demand work (offsets or
//! pads, decryption, MAC checks) and speculative work (candidate encryptions and MACs,
//! writeback encryption) share them. The pool is a booking timeline: a request for n
//! operations at time t takes the next n issue slots (one every latency / stages / engines)
//! from t on. With `demand_priority`, demand requests take slots ahead of queued speculation,
//! pushing the speculation booked after that point back by the slots they take (speculation
//! already accounted to earlier misses is not revisited); without it, one FIFO queue serves
//! both classes. Either way a miss's candidate encryptions delay the candidates of the misses
//! behind it, which is why a larger FVT can make a burst of misses slower (paper §6.4).

#[derive(Clone, Debug)]
pub struct Engines {
    /// Core cycles between issues across the pool.
    pub iv: f64,
    /// Core cycles from issue to result.
    pub lat: f64,
    dem_free: f64,
    spec_free: f64,
    priority: bool,
    pub demand_ops: u64,
    pub spec_ops: u64,
}

impl Engines {
    pub fn new(latency_cycles: f64, stages: u32, engines: u32, priority: bool) -> Self {
        Engines {
            iv: latency_cycles / stages as f64 / engines as f64,
            lat: latency_cycles,
            dem_free: 0.0,
            spec_free: 0.0,
            priority,
            demand_ops: 0,
            spec_ops: 0,
        }
    }

    /// Books `n` demand operations ready at `t`; returns the first one's issue time (op k
    /// issues at start + k·iv and completes `lat` later).
    #[inline]
    pub fn demand(&mut self, t: f64, n: u64) -> f64 {
        self.demand_ops += n;
        let span = n as f64 * self.iv;
        if self.priority {
            let s = t.max(self.dem_free);
            self.dem_free = s + span;
            if self.spec_free > s {
                self.spec_free += span;
            }
            s
        } else {
            let s = t.max(self.dem_free);
            self.dem_free = s + span;
            s
        }
    }

    /// Where speculation ready at `t` would start (book it with [`Self::spec_commit`]).
    #[inline]
    pub fn spec_start(&self, t: f64) -> f64 {
        if self.priority {
            t.max(self.spec_free)
        } else {
            t.max(self.dem_free)
        }
    }

    /// Books `n` speculative operations from `s` (a [`Self::spec_start`] result).
    #[inline]
    pub fn spec_commit(&mut self, s: f64, n: u64) {
        self.spec_ops += n;
        let end = s + n as f64 * self.iv;
        if self.priority {
            self.spec_free = end;
        } else {
            self.dem_free = end;
        }
    }

    /// Books `n` speculative (or background) operations ready at `t`.
    #[inline]
    pub fn speculative(&mut self, t: f64, n: u64) -> f64 {
        self.spec_ops += n;
        let span = n as f64 * self.iv;
        if self.priority {
            let s = t.max(self.spec_free).max(self.dem_free);
            self.spec_free = s + span;
            s
        } else {
            let s = t.max(self.dem_free);
            self.dem_free = s + span;
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_pool_issues_one_op_per_slot() {
        // 48-stage TDES at 96 cycles: one op per 2 cycles per engine; 2 engines: one per cycle.
        let mut e = Engines::new(96.0, 48, 2, true);
        assert_eq!(e.iv, 1.0);
        assert_eq!(e.speculative(10.0, 64), 10.0);
        // Demand at 20 goes first and pushes the rest of the speculation back by 8 slots.
        assert_eq!(e.demand(20.0, 8), 20.0);
        assert_eq!(e.speculative(0.0, 1), 10.0 + 64.0 + 8.0);
        let mut fifo = Engines::new(96.0, 48, 2, false);
        fifo.speculative(10.0, 64);
        assert_eq!(fifo.demand(20.0, 8), 74.0, "without priority demand waits behind speculation");
    }
}
