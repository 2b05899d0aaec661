//! Knuth's lagged-Fibonacci generators (TAOCP vol. 2, 3rd ed., section 3.6: `ran_array`
//! for 30-bit integers, `ranf_array` for doubles in [0,1)), as BookSim2 uses them: both
//! seeded with the same seed, consumed through 1009-long batches of which the first 100 are
//! used. With `rng = "booksim"` memnet draws every random number BookSim2 would draw, in the
//! same order, from these generators, so a run can be compared with BookSim2 draw for draw.

const KK: usize = 100;
const LL: usize = 37;
const MM: i64 = 1 << 30;
const TT: i32 = 70;
const QUALITY: usize = 1009;

#[inline]
fn mod_diff(x: i64, y: i64) -> i64 {
    (x - y) & (MM - 1)
}

/// Knuth's `(x+y) - (int)(x+y)` for x, y in [0, 1): s in [0, 2), so the integer part is 0 or
/// 1 and `s - 1.0` is exact for s >= 1 (Sterbenz) -- the same double, without the two
/// float/integer conversions (the generator's batch refill is a tenth of a mesh run).
#[inline]
fn mod_sum(x: f64, y: f64) -> f64 {
    let s = x + y;
    debug_assert!((0.0..2.0).contains(&s));
    s - if s >= 1.0 { 1.0 } else { 0.0 }
}

/// The values of a generator handed out one at a time: each batch of QUALITY computed values
/// contributes its first KK (Knuth's `ran_arr_cycle`), and batches may be computed ahead.
struct Ready<T> {
    buf: Vec<T>,
    /// Values ready to hand out (the used head of each batch, in order) and the next one.
    vals: Vec<T>,
    pos: usize,
}

impl<T: Copy + Default> Ready<T> {
    fn new() -> Self {
        Self { buf: vec![T::default(); QUALITY], vals: Vec::new(), pos: 0 }
    }

    /// The next value; `array` computes a batch into its argument.
    #[inline]
    fn next(&mut self, array: impl FnOnce(&mut [T])) -> T {
        if self.pos >= self.vals.len() {
            self.vals.clear();
            self.pos = 0;
            self.batch(array);
        }
        let v = self.vals[self.pos];
        self.pos += 1;
        v
    }

    /// One more batch: its first KK values join the values ready.
    #[cold]
    fn batch(&mut self, array: impl FnOnce(&mut [T])) {
        let mut buf = std::mem::take(&mut self.buf);
        array(&mut buf);
        self.vals.extend_from_slice(&buf[..KK]);
        self.buf = buf;
    }

    /// Computes batches ahead until at least `n` values are ready (the sequence is the same;
    /// only who computes it when changes).
    fn prefill(&mut self, n: usize, mut array: impl FnMut(&mut [T])) {
        if self.vals.len() - self.pos < n && self.pos > 0 {
            self.vals.drain(..self.pos);
            self.pos = 0;
        }
        while self.vals.len() - self.pos < n {
            self.batch(&mut array);
        }
    }

    fn ready(&self) -> usize {
        self.vals.len() - self.pos
    }
}

pub struct KnuthInt {
    x: [i64; KK],
    ready: Ready<i64>,
}

