//! A bandwidth-limited server (a memory controller, a network link) fed by requests whose
//! arrival times are not in order.
//!
//! Simulators that price a whole phase of accesses when it starts (each access stamped with
//! the time it would issue) hand a shared server arrivals from several threads out of time
//! order, so a FIFO "busy until" clock would make a late stamp wait for every earlier-booked
//! one. Graphite solves this with a history of busy intervals (`history_tree`, with an
//! analytical fallback); this is a bucketed fluid equivalent. Time is cut into buckets of
//! `2^shift` cycles, each holding the service time booked in it. Work beyond a bucket's length
//! carries into the next bucket as a backlog, so served work never exceeds the server's rate.
//! A request's wait is the backlog still left at its arrival (the carried-in work minus what
//! the bucket has drained so far) plus the M/D/1 mean wait at the load of the last few buckets.
//! An offered load above the rate makes the backlog, and so the wait, grow bucket after bucket.
//! The ring remembers `buckets` buckets; an arrival older than that is booked into the oldest
//! bucket still remembered, as if it arrived then.

#[derive(Clone, Debug)]
pub struct SlotQueue {
    shift: u32,
    mask: u64,
    cap: f32,
    /// Service cycles booked per bucket, carried-in backlog included (a ring by bucket number).
    used: Vec<f32>,
    /// The part of `used` carried in from earlier buckets.
    carried: Vec<f32>,
    /// Oldest bucket number the ring still holds.
    base: u64,
    /// Requests served, their service and the sum of their waits (cycles).
    pub served: u64,
    pub busy: f64,
    pub wait: f64,
    /// Requests that arrived before the remembered history.
    pub late: u64,
}

/// Highest load the M/D/1 term is evaluated at (the backlog carries the rest).
const RHO_MAX: f32 = 0.95;
/// Buckets the load is averaged over (the current one and those before it).
const LOAD_WINDOW: u64 = 4;

impl SlotQueue {
    /// `bucket_shift`: log2 of the bucket length in cycles; `buckets`: history length (rounded
    /// up to a power of two).
    pub fn new(bucket_shift: u32, buckets: usize) -> Self {
        let n = buckets.next_power_of_two().max(2 * LOAD_WINDOW as usize);
        Self {
            shift: bucket_shift,
            mask: n as u64 - 1,
            cap: (1u64 << bucket_shift) as f32,
            used: vec![0.0; n],
            carried: vec![0.0; n],
            base: 0,
            served: 0,
            busy: 0.0,
            wait: 0.0,
            late: 0,
        }
    }

    fn len(&self) -> u64 {
        self.mask + 1
    }

    #[inline]
    fn idx(&self, b: u64) -> usize {
        (b & self.mask) as usize
    }

    /// Slides the window so that bucket `b` (and a quarter of the ring after it) fits.
    #[inline]
    fn reach(&mut self, b: u64) {
        if b < self.base + self.len() - self.len() / 4 {
            return;
        }
        self.slide(b);
    }

    #[cold]
    fn slide(&mut self, b: u64) {
        let new_base = b + 1 - (self.len() - self.len() / 4);
        let drop = (new_base - self.base).min(self.len());
        for k in 0..drop {
            let i = self.idx(self.base + k);
            self.used[i] = 0.0;
            self.carried[i] = 0.0;
        }
        self.base = new_base;
    }

    /// Mean load of bucket `b` and the `LOAD_WINDOW - 1` before it (those still remembered).
    #[inline]
    fn load(&self, b: u64) -> f32 {
        let lo = b.saturating_sub(LOAD_WINDOW - 1).max(self.base);
        let mut sum = 0.0;
        for k in lo..=b {
            sum += self.used[self.idx(k)];
        }
        sum / ((b - lo + 1) as f32 * self.cap)
    }

    #[inline]
    fn md1(&self, s: f32, rho: f32) -> f64 {
        let rho = rho.min(RHO_MAX);
        (s * rho / (2.0 * (1.0 - rho))) as f64
    }

