//! `veil._native.crypto`: thin wrappers over `veil-crypto`. Every error is a ValueError whose
//! message is the crate's one-line description; bulk work runs without the GIL.

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use veil_crypto as vc;

fn err(e: vc::CryptoError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Python ints of any size arrive here so that a negative or huge value is a ValueError
/// naming the argument, like every other bad input.
fn u64_arg(name: &str, v: i128) -> PyResult<u64> {
    u64::try_from(v)
        .map_err(|_| PyValueError::new_err(format!("{name} must be within 0..=2^64-1, got {v}")))
}

/// [(name, one-line description)] of the throughput engines.
#[pyfunction]
fn engines() -> Vec<(&'static str, &'static str)> {
    vc::engines()
}

/// Encrypt a `size`-byte buffer repeatedly on `threads` threads for at least `min_seconds`
/// (with `working_set`, each thread cycles through that many bytes of such buffers: memory
/// traffic as a large store has it); returns {engine, size, threads, bytes, seconds, gb_per_s
/// (1e9 bytes/s), iterations}.
#[pyfunction]
#[pyo3(signature = (engine, size, threads=1, min_seconds=0.5, working_set=None))]
fn throughput<'py>(
    py: Python<'py>,
    engine: &str,
    size: usize,
    threads: usize,
    min_seconds: f64,
    working_set: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let ws = working_set.unwrap_or(size);
    let t = crate::interrupt::run(py, || vc::throughput_over(engine, size, threads, min_seconds, ws))?.map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("engine", engine)?;
    d.set_item("size", size)?;
    d.set_item("threads", threads)?;
    d.set_item("bytes", t.bytes)?;
    d.set_item("seconds", t.seconds)?;
    d.set_item("gb_per_s", t.gbps)?;
    d.set_item("iterations", t.iterations)?;
    Ok(d)
}

/// Whether AES runs on hardware instructions (AES-NI) on this CPU.
#[pyfunction]
fn hardware_aes() -> bool {
    vc::hardware_aes()
}

/// One-block ciphers: `NAME(key, block) -> bytes` over `veil_crypto::NAME`, one definition for all
/// four (the doc comment of each is its Python docstring).
macro_rules! block_ciphers {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        fn $name<'py>(py: Python<'py>, key: &[u8], block: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
            Ok(PyBytes::new(py, &vc::$name(key, block).map_err(err)?))
        }
    )*};
}

block_ciphers! {
    /// AES-128/192/256 encryption of one 16-byte block.
    aes_encrypt_block;
    /// AES-128/192/256 decryption of one 16-byte block.
    aes_decrypt_block;
    /// 3-key Triple-DES (EDE) encryption of one 8-byte block; key = K1 ‖ K2 ‖ K3 (24 bytes).
    tdes_encrypt_block;
    /// 3-key Triple-DES (EDE) decryption of one 8-byte block.
    tdes_decrypt_block;
}

/// The `length`-byte AES-CTR pad for counter block nonce (8 bytes) ‖ counter (u64 BE).
#[pyfunction]
fn ctr_pad<'py>(
    py: Python<'py>,
    key: &[u8],
    nonce: &[u8],
    counter: i128,
    length: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    ctr(py, key, nonce, counter, &[], length)
}

/// `data` XOR the AES-CTR pad of (key, nonce, counter): encrypts and decrypts.
#[pyfunction]
fn ctr_xor<'py>(
    py: Python<'py>,
    key: &[u8],
    nonce: &[u8],
    counter: i128,
    data: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    ctr(py, key, nonce, counter, data, 0)
}

/// `src` and `tail` zero bytes XOR the AES-CTR pad of (key, nonce, counter): a pad alone is
/// the XOR of zeros.
fn ctr<'py>(py: Python<'py>, key: &[u8], nonce: &[u8], counter: i128, src: &[u8], tail: usize) -> PyResult<Bound<'py, PyBytes>> {
    let counter = u64_arg("counter", counter)?;
    let ctr = vc::AesCtr::new(key).map_err(err)?;
    bytes_from(py, src, tail, |out| ctr.xor(nonce, counter, out))
}

