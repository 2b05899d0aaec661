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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    crypto::register(m)?;
    memnet::register(m)?;
    oram::register(m)?;
    enclave::register(m)?;
    memcrypt::register(m)?;
    trace::register(m)?;
    he_taco::register(m)?;
    Ok(())
}
