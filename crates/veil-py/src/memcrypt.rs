//! `veil._native.memcrypt`: JSON in, JSON out over `veil-memcrypt`. Bad input is a ValueError
//! whose message is the crate's one-line description; runs release the GIL and stop on Ctrl-C
//! (KeyboardInterrupt).

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use veil_core::interrupt;
use veil_memcrypt::input;
use veil_memcrypt::sampled;
use veil_memcrypt::Error;

fn err(e: Error) -> PyErr {
    match e {
        Error::Config(m) => PyValueError::new_err(m),
        Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        Error::Integrity(m) => PyRuntimeError::new_err(format!("integrity check failed: {m}")),
    }
}

/// The interrupt poll of a run, also counting its records for the progress line: the model
/// polls once per 64 Ki records read (skipped and warm-up ones included, as in the total).
fn polled_with_progress(run: &str) -> impl Fn() -> bool + Send {
    let v: serde_json::Value = serde_json::from_str(run).unwrap_or_default();
    let n = |x: Option<&serde_json::Value>| x.and_then(|x| x.as_u64()).unwrap_or(0);
    let max = n(v.get("max_records"));
    let total = if max > 0 {
        max + n(v.get("skip_records")) + n(v.get("config").and_then(|c| c.get("warmup_records")))
    } else {
        0
    };
    veil_core::progress::start(total, "records");
    let polls = std::sync::atomic::AtomicU64::new(0);
    move || {
        let p = polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        veil_core::progress::set(p << 16);
        interrupt::requested()
    }
}

/// Timing model: `run` = {"config": {...}, "trace": path | "synth": {...}, "max_records": n,
/// "skip_records": k} (`config.warmup_records` records after the k skipped only warm the model up).
#[pyfunction]
fn simulate(py: Python<'_>, run: &str) -> PyResult<String> {
    let r = run.to_owned();
    let poll = polled_with_progress(&r);
    crate::interrupt::run(py, move || input::simulate_json(&r, &poll))?.map_err(err)
}

/// Sampled timing model: `run` as for `simulate`, with `sampling` (window, warmup, interval,
/// threads, first, last); returns the timed windows as JSON (combined by the caller).
#[pyfunction]
fn sample_windows(py: Python<'_>, run: &str) -> PyResult<String> {
    let r = run.to_owned();
    let poll = polled_with_progress(&r);
    crate::interrupt::run(py, move || veil_memcrypt::sampled::windows_json(&r, &poll))?.map_err(err)
}

/// Benchmark: (timed records, (wall, process CPU) seconds sequential, the same sampled) over
/// the same records decoded into memory; `run` carries its `sampling`.
#[pyfunction]
fn time_sampled(py: Python<'_>, run: &str) -> PyResult<(u64, sampled::Took, sampled::Took)> {
    let r: input::Run = serde_json::from_str(run).map_err(|e| PyValueError::new_err(format!("config: {e}")))?;
    let s = r.sampling.clone().ok_or_else(|| PyValueError::new_err("sampling: missing"))?;
    py.allow_threads(move || veil_memcrypt::sampled::time_sampled(&r, &s)).map_err(err)
}

/// The windows' first records (counted in the timed records) of a sampling over `records`
/// timed records; bad sampling options are a ValueError.
#[pyfunction]
fn sample_plan(records: u64, sampling: &str) -> PyResult<Vec<u64>> {
    veil_memcrypt::sampled::plan_json(records, sampling).map_err(err)
}

/// Functional model over the same input: real encryption, MACs and speculation on every line.
#[pyfunction]
fn check(py: Python<'_>, run: &str) -> PyResult<String> {
    let r = run.to_owned();
    let poll = polled_with_progress(&r);
    crate::interrupt::run(py, move || input::check_json(&r, &poll))?.map_err(err)
}

/// Writes a synthetic miss stream (`synth` as JSON) to a veil-trace file; returns the records.
#[pyfunction]
fn write_synth_trace(py: Python<'_>, path: &str, line_size: u32, synth: &str) -> PyResult<u64> {
    let s: veil_memcrypt::synth::SynthConfig =
        serde_json::from_str(synth).map_err(|e| PyValueError::new_err(format!("synth: {e}")))?;
    let p = path.to_owned();
    py.allow_threads(move || input::write_synth_trace(&p, line_size, &s)).map_err(err)
}

/// Benchmark: (records, seconds reading the input, seconds of the timing model alone); with
/// `reference`, the engines book as before the speed work (the same-run baseline).
#[pyfunction]
#[pyo3(signature = (run, reference = false))]
fn time_model(py: Python<'_>, run: &str, reference: bool) -> PyResult<(u64, f64, f64)> {
    let r: input::Run = serde_json::from_str(run).map_err(|e| PyValueError::new_err(format!("config: {e}")))?;
    py.allow_threads(move || input::time_model(&r, reference)).map_err(err)
}

/// The memory bus's view of a record stream (`veil_memcrypt::bus`): JSON in, JSON out.
#[pyfunction]
fn bus_view(py: Python<'_>, run: &str) -> PyResult<String> {
    let r = run.to_owned();
    py.allow_threads(move || veil_memcrypt::bus::observe_json(&r)).map_err(err)
}

/// The default machine configuration as JSON.
#[pyfunction]
fn defaults() -> String {
    input::default_config_json()
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "memcrypt")?;
    m.add_function(wrap_pyfunction!(simulate, &m)?)?;
    m.add_function(wrap_pyfunction!(check, &m)?)?;
    m.add_function(wrap_pyfunction!(sample_windows, &m)?)?;
    m.add_function(wrap_pyfunction!(sample_plan, &m)?)?;
    m.add_function(wrap_pyfunction!(time_sampled, &m)?)?;
    m.add_function(wrap_pyfunction!(defaults, &m)?)?;
    m.add_function(wrap_pyfunction!(write_synth_trace, &m)?)?;
    m.add_function(wrap_pyfunction!(time_model, &m)?)?;
    m.add_function(wrap_pyfunction!(bus_view, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
