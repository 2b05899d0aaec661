//! `veil._native.trace`: the Rust side of `veil.trace`: packing the Valgrind tool's raw stream
//! into a compressed trace, statistics, reading speed. Errors are ValueErrors carrying the
//! trace crate's one-line message (with the byte offset where there is one).

use std::fs::File;
use std::io::BufReader;
use std::os::fd::FromRawFd;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use veil_trace::{Codec, Header, ReadOptions, Record, TraceError, TraceReader, TraceWriter};

fn err(e: TraceError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn codec(name: &str) -> PyResult<Codec> {
    Codec::parse(name).map_err(PyValueError::new_err)
}

/// Reads a trace stream from file descriptor `fd` (taking ownership: it is closed at the end),
/// writes it to `out` with `codec` (`lz4`, `zstd`, `zstd:LEVEL`, `raw`) and the header's
/// top-level keys replaced by those in `header_json` (an object; `extra` is merged key by key).
/// A per-thread L1 stream (the tool's `--stream=l1`) is replayed through the shared LLC in
/// quanta of `quantum` instructions (`veil_trace::replay`), spooling next to `out`.
/// Returns the summary as JSON.
#[pyfunction]
#[pyo3(signature = (fd, out, header_json, quantum = veil_trace::replay::DEFAULT_QUANTUM, *, codec = "lz4"))]
fn pack_fd(py: Python<'_>, fd: i32, out: &str, header_json: &str, quantum: u64, codec: &str) -> PyResult<String> {
    let patch: serde_json::Value =
        serde_json::from_str(header_json).map_err(|e| PyValueError::new_err(format!("header_json: {e}")))?;
    let codec = self::codec(codec)?;
    py.allow_threads(|| {
        // SAFETY: the caller hands over an open descriptor it no longer uses.
        let src = unsafe { File::from_raw_fd(fd) };
        let mut r = TraceReader::new(BufReader::with_capacity(1 << 20, src))?;
        let header = patched(r.header(), &patch)?;
        if header.extra.get("stream").and_then(|v| v.as_str()) == Some("l1") {
            let s = veil_trace::replay::replay(r, out, header, quantum, format!("{out}.spool"), codec)?;
            return Ok(serde_json::to_string(&s).expect("summary serialises"));
        }
        let mut w = TraceWriter::create(out, &header)?;
        w.set_codec(codec)?;
        let mut rec = Record::default();
        while r.next_into(&mut rec)? {
            w.write(&rec)?;
        }
        let stats = r.summary().map(|s| s.stats.clone()).unwrap_or_default();
        let s = w.finish_with(stats)?;
        Ok(serde_json::to_string(&s).expect("summary serialises"))
    })
    .map_err(err)
}

fn patched(h: &Header, patch: &serde_json::Value) -> Result<Header, TraceError> {
    let mut v = serde_json::to_value(h).expect("header serialises");
    if let (Some(obj), Some(p)) = (v.as_object_mut(), patch.as_object()) {
        for (k, val) in p {
            match (k.as_str(), obj.get_mut("extra").and_then(|e| e.as_object_mut()), val.as_object()) {
                ("extra", Some(extra), Some(add)) => extra.extend(add.clone()),
                _ => {
                    obj.insert(k.clone(), val.clone());
                }
            }
        }
    }
    serde_json::from_value(v).map_err(|e| TraceError::Invalid(format!("patched header: {e}")))
}

/// `veil trace stats`: per-thread counts, MPKI, top values and their coverage for each N in
/// `ns`, as JSON.
#[pyfunction]
fn stats(py: Python<'_>, path: &str, ns: Vec<usize>) -> PyResult<String> {
    let s = crate::interrupt::run(py, || {
        veil_trace::stats::compute_until(path, &ns, &veil_core::interrupt::requested)
    })?
    .map_err(err)?;
    Ok(serde_json::to_string(&s).expect("stats serialise"))
}

/// Header of a trace, as JSON.
#[pyfunction]
fn header(path: &str) -> PyResult<String> {
    let r = TraceReader::open(path).map_err(err)?;
    Ok(serde_json::to_string(r.header()).expect("header serialises"))
}

/// Summary of a complete trace (read from its end), as JSON.
#[pyfunction]
fn summary(path: &str) -> PyResult<String> {
    let s = TraceReader::read_summary(path).map_err(err)?;
    Ok(serde_json::to_string(&s).expect("summary serialises"))
}

/// Rewrites the trace `src` into `dst` with `codec`; returns the new summary as JSON.
#[pyfunction]
fn recode(py: Python<'_>, src: &str, dst: &str, codec: &str) -> PyResult<String> {
    let codec = self::codec(codec)?;
    let s = py.allow_threads(|| veil_trace::recode(src, dst, codec)).map_err(err)?;
    Ok(serde_json::to_string(&s).expect("summary serialises"))
}

/// Reads the whole trace, every block's checks (CRC, decoding, kinds, aligned addresses) and its
/// end, and returns its records: a run that reads only the first records still learns of damage
/// after them.
#[pyfunction]
fn verify(py: Python<'_>, path: &str) -> PyResult<u64> {
    py.allow_threads(|| {
        let mut r = TraceReader::open_with(path, ReadOptions { threads: 2, read_ahead: 0 })?;
        let mut n = 0u64;
        while r.next_ref()?.is_some() {
            n += 1;
        }
        Ok(n)
    })
    .map_err(err)
}

/// Reads every record (`mode`: `next_into` copies each into a `Record`, `next_ref` and
/// `for_each` borrow it from the decoded block) with `threads` decoding; touches each record's
/// address and a byte of its line. Returns (records, wall seconds) for the benchmark.
#[pyfunction]
#[pyo3(signature = (path, threads = 1, mode = "next_into"))]
fn read_speed(py: Python<'_>, path: &str, threads: usize, mode: &str) -> PyResult<(u64, f64)> {
    if !["next_into", "next_ref", "for_each"].contains(&mode) {
        return Err(PyValueError::new_err(format!("mode {mode:?} is not next_into, next_ref or for_each")));
    }
    py.allow_threads(|| {
        let t0 = Instant::now();
        let mut r = TraceReader::open_with(path, ReadOptions { threads, read_ahead: 0 })?;
        let mut n = 0u64;
        let mut sink = 0u64;
        match mode {
            "next_into" => {
                let mut rec = Record::default();
                while r.next_into(&mut rec)? {
                    n += 1;
                    sink = sink.wrapping_add(rec.addr ^ rec.data[7] as u64);
                }
            }
            "next_ref" => {
                while let Some(rec) = r.next_ref()? {
                    n += 1;
                    sink = sink.wrapping_add(rec.addr ^ rec.data[7] as u64);
                }
            }
            _ => n = r.for_each_record(|rec| sink = sink.wrapping_add(rec.addr ^ rec.data[7] as u64))?,
        }
        std::hint::black_box(sink);
        Ok((n, t0.elapsed().as_secs_f64()))
    })
    .map_err(err)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "trace")?;
    m.add("FORMAT_VERSION", veil_trace::FORMAT_VERSION)?;
    m.add("MIN_FORMAT_VERSION", veil_trace::MIN_FORMAT_VERSION)?;
    m.add("REPLAY_VERSION", veil_trace::replay::REPLAY_VERSION)?;
    m.add("REPLAY_QUANTUM", veil_trace::replay::DEFAULT_QUANTUM)?;
    m.add_function(wrap_pyfunction!(pack_fd, &m)?)?;
    m.add_function(wrap_pyfunction!(stats, &m)?)?;
    m.add_function(wrap_pyfunction!(header, &m)?)?;
    m.add_function(wrap_pyfunction!(summary, &m)?)?;
    m.add_function(wrap_pyfunction!(read_speed, &m)?)?;
    m.add_function(wrap_pyfunction!(verify, &m)?)?;
    m.add_function(wrap_pyfunction!(recode, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