impl KnuthInt {
    pub fn new(seed: i64) -> Self {
        let mut g = Self { x: [0; KK], ready: Ready::new() };
        let mut x = [0i64; KK + KK - 1];
        let mut ss = (seed + 2) & (MM - 2);
        for v in x.iter_mut().take(KK) {
            *v = ss;
            ss <<= 1;
            if ss >= MM {
                ss -= MM - 2;
            }
        }
        x[1] += 1;
        let mut s = seed & (MM - 1);
        let mut t = TT - 1;
        while t > 0 {
            for j in (1..KK).rev() {
                x[j + j] = x[j];
                x[j + j - 1] = 0;
            }
            for j in (KK..=KK + KK - 2).rev() {
                x[j - (KK - LL)] = mod_diff(x[j - (KK - LL)], x[j]);
                x[j - KK] = mod_diff(x[j - KK], x[j]);
            }
            if s & 1 == 1 {
                for j in (1..=KK).rev() {
                    x[j] = x[j - 1];
                }
                x[0] = x[KK];
                if x[KK] != 0 {
                    x[LL] = mod_diff(x[LL], x[KK]);
                }
            }
            if s != 0 {
                s >>= 1;
            } else {
                t -= 1;
            }
        }
        for j in 0..LL {
            g.x[j + KK - LL] = x[j];
        }
        for j in LL..KK {
            g.x[j - LL] = x[j];
        }
        let mut aa = vec![0i64; KK + KK - 1];
        for _ in 0..10 {
            int_array(&mut g.x, &mut aa);
        }
        g
    }

    #[inline]
    pub fn next(&mut self) -> i64 {
        let state = &mut self.x;
        self.ready.next(|aa| int_array(state, aa))
    }

    /// Computes batches ahead until at least `n` values are ready (the sequence is the same;
    /// only who computes it when changes).
    pub fn prefill(&mut self, n: usize) {
        let state = &mut self.x;
        self.ready.prefill(n, |aa| int_array(state, aa));
    }

    /// Values computed and not yet handed out.
    pub fn ready(&self) -> usize {
        self.ready.ready()
    }

    /// BookSim's RandomInt(max): uniform in [0, max].
    #[inline]
    pub fn int(&mut self, max: u32) -> u32 {
        (self.next() % (max as i64 + 1)) as u32
    }
}

pub struct KnuthFloat {
    u: [f64; KK],
    ready: Ready<f64>,
}

impl KnuthFloat {
    pub fn new(seed: i64) -> Self {
        let mut g = Self { u: [0.0; KK], ready: Ready::new() };
        let mut u = [0f64; KK + KK - 1];
        let ulp = (1.0 / (1i64 << 30) as f64) / (1i64 << 22) as f64;
        let mut ss = 2.0 * ulp * ((seed & 0x3fff_ffff) + 2) as f64;
        for v in u.iter_mut().take(KK) {
            *v = ss;
            ss += ss;
            if ss >= 1.0 {
                ss -= 1.0 - 2.0 * ulp;
            }
        }
        u[1] += ulp;
        let mut s = seed & 0x3fff_ffff;
        let mut t = TT - 1;
        while t > 0 {
            for j in (1..KK).rev() {
                u[j + j] = u[j];
                u[j + j - 1] = 0.0;
            }
            for j in (KK..=KK + KK - 2).rev() {
                u[j - (KK - LL)] = mod_sum(u[j - (KK - LL)], u[j]);
                u[j - KK] = mod_sum(u[j - KK], u[j]);
            }
            if s & 1 == 1 {
                for j in (1..=KK).rev() {
                    u[j] = u[j - 1];
                }
                u[0] = u[KK];
                u[LL] = mod_sum(u[LL], u[KK]);
            }
            if s != 0 {
                s >>= 1;
            } else {
                t -= 1;
            }
        }
        for j in 0..LL {
            g.u[j + KK - LL] = u[j];
        }
        for j in LL..KK {
            g.u[j - LL] = u[j];
        }
        let mut aa = vec![0f64; KK + KK - 1];
        for _ in 0..10 {
            float_array(&mut g.u, &mut aa);
        }
        g
    }

    /// BookSim's RandomFloat(): uniform in [0, 1).
    #[inline]
    pub fn next(&mut self) -> f64 {
        let state = &mut self.u;
        self.ready.next(|aa| float_array(state, aa))
    }

    /// Computes batches ahead until at least `n` values are ready (the sequence is the same;
    /// only who computes it when changes).
    pub fn prefill(&mut self, n: usize) {
        let state = &mut self.u;
        self.ready.prefill(n, |aa| float_array(state, aa));
    }

