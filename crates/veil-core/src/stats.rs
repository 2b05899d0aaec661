//! Statistics every simulator reports the same way: running moments and a bounded-memory
//! histogram with percentiles. Memory depends on the value range, never on the sample count,
//! so a long simulation does not grow.

/// Count, mean, variance (Welford), min and max of a stream of samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accumulator {
    n: u64,
    mean: f64,
    m2: f64,
    min: f64,
    max: f64,
    sum: f64,
}

impl Accumulator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, x: f64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += x;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }

    /// Adds `n` copies of `x` in O(1): a merge with an accumulator of zero spread.
    pub fn add_n(&mut self, x: f64, n: u64) {
        if n == 0 {
            return;
        }
        let same = Accumulator { n, mean: x, m2: 0.0, min: x, max: x, sum: x * n as f64 };
        self.merge(&same);
    }

    /// Merges another accumulator (Chan et al. parallel update).
    pub fn merge(&mut self, o: &Accumulator) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        let n = self.n + o.n;
        let d = o.mean - self.mean;
        self.mean += d * o.n as f64 / n as f64;
        self.m2 += o.m2 + d * d * self.n as f64 * o.n as f64 / n as f64;
        self.n = n;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    pub fn count(&self) -> u64 {
        self.n
    }
    pub fn sum(&self) -> f64 {
        self.sum
    }
    /// Mean, or NaN with no samples (a mean of nothing is not zero).
    pub fn mean(&self) -> f64 {
        if self.n == 0 { f64::NAN } else { self.mean }
    }
    /// Sample variance (n - 1 denominator).
    pub fn variance(&self) -> f64 {
        if self.n < 2 { 0.0 } else { self.m2 / (self.n - 1) as f64 }
    }
    pub fn stddev(&self) -> f64 {
        self.variance().sqrt()
    }
    pub fn min(&self) -> f64 {
        if self.n == 0 { f64::NAN } else { self.min }
    }
    pub fn max(&self) -> f64 {
        if self.n == 0 { f64::NAN } else { self.max }
    }
}

/// Log-linear histogram of non-negative integers (cycles, bytes, hops).
///
/// Values below 2^`SUB_BITS` are counted exactly; above, each power-of-two range is split
/// into 2^(SUB_BITS-1) equal buckets, so any percentile is within 1/2^(SUB_BITS-1) (< 1%)
/// relative error. Memory: at most ~64 x 2^(SUB_BITS-1) counters.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    acc: Accumulator,
}

