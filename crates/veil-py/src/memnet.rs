//! `veil._native.memnet`: JSON config in, JSON result out.
//!
//! Errors: a bad configuration raises `ValueError` whose message starts with "config: "
//! (Python turns it into `veil.core.ConfigError`); a failed run (deadlock, livelock,
//! conservation) raises `RuntimeError` with the watchdog's one-line report.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use veil_memnet::SimError;

fn to_py(e: SimError) -> PyErr {
    match e {
        SimError::Config(c) => PyValueError::new_err(format!("config: {c}")),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// Runs one simulation described by a JSON config; returns the JSON result.
#[pyfunction]
fn simulate(py: Python<'_>, config_json: &str) -> PyResult<String> {
    crate::interrupt::run(py, || veil_memnet::simulate_json(config_json))?.map_err(to_py)
}

/// Checks a config without running it (builds topology and routing).
#[pyfunction]
fn check(config_json: &str) -> PyResult<()> {
    let cfg = veil_memnet::SimConfig::from_json(config_json).map_err(|e| to_py(e.into()))?;
    veil_memnet::sim::Engine::new(&cfg).map(|_| ()).map_err(|e| to_py(e.into()))
}

/// Runs one memory-system simulation (memory modules, CPUs, encryption) from a JSON
/// `MemSysConfig`; returns the JSON result.
#[pyfunction]
fn simulate_memsys(py: Python<'_>, config_json: &str) -> PyResult<String> {
    crate::interrupt::run(py, || veil_memnet::memsys::simulate_json(config_json))?.map_err(to_py)
}

/// Runs one memory-system simulation with the channel-probing adversary's view recorded:
/// (result JSON, observations). Observations: little-endian arrays as bytes (`ch_cycle` u64,
/// `ch_id` u32, `ch_flits` u16, `inj_cycle` u64, `inj_src` u32, `inj_dst` u32, `inj_flits`
/// u16), `complete_until` (cycle; u64::MAX when nothing was cut), the channel table
/// (`ch_kind`, `ch_from`, `ch_to`), `cpu_nodes`, `module_nodes` and `nodes`.
#[pyfunction]
fn simulate_memsys_observed(py: Python<'_>, config_json: &str) -> PyResult<(String, Py<PyDict>)> {
    let o = crate::interrupt::run(py, || {
        let cfg: veil_memnet::memsys::MemSysConfig = serde_json::from_str(config_json)
            .map_err(|e| veil_memnet::SimError::Config(veil_memnet::ConfigError(format!("memnet memory system config: {e}"))))?;
        veil_memnet::memsys::observed::memsys_observed(&cfg)
    })?
    .map_err(to_py)?;
    fn bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        let mut b = Vec::with_capacity(v.len() * N);
        for &x in v {
            b.extend_from_slice(&f(x));
        }
        b
    }
    let d = PyDict::new(py);
    let ob = &o.obs;
    d.set_item("ch_cycle", PyBytes::new(py, &bytes(&ob.ch_cycle, u64::to_le_bytes)))?;
    d.set_item("ch_id", PyBytes::new(py, &bytes(&ob.ch_id, u32::to_le_bytes)))?;
    d.set_item("ch_flits", PyBytes::new(py, &bytes(&ob.ch_flits, u16::to_le_bytes)))?;
    d.set_item("inj_cycle", PyBytes::new(py, &bytes(&ob.inj_cycle, u64::to_le_bytes)))?;
    d.set_item("inj_src", PyBytes::new(py, &bytes(&ob.inj_src, u32::to_le_bytes)))?;
    d.set_item("inj_dst", PyBytes::new(py, &bytes(&ob.inj_dst, u32::to_le_bytes)))?;
    d.set_item("inj_flits", PyBytes::new(py, &bytes(&ob.inj_flits, u16::to_le_bytes)))?;
    d.set_item("complete_until", ob.complete_until)?;
    d.set_item("ch_kind", o.channels.iter().map(|c| c.kind).collect::<Vec<_>>())?;
    d.set_item("ch_from", o.channels.iter().map(|c| c.from).collect::<Vec<_>>())?;
    d.set_item("ch_to", o.channels.iter().map(|c| c.to).collect::<Vec<_>>())?;
    d.set_item("cpu_nodes", o.cpu_nodes.clone())?;
    d.set_item("module_nodes", o.module_nodes.clone())?;
    d.set_item("nodes", o.nodes)?;
    let r = serde_json::to_string(&o.result).expect("results serialise");
    Ok((r, d.unbind()))
}

/// Writes a synthetic veil-trace file (benchmark input).
#[pyfunction]
fn memsys_write_synthetic_trace(path: &str, records: usize, threads: u32, seed: u64) -> PyResult<()> {
    veil_memnet::memsys::write_synthetic_trace(path, records, threads, seed).map_err(to_py)
}

/// The default memory-system config as JSON.
#[pyfunction]
fn memsys_default_config() -> String {
    veil_memnet::memsys::default_config_json()
}

/// The default (booksim_compat) config as JSON.
#[pyfunction]
fn default_config() -> String {
    veil_memnet::default_config_json()
}

/// (kind, name, doc) of every named component.
#[pyfunction]
fn components() -> Vec<(&'static str, &'static str, &'static str)> {
    veil_memnet::component_names()
}

/// (algorithm, the `[secure]` parameters it reads) of every routing algorithm.
#[pyfunction]
fn injection_params() -> Vec<(&'static str, Vec<&'static str>)> {
    veil_memnet::memsys::injection::INJECTION_PARAMS.iter().map(|(n, p)| (*n, p.to_vec())).collect()
}

/// Expected dummies per real packet of ghost routing over a permutation of `slots` modules
/// with one message at a time and uniform destinations (docs/memnet-memsys.md).
#[pyfunction]
fn ghost_dummies_analytic(slots: usize) -> PyResult<f64> {
    if slots == 0 {
        return Err(PyValueError::new_err("config: slots: must be >= 1"));
    }
    Ok(veil_memnet::memsys::injection::ghost_minimal::expected_dummies_one_at_a_time(slots))
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "memnet")?;
    m.add_function(wrap_pyfunction!(simulate, &m)?)?;
    m.add_function(wrap_pyfunction!(check, &m)?)?;
    m.add_function(wrap_pyfunction!(default_config, &m)?)?;
    m.add_function(wrap_pyfunction!(components, &m)?)?;
    m.add_function(wrap_pyfunction!(injection_params, &m)?)?;
    m.add_function(wrap_pyfunction!(ghost_dummies_analytic, &m)?)?;
    m.add_function(wrap_pyfunction!(simulate_memsys, &m)?)?;
    m.add_function(wrap_pyfunction!(simulate_memsys_observed, &m)?)?;
    m.add_function(wrap_pyfunction!(memsys_default_config, &m)?)?;
    m.add_function(wrap_pyfunction!(memsys_write_synthetic_trace, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