/// AES-GCM encryption (16/32-byte key, 12-byte nonce): returns ciphertext ‖ 16-byte tag.
#[pyfunction]
fn gcm_seal<'py>(
    py: Python<'py>,
    key: &[u8],
    nonce: &[u8],
    aad: &[u8],
    plaintext: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let gcm = vc::Gcm::new(key).map_err(err)?;
    let n = plaintext.len();
    bytes_from(py, plaintext, vc::GCM_TAG_LEN, |out| {
        let tag = gcm.seal_in_place(nonce, aad, &mut out[..n])?;
        out[n..].copy_from_slice(&tag);
        Ok(())
    })
}

/// AES-GCM decryption of ciphertext ‖ tag; raises ValueError on any tag mismatch.
#[pyfunction]
fn gcm_open<'py>(
    py: Python<'py>,
    key: &[u8],
    nonce: &[u8],
    aad: &[u8],
    sealed: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let gcm = vc::Gcm::new(key).map_err(err)?;
    if sealed.len() < vc::GCM_TAG_LEN {
        // The crate's own message for this case.
        return Err(err(gcm.open(nonce, aad, sealed).unwrap_err()));
    }
    let (ct, tag) = sealed.split_at(sealed.len() - vc::GCM_TAG_LEN);
    bytes_from(py, ct, 0, |out| gcm.open_in_place(nonce, aad, out, tag))
}

/// Builds a bytes object holding `src` followed by `tail` zero bytes, then lets `fill`
/// transform it in place, all without the GIL. Writing straight into the new object (no
/// intermediate Vec, no zero-fill of the part `src` overwrites) keeps large calls near the
/// engine's speed: with an intermediate 256 KB Vec every call paid a fresh mmap and its page
/// faults, which made `gcm_seal` ~10x slower than the engine.
fn bytes_from<'py>(
    py: Python<'py>,
    src: &[u8],
    tail: usize,
    fill: impl FnOnce(&mut [u8]) -> vc::Result<()> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    let len = src.len() + tail;
    if len > isize::MAX as usize {
        return Err(PyValueError::new_err(format!(
            "output of {len} bytes is too large"
        )));
    }
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) returns a new, uninitialised bytes object of
    // n bytes (or NULL with an exception set, turned into Err). Nothing else can reach the
    // object until we return it, so writing its buffer without the GIL is sound. Every byte
    // is written (copy of `src`, zeroed tail) before the slice is formed and handed to `fill`.
    unsafe {
        let ptr = ffi::PyBytes_FromStringAndSize(std::ptr::null(), len as ffi::Py_ssize_t);
        let obj = Bound::from_owned_ptr_or_err(py, ptr)?.downcast_into_unchecked::<PyBytes>();
        let addr = ffi::PyBytes_AsString(ptr) as usize;
        py.allow_threads(move || {
            let data = addr as *mut u8;
            std::ptr::copy_nonoverlapping(src.as_ptr(), data, src.len());
            std::ptr::write_bytes(data.add(src.len()), 0, tail);
            fill(std::slice::from_raw_parts_mut(data, len))
        })
        .map_err(err)?;
        Ok(obj)
    }
}

/// XTS-AES encryption of one 64-byte line; xts_key = K1 ‖ K2 (32 or 64 bytes, halves
/// differ); tweak = address | version << 64.
#[pyfunction]
#[pyo3(signature = (xts_key, address, line, version=0))]
fn line_encrypt<'py>(
    py: Python<'py>,
    xts_key: &[u8],
    address: i128,
    line: &[u8],
    version: i128,
) -> PyResult<Bound<'py, PyBytes>> {
    line_op(py, xts_key, address, line, version, vc::LineCipher::encrypt_line)
}

/// Inverse of `line_encrypt` (no authentication: check `line_verify` first).
#[pyfunction]
#[pyo3(signature = (xts_key, address, line, version=0))]
fn line_decrypt<'py>(
    py: Python<'py>,
    xts_key: &[u8],
    address: i128,
    line: &[u8],
    version: i128,
) -> PyResult<Bound<'py, PyBytes>> {
    line_op(py, xts_key, address, line, version, vc::LineCipher::decrypt_line)
}

