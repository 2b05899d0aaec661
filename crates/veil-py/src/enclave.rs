//! `veil._native.enclave`: JSON in, JSON out over `veil-enclave`. Errors are ValueErrors whose
//! message is the crate's one-line description; simulations run without the GIL
//! and stop on Ctrl-C (KeyboardInterrupt).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Runs one simulation; `config` is a JSON object (missing fields take their defaults).
#[pyfunction]
fn simulate(py: Python<'_>, config: &str) -> PyResult<String> {
    crate::interrupt::run(py, || veil_enclave::simulate_json(config))?.map_err(PyValueError::new_err)
}

/// Runs a JSON list of configs in parallel (rayon); returns the JSON list of results.
#[pyfunction]
fn simulate_many(py: Python<'_>, configs: &str) -> PyResult<String> {
    crate::interrupt::run(py, || veil_enclave::simulate_many_json(configs))?.map_err(PyValueError::new_err)
}

/// The default configuration as JSON.
#[pyfunction]
fn defaults() -> String {
    veil_enclave::default_config_json()
}

/// The Server step table: [(step, work cycles, app lines, call or "", syscall cycles,
/// kernel lines, device call)].
#[pyfunction]
fn steps() -> Vec<(&'static str, f64, u32, &'static str, f64, u32, bool)> {
    veil_enclave::workload::server_steps()
        .iter()
        .map(|s| match s.call {
            Some(c) => (s.name, s.work_cycles, s.work_lines, c.name, c.sys_cycles, c.kernel_lines, c.device),
            None => (s.name, s.work_cycles, s.work_lines, "", 0.0, 0, false),
        })
        .collect()
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "enclave")?;
    m.add_function(wrap_pyfunction!(simulate, &m)?)?;
    m.add_function(wrap_pyfunction!(simulate_many, &m)?)?;
    m.add_function(wrap_pyfunction!(defaults, &m)?)?;
    m.add_function(wrap_pyfunction!(steps, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
