//! `veil._native.oram`: measured runs (JSON in, JSON out) and the service's store.

use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use veil_oram::admit::AdmitConfig;
use veil_oram::http::{LogLevel, ServeConfig, Server, Stopped};
use veil_oram::service::{Source, Store};
use veil_oram::OramError;

fn to_py(e: OramError) -> PyErr {
    match e {
        OramError::Config(_) => PyValueError::new_err(e.to_string()),
        OramError::UnknownBlock { .. } => PyKeyError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Runs one measured configuration (see veil_oram::measure::RunConfig) and returns JSON; Ctrl-C
/// stops it at its next request (crate::interrupt::run).
#[pyfunction]
fn run(py: Python<'_>, config: &str) -> PyResult<String> {
    crate::interrupt::run(py, || veil_oram::measure::run_json(config))?.map_err(to_py)
}

/// Steady shuffles with copies in place of AES-GCM, then with AES-GCM (see
/// veil_oram::floor::FloorConfig); JSON in, JSON out.
#[pyfunction]
fn shuffle_floor(py: Python<'_>, config: &str) -> PyResult<String> {
    py.allow_threads(|| veil_oram::floor::run_json(config)).map_err(to_py)
}

/// The storage server's view of `ids` read in order (veil_oram::observe): per storage call the
/// request index, actor, op (codes of veil_oram::storage::{Actor, Op}), region and slot, and
/// the slot size in bytes and each region's slot count.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn observe(
    py: Python<'_>,
    engine: &str,
    n_blocks: u64,
    block_size: usize,
    seed: u64,
    ids: Vec<u64>,
) -> PyResult<(Vec<u32>, Vec<u8>, Vec<u8>, Vec<u32>, Vec<u64>, usize, Vec<u64>)> {
    let (seen, slot, regions) = py
        .allow_threads(|| veil_oram::observe::observe(engine, n_blocks, block_size, seed, &ids))
        .map_err(to_py)?;
    let req = seen.iter().map(|s| s.request).collect();
    let actor = seen.iter().map(|s| veil_oram::observe::actor_code(s.entry.actor)).collect();
    let op = seen.iter().map(|s| veil_oram::observe::op_code(s.entry.op)).collect();
    let region = seen.iter().map(|s| s.entry.region).collect();
    let index = seen.iter().map(|s| s.entry.index).collect();
    Ok((req, actor, op, region, index, slot, regions))
}

#[pyclass(frozen, name = "Store")]
struct PyStore {
    inner: Arc<Store>,
}

/// The service's settings from Python keywords (seconds for the timeouts).
#[allow(clippy::too_many_arguments)]
fn serve_config(
    token: String,
    host: String,
    port: u16,
    tls_dir: Option<PathBuf>,
    link_mbps: f64,
    latency_ms: f64,
    limits: Option<(usize, usize, f64, f64, f64, f64)>,
    log: &str,
    admit: Option<(usize, usize, f64)>,
    max_sessions: Option<usize>,
) -> PyResult<ServeConfig> {
    let mut c = ServeConfig::new(token);
    c.host = host;
    c.port = port;
    c.link_mbps = link_mbps;
    c.latency_ms = latency_ms;
    c.log = match log {
        "off" => LogLevel::Off,
        "info" => LogLevel::Info,
        "debug" => LogLevel::Debug,
        other => return Err(PyValueError::new_err(format!("log level {other:?}: one of off, info, debug"))),
    };
    if let Some((budget, per_addr, deadline)) = admit {
        c.admit = AdmitConfig { budget, per_addr, deadline: Duration::from_secs_f64(deadline.max(0.001)), ..AdmitConfig::default() };
    }
    if let Some(m) = max_sessions {
        c.max_sessions = m.max(1);
    }
    if let Some(d) = tls_dir {
        c.tls = Some(veil_oram::http::tls_files(&d).ok_or_else(|| {
            PyValueError::new_err(format!("{}: no tls.crt and tls.key (made by 'veil oram init')", d.display()))
        })?);
    }
    if let Some((conns, body, header, idle, body_t, request)) = limits {
        let secs = |x: f64| Duration::from_secs_f64(x.max(0.001));
        (c.max_connections, c.max_body) = (conns.max(1), body.max(64));
        (c.header_timeout, c.idle_timeout, c.body_timeout, c.request_timeout) =
            (secs(header), secs(idle), secs(body_t), secs(request));
    }
    Ok(c)
}

/// A server running on its own thread (`PyStore.serve`); `stop()` shuts it down gracefully.
#[pyclass(frozen, name = "Server")]
struct PyServer {
    inner: Mutex<Option<Server>>,
    #[pyo3(get)]
    port: u16,
    #[pyo3(get)]
    host: String,
}

#[pymethods]
impl PyServer {
    fn stop(&self, py: Python<'_>) {
        let s = self.inner.lock().unwrap().take();
        py.allow_threads(move || drop(s));
    }
}

#[pymethods]
impl PyStore {
    /// Creates a store in `dir` from `files` (chunked into blocks) or `n_blocks` synthetic ones;
    /// with `redis` ("host:port") the slots live in that Redis server.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (dir, block_size, files=None, n_blocks=None, seed=0, threads=0, redis=None, key_file=None, shuffle="clos"))]
    fn init(
        py: Python<'_>,
        dir: PathBuf,
        block_size: usize,
        files: Option<Vec<PathBuf>>,
        n_blocks: Option<u64>,
        seed: u64,
        threads: usize,
        redis: Option<String>,
        key_file: Option<PathBuf>,
        shuffle: &str,
    ) -> PyResult<Self> {
        let shuffle = veil_oram::cacheshuffle::ShuffleKind::from_name(shuffle).map_err(to_py)?;
        let source = match (files, n_blocks) {
            (Some(f), None) => Source::Files(f),
            (None, Some(n)) => Source::Synthetic { n_blocks: n, seed },
            _ => return Err(PyValueError::new_err("give either files or n_blocks")),
        };
        let inner = py
            .allow_threads(move || Store::init(&dir, block_size, source, threads, redis.as_deref(), key_file.as_deref(), shuffle))
            .map_err(to_py)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    #[staticmethod]
    #[pyo3(signature = (dir, threads=0, key_file=None))]
    fn open(py: Python<'_>, dir: PathBuf, threads: usize, key_file: Option<PathBuf>) -> PyResult<Self> {
        let inner = py.allow_threads(move || Store::open(&dir, threads, key_file.as_deref())).map_err(to_py)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Serves this store on a thread of its own (tests, embedding); see veil_oram::http.
    /// `limits`: (max connections, max body bytes, header, idle, body, request timeouts in s);
    /// `admit`: (unauthenticated connections in all, per address, seconds to authenticate).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (token, host="127.0.0.1".to_string(), port=0, tls_dir=None, link_mbps=0.0, latency_ms=0.0, limits=None, log="info", admit=None, max_sessions=None))]
    fn serve(
        &self,
        py: Python<'_>,
        token: String,
        host: String,
        port: u16,
        tls_dir: Option<PathBuf>,
        link_mbps: f64,
        latency_ms: f64,
        limits: Option<(usize, usize, f64, f64, f64, f64)>,
        log: &str,
        admit: Option<(usize, usize, f64)>,
        max_sessions: Option<usize>,
    ) -> PyResult<PyServer> {
        let cfg = serve_config(token, host, port, tls_dir, link_mbps, latency_ms, limits, log, admit, max_sessions)?;
        let store = self.inner.clone();
        let srv = py.allow_threads(move || Server::start(store, cfg)).map_err(to_py)?;
        let a = srv.addr();
        Ok(PyServer { inner: Mutex::new(Some(srv)), port: a.port(), host: a.ip().to_string() })
    }

    /// Serves until SIGINT or SIGTERM (`veil oram serve`); calls `ready(host, port)` once
    /// listening. Returns "interrupt" or "terminate".
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (token, ready, host="127.0.0.1".to_string(), port=0, tls_dir=None, link_mbps=0.0, latency_ms=0.0, log="info"))]
    fn serve_until_signal(
        &self,
        py: Python<'_>,
        token: String,
        ready: PyObject,
        host: String,
        port: u16,
        tls_dir: Option<PathBuf>,
        link_mbps: f64,
        latency_ms: f64,
        log: &str,
    ) -> PyResult<&'static str> {
        let cfg = serve_config(token, host, port, tls_dir, link_mbps, latency_ms, None, log, None, None)?;
        let store = self.inner.clone();
        let how = py
            .allow_threads(move || {
                veil_oram::http::serve_until_signal(store, cfg, |a| {
                    // a Ctrl-C that lands inside the callback surfaces there as KeyboardInterrupt;
                    // the server's own handler has it too and stops, so it is not reported twice
                    Python::with_gil(|py| {
                        let _ = ready.call1(py, (a.ip().to_string(), a.port()));
                    })
                })
            })
            .map_err(to_py)?;
        Ok(match how {
            Stopped::Interrupt => "interrupt",
            Stopped::Terminate => "terminate",
        })
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

/// Writes tls.crt / tls.key / tls.fingerprint into `dir`; returns the certificate's SHA-256.
#[pyfunction]
fn make_tls_identity(dir: PathBuf) -> PyResult<String> {
    veil_oram::http::make_tls_identity(&dir).map_err(to_py)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "oram")?;
    m.add_function(wrap_pyfunction!(make_tls_identity, &m)?)?;
    m.add_class::<PyServer>()?;
    m.add_function(wrap_pyfunction!(run, &m)?)?;
    m.add_function(wrap_pyfunction!(shuffle_floor, &m)?)?;
    m.add_function(wrap_pyfunction!(observe, &m)?)?;
    m.add_class::<PyStore>()?;
    parent.add_submodule(&m)?;
    Ok(())
}