    /// Books `service` cycles for a request arriving at `t`; returns its wait before service.
    #[inline]
    pub fn serve(&mut self, t: f64, service: f64) -> f64 {
        let s = service as f32;
        let b = (t.max(0.0) as u64) >> self.shift;
        self.served += 1;
        self.busy += service;
        // Older than the history: booked into the oldest bucket it still has (so the server's
        // rate still holds) and charged as if it arrived there.
        let (t, b) = if b < self.base {
            self.late += 1;
            ((self.base << self.shift) as f64, self.base)
        } else {
            (t, b)
        };
        self.reach(b);
        let i = self.idx(b);
        let drained = (t - (b << self.shift) as f64).max(0.0) as f32;
        let backlog = (self.carried[i] - drained).max(0.0) as f64;
        let w = backlog + self.md1(s, self.load(b));
        // Book it; what does not fit carries into the next buckets as backlog.
        self.used[i] += s;
        let mut k = b;
        while self.used[self.idx(k)] > self.cap {
            let j = self.idx(k);
            let excess = self.used[j] - self.cap;
            self.used[j] = self.cap;
            k += 1;
            if k >= self.base + self.len() {
                break; // beyond the ring: forgotten
            }
            let j = self.idx(k);
            self.used[j] += excess;
            self.carried[j] += excess;
        }
        self.wait += w;
        w
    }

    /// Mean wait per request so far (cycles).
    pub fn mean_wait(&self) -> f64 {
        if self.served == 0 {
            0.0
        } else {
            self.wait / self.served as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests of `service` cycles arriving every `gap` cycles for `n` requests, in order:
    /// returns (mean wait, completion time of the last one).
    fn run(service: f64, gap: f64, n: usize) -> (f64, f64) {
        let mut q = SlotQueue::new(6, 1024);
        let mut last = 0.0f64;
        for i in 0..n {
            let t = i as f64 * gap;
            let w = q.serve(t, service);
            last = last.max(t + w + service);
        }
        (q.mean_wait(), last)
    }

    #[test]
    fn saturates_at_its_rate() {
        // Offered twice the rate: the work finishes no sooner than n x service.
        let (_, end) = run(10.0, 5.0, 5000);
        assert!(end >= 5000.0 * 10.0 * 0.99, "served faster than the rate: {end}");
        assert!(end <= 5000.0 * 10.0 * 1.05, "lost throughput: {end}");
    }

    #[test]
    fn wait_grows_with_offered_load() {
        let loads = [0.1, 0.3, 0.5, 0.7, 0.9, 1.2];
        let waits: Vec<f64> = loads.iter().map(|&rho| run(8.0, 8.0 / rho, 4000).0).collect();
        assert!(waits[0] < 1.0, "light load waits: {waits:?}");
        for k in 1..waits.len() {
            assert!(waits[k] > waits[k - 1], "wait must grow with load: {waits:?}");
        }
        // Above saturation the queue keeps growing: far more than at 90%.
        assert!(waits[5] > 50.0 * waits[4], "{waits:?}");
    }

    #[test]
    fn out_of_order_arrivals_do_not_wait_for_later_bookings() {
        let mut q = SlotQueue::new(6, 256);
        // A request booked far ahead does not delay one arriving now.
        q.serve(10_000.0, 10.0);
        assert_eq!(q.serve(0.0, 10.0), 0.0);
    }

    #[test]
    fn random_arrivals_wait_about_as_md1() {
        // Poisson arrivals, deterministic service: the mean wait is the M/D/1 one within 30%.
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        for rho in [0.3, 0.65, 0.9] {
            let mut q = SlotQueue::new(8, 32);
            let mut t = 0.0;
            for _ in 0..100_000 {
                t += -(1.0f64 - r.gen::<f64>()).ln() * 12.8 / rho;
                q.serve(t, 12.8);
            }
            let md1 = 12.8 * rho / (2.0 * (1.0 - rho));
            assert!((q.mean_wait() / md1 - 1.0).abs() < 0.3, "rho {rho}: {} against M/D/1 {md1}", q.mean_wait());
        }
    }
}
