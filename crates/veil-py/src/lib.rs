//! `veil._native`: thin PyO3 wrappers over the plain-Rust crates. One submodule per system,
//! each in its own file; no simulation logic lives here.

use pyo3::prelude::*;

mod crypto;
mod interrupt;
mod memnet;
mod oram;
mod enclave;
mod memcrypt;
mod trace;
mod he_taco;

/// (done, total, unit) of the long simulation running now (total 0: none reported).
#[pyfunction]
fn progress() -> (u64, u64, &'static str) {
    veil_core::progress::get()
}

/// Forgets the last simulation's progress (called before a new run).
#[pyfunction]
fn progress_reset() {
    veil_core::progress::reset()
}

/// Asks every Rust simulation running in this process to stop early (`veil_core::interrupt`):
/// for work on Python's own threads, where Ctrl-C reaches only the main thread.
#[pyfunction]
fn interrupt_request() {
    veil_core::interrupt::request()
}

/// Lets new Rust work run again after `interrupt_request` (once the stopped work has returned).
#[pyfunction]
fn interrupt_clear() {
    veil_core::interrupt::clear()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(progress, m)?)?;
    m.add_function(wrap_pyfunction!(progress_reset, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt_request, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt_clear, m)?)?;
    crypto::register(m)?;
    memnet::register(m)?;
    oram::register(m)?;
    enclave::register(m)?;
    memcrypt::register(m)?;
    trace::register(m)?;
    he_taco::register(m)?;
    Ok(())
}