/// A copy of `line` put through `op` (XTS encryption or decryption) under `xts_key`.
fn line_op<'py>(
    py: Python<'py>,
    xts_key: &[u8],
    address: i128,
    line: &[u8],
    version: i128,
    op: fn(&vc::LineCipher, u64, u64, &mut [u8]) -> vc::Result<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let (a, v) = (u64_arg("address", address)?, u64_arg("version", version)?);
    let mut out = line.to_vec();
    vc::LineCipher::new(xts_key).and_then(|c| op(&c, a, v, &mut out)).map_err(err)?;
    Ok(PyBytes::new(py, &out))
}

/// 8-byte tags, one per `chunk`-byte chunk (8 or 16) of a 64-byte ciphertext line:
/// MSB64(CMAC-AES-128(mac_key, address_le64 ‖ version_le64 ‖ index_u8 ‖ chunk_u8 ‖ C_i)).
#[pyfunction]
#[pyo3(signature = (mac_key, address, ciphertext, version=0, chunk=16))]
fn line_macs<'py>(
    py: Python<'py>,
    mac_key: &[u8],
    address: i128,
    ciphertext: &[u8],
    version: i128,
    chunk: usize,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let (a, v) = (u64_arg("address", address)?, u64_arg("version", version)?);
    let tags = vc::LineMac::new(mac_key)
        .and_then(|m| m.line_macs(a, v, ciphertext, chunk))
        .map_err(err)?;
    Ok(tags.iter().map(|t| PyBytes::new(py, t)).collect())
}

/// Checks every chunk tag of a ciphertext line; raises ValueError naming the bad chunks.
#[pyfunction]
#[pyo3(signature = (mac_key, address, ciphertext, tags, version=0, chunk=16))]
fn line_verify(
    mac_key: &[u8],
    address: i128,
    ciphertext: &[u8],
    tags: Vec<Vec<u8>>,
    version: i128,
    chunk: usize,
) -> PyResult<()> {
    let (a, v) = (u64_arg("address", address)?, u64_arg("version", version)?);
    let tags: Vec<[u8; 8]> = tags
        .iter()
        .map(|t| t.as_slice().try_into())
        .collect::<Result<_, _>>()
        .map_err(|_| PyValueError::new_err("every chunk tag must be 8 bytes"))?;
    vc::LineMac::new(mac_key)
        .and_then(|m| m.verify_line(a, v, ciphertext, chunk, &tags))
        .map_err(err)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "crypto")?;
    m.add(
        "__doc__",
        "Veil crypto engines: AES, AES-CTR pads, AES-GCM, XTS-AES lines with chunk MACs, TDES",
    )?;
    m.add("LINE_BYTES", vc::LINE_BYTES)?;
    m.add_function(wrap_pyfunction!(engines, &m)?)?;
    m.add_function(wrap_pyfunction!(throughput, &m)?)?;
    m.add_function(wrap_pyfunction!(hardware_aes, &m)?)?;
    m.add_function(wrap_pyfunction!(aes_encrypt_block, &m)?)?;
    m.add_function(wrap_pyfunction!(aes_decrypt_block, &m)?)?;
    m.add_function(wrap_pyfunction!(ctr_pad, &m)?)?;
    m.add_function(wrap_pyfunction!(ctr_xor, &m)?)?;
    m.add_function(wrap_pyfunction!(gcm_seal, &m)?)?;
    m.add_function(wrap_pyfunction!(gcm_open, &m)?)?;
    m.add_function(wrap_pyfunction!(line_encrypt, &m)?)?;
    m.add_function(wrap_pyfunction!(line_decrypt, &m)?)?;
    m.add_function(wrap_pyfunction!(line_macs, &m)?)?;
    m.add_function(wrap_pyfunction!(line_verify, &m)?)?;
    m.add_function(wrap_pyfunction!(tdes_encrypt_block, &m)?)?;
    m.add_function(wrap_pyfunction!(tdes_decrypt_block, &m)?)?;
    parent.add_submodule(&m)?;
    // Lets `import veil._native.crypto` / `from veil._native.crypto import ...` work too.
    parent
        .py()
        .import("sys")?
        .getattr("modules")?
        .set_item("veil._native.crypto", &m)?;
    Ok(())
}
