//! A process-wide stop flag for long simulations (Ctrl-C).
//!
//! Long loops poll [`requested`] every few thousand steps and return early with their crate's
//! "interrupted" error; the Python bindings set the flag when SIGINT arrives and turn the early
//! return into `KeyboardInterrupt`. One relaxed atomic load costs about as much as an add, so
//! polling it is free next to a simulated cycle or an event.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// True once a stop was requested and until [`clear`].
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Asks every polling loop in the process to stop.
pub fn request() {
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Lets new work run again (the bindings call it once the interrupted call has returned).
pub fn clear() {
    REQUESTED.store(false, Ordering::Relaxed);
}

/// `Err(Interrupted)` when a stop was requested: `interrupt::check()?` in a loop.
#[inline]
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// The error a loop returns when it stopped because of [`request`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_stops_a_polling_loop_on_another_thread() {
        clear();
        let worker = std::thread::spawn(|| {
            let mut steps = 0u64;
            loop {
                if check().is_err() {
                    return steps;
                }
                steps += 1;
                std::hint::spin_loop();
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        request();
        let steps = worker.join().unwrap();
        assert!(steps > 0);
        assert!(requested());
        assert_eq!(check(), Err(Interrupted));
        clear();
        assert!(!requested());
        assert_eq!(check(), Ok(()));
    }
}