const SUB_BITS: u32 = 8;
const EXACT: u64 = 1 << SUB_BITS;
const HALF: u64 = 1 << (SUB_BITS - 1);

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self { counts: Vec::new(), total: 0, acc: Accumulator::new() }
    }

    fn index(v: u64) -> usize {
        if v < EXACT {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros() as u64;
        let shift = msb - (SUB_BITS as u64 - 1);
        let mantissa = v >> shift;
        (EXACT + (shift - 1) * HALF + (mantissa - HALF)) as usize
    }

    /// Inclusive lower bound and width of bucket `i`.
    fn bucket(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < EXACT {
            return (i, 1);
        }
        let shift = (i - EXACT) / HALF + 1;
        let mantissa = (i - EXACT) % HALF + HALF;
        (mantissa << shift, 1 << shift)
    }

    pub fn add(&mut self, v: u64) {
        self.add_n(v, 1);
    }

    pub fn add_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        let i = Self::index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += n;
        self.total += n;
        self.acc.add_n(v as f64, n);
    }

    pub fn merge(&mut self, o: &Histogram) {
        if o.counts.len() > self.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
        self.acc.merge(&o.acc);
    }

    pub fn count(&self) -> u64 {
        self.total
    }
    pub fn mean(&self) -> f64 {
        self.acc.mean()
    }
    pub fn stddev(&self) -> f64 {
        self.acc.stddev()
    }
    pub fn min(&self) -> f64 {
        self.acc.min()
    }
    pub fn max(&self) -> f64 {
        self.acc.max()
    }

    /// The `p`-quantile (0 <= p <= 1): the smallest bucket value at or below which at least
    /// p of the samples lie, interpolated inside the bucket and clamped to the seen range.
    pub fn quantile(&self, p: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let p = p.clamp(0.0, 1.0);
        let rank = (p * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if seen + c >= rank {
                let (lo, w) = Self::bucket(i);
                let v = if w == 1 {
                    lo as f64
                } else {
                    lo as f64 + w as f64 * (rank - seen) as f64 / c as f64 - 1.0
                };
                return v.clamp(self.min(), self.max());
            }
            seen += c;
        }
        self.max()
    }

    /// Non-empty buckets as (lower bound, width, count), for plotting.
    pub fn buckets(&self) -> Vec<(u64, u64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                let (lo, w) = Self::bucket(i);
                (lo, w, c)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulator_matches_closed_form() {
        let mut a = Accumulator::new();
        for x in 1..=10 {
            a.add(x as f64);
        }
        assert_eq!(a.count(), 10);
        assert!((a.mean() - 5.5).abs() < 1e-12);
        assert!((a.variance() - 55.0 / 6.0).abs() < 1e-12); // var of 1..10 (n-1)
        assert_eq!((a.min(), a.max(), a.sum()), (1.0, 10.0, 55.0));
        assert!(Accumulator::new().mean().is_nan());
    }

    #[test]
    fn accumulator_merge_equals_single_pass() {
        let (mut a, mut b, mut all) = (Accumulator::new(), Accumulator::new(), Accumulator::new());
        for x in 0..100 {
            let v = (x * x % 37) as f64;
            all.add(v);
            if x < 30 { a.add(v) } else { b.add(v) }
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert!((a.mean() - all.mean()).abs() < 1e-9);
        assert!((a.variance() - all.variance()).abs() < 1e-9);
    }

    #[test]
    fn bucket_index_roundtrip() {
        for v in (0..100_000u64).chain([u32::MAX as u64, u64::MAX / 3]) {
            let (lo, w) = Histogram::bucket(Histogram::index(v));
            assert!(lo <= v && v < lo.saturating_add(w), "v={v} lo={lo} w={w}");
            assert!(w == 1 || (w as f64) / (lo as f64) <= 1.0 / HALF as f64 + 1e-12);
        }
    }

    #[test]
    fn exact_percentiles_for_small_values() {
        let mut h = Histogram::new();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.quantile(0.5), 50.0);
        assert_eq!(h.quantile(0.99), 99.0);
        assert_eq!(h.quantile(1.0), 100.0);
        assert_eq!(h.quantile(0.0), 1.0);
        assert!((h.mean() - 50.5).abs() < 1e-12);
    }

    #[test]
    fn large_value_percentiles_within_one_percent() {
        let mut h = Histogram::new();
        for v in 0..100_000u64 {
            h.add(v * 37 + 1000);
        }
        for p in [0.1, 0.5, 0.9, 0.99] {
            let exact = ((p * 100_000.0f64).ceil() - 1.0) * 37.0 + 1000.0;
            let got = h.quantile(p);
            assert!((got - exact).abs() / exact < 0.01, "p={p} got={got} exact={exact}");
        }
    }

    #[test]
    fn add_n_and_merge_agree_with_single_adds() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.add_n(500, 4);
        a.add(7);
        for v in [500, 7, 500, 500, 500] {
            b.add(v);
        }
        assert_eq!(a.count(), b.count());
        assert_eq!(a.quantile(0.5), b.quantile(0.5));
        assert!((a.mean() - b.mean()).abs() < 1e-9);
        let mut c = Histogram::new();
        c.merge(&a);
        c.merge(&b);
        assert_eq!(c.count(), 10);
        assert_eq!(c.max(), 500.0);
    }
}
