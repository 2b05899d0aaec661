//! `veil._native.oram`: measured runs (JSON in, JSON out) and the service's store.

use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use veil_oram::service::{Source, Store};
use veil_oram::OramError;

fn to_py(e: OramError) -> PyErr {
    match e {
        OramError::Config(_) => PyValueError::new_err(e.to_string()),
        OramError::UnknownBlock { .. } => PyKeyError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Runs one measured configuration (see veil_oram::measure::RunConfig) and returns JSON.
#[pyfunction]
fn run(py: Python<'_>, config: &str) -> PyResult<String> {
    let c = config.to_string();
    py.allow_threads(move || veil_oram::measure::run_json(&c)).map_err(to_py)
}

#[pyclass(frozen, name = "Store")]
struct PyStore {
    inner: Store,
}

#[pymethods]
impl PyStore {
    /// Creates a store in `dir` from `files` (chunked into blocks) or `n_blocks` synthetic ones;
    /// with `redis` ("host:port") the slots live in that Redis server.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (dir, block_size, files=None, n_blocks=None, seed=0, threads=0, redis=None))]
    fn init(
        py: Python<'_>,
        dir: PathBuf,
        block_size: usize,
        files: Option<Vec<PathBuf>>,
        n_blocks: Option<u64>,
        seed: u64,
        threads: usize,
        redis: Option<String>,
    ) -> PyResult<Self> {
        let source = match (files, n_blocks) {
            (Some(f), None) => Source::Files(f),
            (None, Some(n)) => Source::Synthetic { n_blocks: n, seed },
            _ => return Err(PyValueError::new_err("give either files or n_blocks")),
        };
        let inner = py.allow_threads(move || Store::init(&dir, block_size, source, threads, redis.as_deref())).map_err(to_py)?;
        Ok(Self { inner })
    }

    #[staticmethod]
    #[pyo3(signature = (dir, threads=0))]
    fn open(py: Python<'_>, dir: PathBuf, threads: usize) -> PyResult<Self> {
        let inner = py.allow_threads(move || Store::open(&dir, threads)).map_err(to_py)?;
        Ok(Self { inner })
    }

    /// Reads block `id` obliviously (the GIL is released; concurrent callers queue).
    fn read<'py>(&self, py: Python<'py>, id: u64) -> PyResult<Bound<'py, PyBytes>> {
        let d = py.allow_threads(|| self.inner.oram.read(id)).map_err(to_py)?;
        Ok(PyBytes::new(py, &d))
    }

    fn manifest(&self) -> String {
        veil_oram::serde_json::to_string(&self.inner.manifest).unwrap()
    }

    fn stats(&self) -> String {
        veil_oram::serde_json::to_string(&self.inner.oram.stats()).unwrap()
    }

    /// Starts (or stops) recording the storage access log: the adversary's view.
    fn record_log(&self, on: bool) {
        self.inner.oram.storage().log().set_enabled(on);
    }

    /// The log recorded so far as (actor, op, region, slot) tuples; clears it.
    fn drain_log(&self) -> Vec<(String, String, u32, u64)> {
        self.inner
            .oram
            .storage()
            .log()
            .drain()
            .into_iter()
            .map(|e| (format!("{:?}", e.actor), format!("{:?}", e.op), e.region, e.index))
            .collect()
    }

    /// Test hook standing for the adversary: the slot now holding block `id`.
    fn debug_slot_of(&self, id: u64) -> (u32, u64) {
        self.inner.oram.debug_slot_of(id)
    }
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "oram")?;
    m.add_function(wrap_pyfunction!(run, &m)?)?;
    m.add_class::<PyStore>()?;
    parent.add_submodule(&m)?;
    Ok(())
}
