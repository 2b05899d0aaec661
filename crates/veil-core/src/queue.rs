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

/// One bucket of a queue's ring.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    /// Service cycles booked in the bucket, carried-in backlog included.
    used: f32,
    /// The part of `used` carried in from earlier buckets.
    carried: f32,
}

/// A bank of independent queues of the same bucket length and history (a mesh's links, a
/// chip's memory controllers). One flat array holds every ring, each bucket's two numbers side
/// by side, so a request touches one or two host cache lines and no per-queue header.
#[derive(Clone, Debug)]
pub struct SlotQueues {
    shift: u32,
    len: u64,
    mask: u64,
    cap: f32,
    /// 1 / (LOAD_WINDOW x cap): a power of two, so multiplying by it is exactly the division.
    inv_window: f32,
    /// Queue q's ring is `buckets[q * len .. (q + 1) * len]`, indexed by bucket number & mask.
    buckets: Vec<Bucket>,
    /// Oldest bucket number each ring still holds.
    base: Vec<u64>,
    /// Requests that arrived before their queue's remembered history.
    pub late: u64,
}

/// Highest load the M/D/1 term is evaluated at (the backlog carries the rest).
const RHO_MAX: f32 = 0.95;
/// Buckets the load is averaged over (the current one and those before it).
const LOAD_WINDOW: u64 = 4;

impl SlotQueues {
    /// `queues` queues; `bucket_shift`: log2 of the bucket length in cycles; `buckets`: history
    /// length (rounded up to a power of two).
    pub fn new(queues: usize, bucket_shift: u32, buckets: usize) -> Self {
        let n = buckets.next_power_of_two().max(2 * LOAD_WINDOW as usize);
        let cap = (1u64 << bucket_shift) as f32;
        let window = LOAD_WINDOW as f32 * cap;
        Self {
            shift: bucket_shift,
            len: n as u64,
            mask: n as u64 - 1,
            cap,
            inv_window: 1.0 / window,
            buckets: vec![Bucket::default(); queues * n],
            base: vec![0; queues],
            late: 0,
        }
    }

    /// Position of bucket `b` of queue `q` in the flat array.
    #[inline]
    fn at(&self, q: usize, b: u64) -> usize {
        q * self.len as usize + (b & self.mask) as usize
    }

    /// Bucket of time `t`. Times are far below 2^63 cycles: the signed conversion is exact and
    /// shorter than the unsigned one.
    #[inline]
    fn bucket(&self, t: f64) -> u64 {
        (t.max(0.0) as i64 as u64) >> self.shift
    }

    /// Slides queue `q`'s window so that bucket `b` (and a quarter of the ring after it) fits.
    #[inline]
    fn reach(&mut self, q: usize, b: u64) {
        if b < self.base[q] + self.len - self.len / 4 {
            return;
        }
        self.slide(q, b);
    }

    #[cold]
    fn slide(&mut self, q: usize, b: u64) {
        let base = self.base[q];
        let new_base = b + 1 - (self.len - self.len / 4);
        let drop = (new_base - base).min(self.len);
        for k in 0..drop {
            let i = self.at(q, base + k);
            self.buckets[i] = Bucket::default();
        }
        self.base[q] = new_base;
    }

    /// Mean load of queue `q`'s bucket `b` and the `LOAD_WINDOW - 1` before it (those still
    /// remembered).
    #[inline]
    fn load(&self, q: usize, b: u64) -> f32 {
        let lo = b.saturating_sub(LOAD_WINDOW - 1).max(self.base[q]);
        let mut sum = 0.0;
        for k in lo..=b {
            sum += self.buckets[self.at(q, k)].used;
        }
        let n = b - lo + 1;
        if n == LOAD_WINDOW {
            sum * self.inv_window
        } else {
            sum / (n as f32 * self.cap)
        }
    }

