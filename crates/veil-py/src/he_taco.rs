//! `veil._native.he_taco`: TACO's executable datapath over SEAL's serialized objects. Byte
//! strings in, byte strings and per-block operation counts (JSON) out; errors are ValueErrors
//! carrying the crate's one-line description.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn ledger_json(led: &veil_he_taco::Ledger) -> String {
    serde_json::to_string(led).expect("counts serialize")
}

/// Encrypts plaintext coefficients under SEAL's public key; returns (SEAL ciphertext bytes,
/// counts JSON). `primes` are the key-level primes (special prime last); `prng` is SEAL's PRNG
/// type ("blake2xb" or "shake256") and `seed` its 64-byte seed.
#[pyfunction]
#[pyo3(signature = (public_key, template, primes, t, plain, seed, prng="blake2xb"))]
#[allow(clippy::too_many_arguments)]
fn encrypt<'py>(py: Python<'py>, public_key: &[u8], template: &[u8], primes: Vec<u64>, t: u64,
                plain: Vec<u64>, seed: &[u8], prng: &str) -> PyResult<(Bound<'py, PyBytes>, String)> {
    let (pk, tp, sd, kind) = (public_key.to_vec(), template.to_vec(), seed.to_vec(), prng.to_string());
    let (ct, led) = py
        .allow_threads(move || veil_he_taco::encrypt_seal(&pk, &tp, &primes, t, &plain, &kind, &sd))
        .map_err(PyValueError::new_err)?;
    Ok((PyBytes::new(py, &ct), ledger_json(&led)))
}

/// Decrypts SEAL's ciphertext bytes with SEAL's secret key bytes; returns (n coefficients
/// mod t, counts JSON).
#[pyfunction]
fn decrypt(py: Python<'_>, secret_key: &[u8], ciphertext: &[u8], primes: Vec<u64>, t: u64) -> PyResult<(Vec<u64>, String)> {
    let (sk, ct) = (secret_key.to_vec(), ciphertext.to_vec());
    let (m, led) = py
        .allow_threads(move || veil_he_taco::decrypt_seal(&sk, &ct, &primes, t))
        .map_err(PyValueError::new_err)?;
    Ok((m, ledger_json(&led)))
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "he_taco")?;
    m.add_function(wrap_pyfunction!(encrypt, &m)?)?;
    m.add_function(wrap_pyfunction!(decrypt, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