    /// Values computed and not yet handed out.
    pub fn ready(&self) -> usize {
        self.ready.ready()
    }
}

/// One batch of `ran_array` into `aa` from state `x` (the state moves on).
fn int_array(x: &mut [i64; KK], aa: &mut [i64]) {
    let n = aa.len();
    aa[..KK].copy_from_slice(x);
    for j in KK..n {
        aa[j] = mod_diff(aa[j - KK], aa[j - LL]);
    }
    next_state(x, aa, mod_diff);
}

/// One batch of `ranf_array` into `aa` from state `u` (the state moves on).
fn float_array(u: &mut [f64; KK], aa: &mut [f64]) {
    let n = aa.len();
    aa[..KK].copy_from_slice(u.as_slice());
    // Four at a time (vector instructions): the shortest lag is LL = 37 > 4, so a chunk
    // never reads an element it writes; each element is the same sum as one at a time.
    let mut j = KK;
    while j + 4 <= n {
        let (lo, hi) = aa.split_at_mut(j);
        let a: &[f64; 4] = lo[j - KK..j - KK + 4].try_into().unwrap();
        let b: &[f64; 4] = lo[j - LL..j - LL + 4].try_into().unwrap();
        let out: &mut [f64; 4] = (&mut hi[..4]).try_into().unwrap();
        for k in 0..4 {
            out[k] = mod_sum(a[k], b[k]);
        }
        j += 4;
    }
    for j in j..n {
        aa[j] = mod_sum(aa[j - KK], aa[j - LL]);
    }
    next_state(u, aa, mod_sum);
}

/// The generator's next state after a batch `aa` (both generators: Knuth's recurrence with
/// `op`, continued KK steps past the batch's end).
#[inline(always)]
fn next_state<T: Copy>(x: &mut [T; KK], aa: &[T], op: impl Fn(T, T) -> T) {
    let n = aa.len();
    for i in 0..LL {
        x[i] = op(aa[n + i - KK], aa[n + i - LL]);
    }
    for i in LL..KK {
        x[i] = op(aa[n + i - KK], x[i - LL]);
    }
}

/// BookSim2's global random state: one integer and one floating-point generator.
pub struct BookSimRng {
    pub int: KnuthInt,
    pub float: KnuthFloat,
}

impl BookSimRng {
    pub fn new(seed: u64) -> Self {
        let s = (seed & 0x7fff_ffff) as i64;
        Self { int: KnuthInt::new(s), float: KnuthFloat::new(s) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefilled_values_are_the_same_sequence() {
        let (mut a, mut b) = (BookSimRng::new(42), BookSimRng::new(42));
        for round in 0..50usize {
            b.float.prefill(round * 37 % 450);
            b.int.prefill(round * 53 % 330);
            for _ in 0..(round * 71 % 400) {
                assert_eq!(a.float.next().to_bits(), b.float.next().to_bits());
            }
            for _ in 0..(round * 29 % 300) {
                assert_eq!(a.int.next(), b.int.next());
            }
        }
    }

    #[test]
    fn knuth_published_check_value() {
        // TAOCP's rng.c self-test: after ran_start(310952) and 2010 calls of
        // ran_array(a, 1009), a[0] = 995235265.
        let mut g = KnuthInt::new(310952);
        let mut a = vec![0i64; 1009];
        for _ in 0..2010 {
            int_array(&mut g.x, &mut a);
        }
        assert_eq!(a[0], 995_235_265);
    }

    #[test]
    fn knuth_double_check_value() {
        // rng-double.c self-test: after ranf_start(310952) and 2009 calls of
        // ranf_array(a, 1009), the state's first element is 0.36410514377569680455.
        let mut g = KnuthFloat::new(310952);
        let mut a = vec![0f64; 1009];
        for _ in 0..2009 {
            float_array(&mut g.u, &mut a);
        }
        assert!((g.u[0] - 0.364_105_143_775_696_8).abs() < 1e-15, "{}", g.u[0]);
    }
}