    #[inline]
    fn md1(s: f32, rho: f32) -> f64 {
        if rho == 0.0 {
            return 0.0;
        }
        let rho = rho.min(RHO_MAX);
        (s * rho / (2.0 * (1.0 - rho))) as f64
    }

    /// Books `service` cycles on queue `q` for a request arriving at `t`; returns its wait
    /// before service: the backlog still left at `t` plus the M/D/1 wait at the window's load.
    #[inline]
    pub fn serve(&mut self, q: usize, t: f64, service: f64) -> f64 {
        let s = service as f32;
        let b = self.bucket(t);
        // Older than the history: booked into the oldest bucket it still has (so the server's
        // rate still holds) and charged as if it arrived there.
        let base = self.base[q];
        let (t, b) = if b < base {
            self.late += 1;
            ((base << self.shift) as i64 as f64, base)
        } else {
            (t, b)
        };
        self.reach(q, b);
        let i = self.at(q, b);
        let drained = (t - ((b << self.shift) as i64 as f64)).max(0.0) as f32;
        let backlog = (self.buckets[i].carried - drained).max(0.0) as f64;
        let w = backlog + Self::md1(s, self.load(q, b));
        // Book it; what does not fit carries into the next buckets as backlog.
        self.buckets[i].used += s;
        if self.buckets[i].used > self.cap {
            self.carry(q, b);
        }
        w
    }

    #[cold]
    fn carry(&mut self, q: usize, b: u64) {
        let end = self.base[q] + self.len;
        let mut k = b;
        loop {
            let j = self.at(q, k);
            if self.buckets[j].used <= self.cap {
                break;
            }
            let excess = self.buckets[j].used - self.cap;
            self.buckets[j].used = self.cap;
            k += 1;
            if k >= end {
                break; // beyond the ring: forgotten
            }
            let j = self.at(q, k);
            self.buckets[j].used += excess;
            self.buckets[j].carried += excess;
        }
    }
}

/// One queue of its own, with its statistics.
#[derive(Clone, Debug)]
pub struct SlotQueue {
    ring: SlotQueues,
    /// Requests served, their service and the sum of their waits (cycles).
    pub served: u64,
    pub busy: f64,
    pub wait: f64,
    /// Requests that arrived before the remembered history.
    pub late: u64,
}

impl SlotQueue {
    /// `bucket_shift`: log2 of the bucket length in cycles; `buckets`: history length (rounded
    /// up to a power of two).
    pub fn new(bucket_shift: u32, buckets: usize) -> Self {
        Self { ring: SlotQueues::new(1, bucket_shift, buckets), served: 0, busy: 0.0, wait: 0.0, late: 0 }
    }

    /// Books `service` cycles for a request arriving at `t`; returns its wait before service.
    #[inline]
    pub fn serve(&mut self, t: f64, service: f64) -> f64 {
        let w = self.ring.serve(0, t, service);
        self.served += 1;
        self.busy += service;
        self.wait += w;
        self.late = self.ring.late;
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

    #[test]
    fn a_bank_holds_independent_queues() {
        // Requests spread over a bank of three queues wait exactly as on three queues of their
        // own, through busy, idle, late and sliding stretches.
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let mut bank = SlotQueues::new(3, 6, 16);
        let mut own: Vec<SlotQueue> = (0..3).map(|_| SlotQueue::new(6, 16)).collect();
        let mut t = 0.0f64;
        for k in 0..200_000 {
            t += r.gen::<f64>() * if k % 5000 < 2500 { 4.0 } else { 60.0 };
            let at = (t - r.gen::<f64>() * 3000.0).max(0.0);
            let q = r.gen_range(0..3);
            let s = [1.0, 9.0, 12.8][r.gen_range(0..3)];
            assert_eq!(bank.serve(q, at, s).to_bits(), own[q].serve(at, s).to_bits(), "request {k}");
        }
        assert!(bank.late > 0 && bank.late == own.iter().map(|q| q.late).sum::<u64>());
    }
}
