//! Progress of the current long simulation, for a progress line with an ETA.
//!
//! A simulator calls [`start`] with its expected amount of work and [`set`] as it goes (where it
//! already polls `interrupt`); the Python side reads [`get`] from another thread. Display only:
//! with several simulations running side by side (rayon) the last writer wins.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

static DONE: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);
static UNIT: Mutex<&'static str> = Mutex::new("");

/// A new piece of work of `total` units (0 = unknown: no progress line).
pub fn start(total: u64, unit: &'static str) {
    DONE.store(0, Ordering::Relaxed);
    TOTAL.store(total, Ordering::Relaxed);
    if let Ok(mut u) = UNIT.lock() {
        *u = unit;
    }
}

/// Units done so far.
#[inline]
pub fn set(done: u64) {
    DONE.store(done, Ordering::Relaxed);
}

/// (done, total, unit); total 0 when nothing reported.
pub fn get() -> (u64, u64, &'static str) {
    let unit = UNIT.lock().map(|u| *u).unwrap_or("");
    (DONE.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed), unit)
}

/// Forgets the last piece of work.
pub fn reset() {
    start(0, "");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_what_was_set() {
        start(1000, "cycles");
        set(250);
        assert_eq!(get(), (250, 1000, "cycles"));
        reset();
        assert_eq!(get(), (0, 0, ""));
    }
}
