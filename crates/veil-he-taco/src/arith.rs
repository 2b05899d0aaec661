//! 64-bit modular arithmetic on SEAL's primes (< 2^61) and the constants SEAL derives from them.

/// a*b mod q through a 128-bit product: the hardware's 64-bit modular multiplier.
#[inline]
pub fn mul_mod(a: u64, b: u64, q: u64) -> u64 {
    ((a as u128 * b as u128) % q as u128) as u64
}

#[inline]
pub fn add_mod(a: u64, b: u64, q: u64) -> u64 {
    let s = a + b;
    if s >= q { s - q } else { s }
}

#[inline]
pub fn sub_mod(a: u64, b: u64, q: u64) -> u64 {
    if a >= b { a - b } else { a + q - b }
}

pub fn pow_mod(mut b: u64, mut e: u64, q: u64) -> u64 {
    let mut r = 1 % q;
    b %= q;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, b, q);
        }
        b = mul_mod(b, b, q);
        e >>= 1;
    }
    r
}

/// Inverse modulo a prime (Fermat).
pub fn inv_mod(a: u64, q: u64) -> u64 {
    pow_mod(a, q - 2, q)
}

/// Deterministic Miller-Rabin for 64-bit integers.
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        if n % p == 0 {
            return n == p;
        }
    }
    let (mut d, mut s) = (n - 1, 0);
    while d % 2 == 0 {
        d /= 2;
        s += 1;
    }
    'witness: for a in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'witness;
            }
        }
        return false;
    }
    true
}

/// The smallest primitive 2n-th root of unity mod q: SEAL's `try_minimal_primitive_root`
/// walks the odd powers of one primitive root and keeps the least, which is this value.
pub fn minimal_primitive_root(two_n: u64, q: u64) -> Option<u64> {
    if (q - 1) % two_n != 0 {
        return None;
    }
    let cofactor = (q - 1) / two_n;
    let mut g = None;
    for x in 2..q.min(1 << 20) {
        let r = pow_mod(x, cofactor, q);
        if pow_mod(r, two_n / 2, q) == q - 1 {
            g = Some(r);
            break;
        }
    }
    let g = g?;
    let g2 = mul_mod(g, g, q);
    let (mut best, mut cur) = (g, g);
    for _ in 0..two_n / 2 {
        best = best.min(cur);
        cur = mul_mod(cur, g2, q);
    }
    Some(best)
}

/// SEAL's gamma for BFV decryption (`RNSTool`): the largest 61-bit prime = 1 mod 2n.
pub fn seal_gamma(n: u64) -> u64 {
    let step = 2 * n;
    let mut v = (1u64 << 61) - step + 1;
    while !is_prime(v) {
        v -= step;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_primitive_and_minimal() {
        // 40961 = 5 * 8192 + 1 is prime; check by brute force that no smaller root exists.
        let (q, two_n) = (40961u64, 8192u64);
        let r = minimal_primitive_root(two_n, q).unwrap();
        assert_eq!(pow_mod(r, two_n / 2, q), q - 1);
        for x in 2..r {
            let is_root = pow_mod(x, two_n, q) == 1 && pow_mod(x, two_n / 2, q) == q - 1;
            assert!(!is_root, "{x} is a smaller primitive root than {r}");
        }
    }

    #[test]
    fn primes_and_inverses() {
        assert!(is_prime((1 << 61) - 1));
        assert!(!is_prime((1u64 << 61) - 3));
        let q = 1152921504606830593u64;
        assert!(is_prime(q));
        assert_eq!(mul_mod(inv_mod(12345, q), 12345, q), 1);
        let g = seal_gamma(4096);
        assert!(is_prime(g) && g % 8192 == 1 && g < 1 << 61 && g > 1 << 60);
    }
}
