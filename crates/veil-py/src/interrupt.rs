//! Ctrl-C for long Rust calls.
//!
//! Python runs its SIGINT handler only on the main thread, between bytecodes: a Rust call that
//! holds that thread for minutes would swallow Ctrl-C until it returned. [`run`] therefore runs
//! the work on a helper thread without the GIL while the calling thread wakes every few
//! milliseconds to let Python handle pending signals. When the handler raises (KeyboardInterrupt
//! by default), it sets `veil_core::interrupt`'s flag, waits for the work to notice and return
//! early, clears the flag and re-raises. Off the main thread `check_signals` does nothing and
//! the call simply runs to the end.

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use pyo3::prelude::*;
use veil_core::interrupt;

/// How often the waiting thread looks for a pending signal: well under a human's patience,
/// well over the cost of a wake-up.
const POLL: Duration = Duration::from_millis(20);

/// Runs `work` without the GIL so that Ctrl-C interrupts it; every long call of the bindings
/// goes through here. `work` must poll `veil_core::interrupt::requested()` to stop early.
pub fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    std::thread::scope(|s| {
        let (tx, mut rx) = channel::<()>();
        let worker = s.spawn(move || {
            let out = work();
            let _ = tx.send(());
            out
        });
        loop {
            // A send or a dropped sender (the work panicked) both mean the worker is finished.
            // The receiver is moved in and out: it may cross threads but not be shared.
            let (finished, back) = py.allow_threads(move || {
                let r = rx.recv_timeout(POLL);
                (!matches!(r, Err(RecvTimeoutError::Timeout)), rx)
            });
            rx = back;
            if finished {
                return worker.join().map_err(|p| std::panic::resume_unwind(p));
            }
            if let Err(e) = py.check_signals() {
                interrupt::request();
                let _ = worker.join();
                interrupt::clear();
                return Err(e);
            }
        }
    })
}
