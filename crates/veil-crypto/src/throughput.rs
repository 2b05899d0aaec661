//! Throughput measurement of the engines: each of `threads` threads encrypts its own
//! `size`-byte buffer again and again for at least `min_seconds`.

use std::time::Instant;

use aes::cipher::KeyInit;
use aes_gcm::aead::AeadInPlace;

use crate::block::AesCipher;
use crate::ctr::AesCtr;
use crate::error::{CryptoError, Result};
use crate::gcm::Gcm;
use crate::line::{LineCipher, LineMac, LINE_BYTES};
use crate::tdes::Tdes;

/// (name, one-line description, required size multiple in bytes).
const ENGINES: &[(&str, &str, usize)] = &[
    (
        "aes-128-ecb",
        "AES-128 on independent 16-byte blocks (raw block cipher rate)",
        16,
    ),
    (
        "aes-256-ecb",
        "AES-256 on independent 16-byte blocks (raw block cipher rate)",
        16,
    ),
    (
        "aes-128-ctr",
        "AES-128-CTR pad XORed over the buffer (ghost routing pads)",
        1,
    ),
    (
        "aes-256-ctr",
        "AES-256-CTR pad XORed over the buffer (ghost routing pads)",
        1,
    ),
    (
        "aes-128-gcm",
        "AES-128-GCM seal of the whole buffer, AWS-LC backend (ORAM blocks)",
        1,
    ),
    (
        "aes-256-gcm",
        "AES-256-GCM seal of the whole buffer, AWS-LC backend (ORAM blocks)",
        1,
    ),
    (
        "aes-128-gcm-rustcrypto",
        "AES-128-GCM seal with RustCrypto aes-gcm 0.10 (for comparison)",
        1,
    ),
    (
        "xts-aes-128-line",
        "XTS-AES-128 per 64-byte line, tweak = line address (memory encryption)",
        64,
    ),
    (
        "xts-aes-128-line-mac",
        "XTS-AES-128 per 64-byte line plus 4 CMAC-64 chunk tags per line",
        64,
    ),
    (
        "tdes-ecb",
        "3-key Triple-DES on independent 8-byte blocks (memory encryption pads)",
        8,
    ),
];

/// The engine names with one-line descriptions.
pub fn engines() -> Vec<(&'static str, &'static str)> {
    ENGINES.iter().map(|(n, d, _)| (*n, *d)).collect()
}

/// A throughput measurement. `gbps` is in gigabytes (10^9 bytes) per second, summed over
/// threads; `seconds` is wall time from the first thread's start to the last one's end.
#[derive(Debug, Clone, PartialEq)]
pub struct Throughput {
    pub bytes: u64,
    pub seconds: f64,
    pub gbps: f64,
    pub iterations: u64,
}

#[allow(clippy::large_enum_variant)] // one per thread
enum Engine {
    Ecb(AesCipher),
    Ctr(AesCtr),
    Gcm(Gcm),
    GcmRustCrypto(Box<aes_gcm::Aes128Gcm>),
    Line(LineCipher, Option<LineMac>),
    Tdes(Tdes),
}

fn key(n: usize) -> Vec<u8> {
    (0..n as u8)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect()
}

impl Engine {
    fn new(name: &str) -> Result<Self> {
        Ok(match name {
            "aes-128-ecb" => Engine::Ecb(AesCipher::new(&key(16))?),
            "aes-256-ecb" => Engine::Ecb(AesCipher::new(&key(32))?),
            "aes-128-ctr" => Engine::Ctr(AesCtr::new(&key(16))?),
            "aes-256-ctr" => Engine::Ctr(AesCtr::new(&key(32))?),
            "aes-128-gcm" => Engine::Gcm(Gcm::new(&key(16))?),
            "aes-256-gcm" => Engine::Gcm(Gcm::new(&key(32))?),
            "aes-128-gcm-rustcrypto" => Engine::GcmRustCrypto(Box::new(
                aes_gcm::Aes128Gcm::new_from_slice(&key(16))
                    .map_err(|_| CryptoError::input("bad RustCrypto AES-GCM key"))?,
            )),
            "xts-aes-128-line" => Engine::Line(LineCipher::new(&key(32))?, None),
            "xts-aes-128-line-mac" => {
                Engine::Line(LineCipher::new(&key(32))?, Some(LineMac::new(&key(16))?))
            }
            "tdes-ecb" => Engine::Tdes(Tdes::new(&key(24))?),
            _ => unreachable!("engine names are checked against ENGINES first"),
        })
    }

    /// One pass over `buf`; `iter` makes nonces/counters unique per pass.
    fn pass(&self, buf: &mut [u8], iter: u64) -> Result<()> {
        match self {
            Engine::Ecb(c) => c.encrypt_ecb(buf),
            Engine::Ctr(c) => c.xor(&iter.to_be_bytes(), 0, buf),
            Engine::Gcm(g) => g.seal_in_place(&nonce96(iter), b"", buf).map(|_| ()),
            Engine::GcmRustCrypto(g) => g
                .encrypt_in_place_detached((&nonce96(iter)).into(), b"", buf)
                .map(|_| ())
                .map_err(|_| CryptoError::input("RustCrypto AES-GCM refused the buffer")),
            Engine::Line(l, mac) => {
                for (i, line) in buf.chunks_exact_mut(LINE_BYTES).enumerate() {
                    let addr = (i * LINE_BYTES) as u64;
                    l.encrypt_line(addr, iter, line)?;
                    if let Some(m) = mac {
                        std::hint::black_box(m.line_macs(addr, iter, line, 16)?);
                    }
                }
                Ok(())
            }
            Engine::Tdes(t) => t.encrypt_ecb(buf),
        }
    }
}

fn nonce96(iter: u64) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&iter.to_be_bytes());
    n
}

/// Measures `engine` on `threads` threads, each encrypting its own `size`-byte buffer
/// repeatedly until at least `min_seconds` have passed (at least one pass per thread). The
/// buffer stays in the core's caches: the engine's speed with no memory traffic.
pub fn throughput(
    engine: &str,
    size: usize,
    threads: usize,
    min_seconds: f64,
) -> Result<Throughput> {
    throughput_over(engine, size, threads, min_seconds, size)
}

/// [`throughput`] with each thread cycling through `working_set / size` buffers of `size`
/// bytes in turn (at least one): a working set larger than the caches makes every pass read
/// and write memory, as a store's shuffle does, which an in-cache buffer hides.
pub fn throughput_over(
    engine: &str,
    size: usize,
    threads: usize,
    min_seconds: f64,
    working_set: usize,
) -> Result<Throughput> {
    let Some(&(_, _, multiple)) = ENGINES.iter().find(|(n, _, _)| *n == engine) else {
        let known: Vec<&str> = ENGINES.iter().map(|(n, _, _)| *n).collect();
        return Err(CryptoError::input(format!(
            "unknown engine '{engine}'; known engines: {}",
            known.join(", ")
        )));
    };
    if size == 0 || size > 1 << 30 {
        return Err(CryptoError::input(format!(
            "size must be 1..=2^30 bytes, got {size}"
        )));
    }
    if size % multiple != 0 {
        return Err(CryptoError::input(format!(
            "engine '{engine}' needs a size that is a multiple of {multiple} bytes, got {size}"
        )));
    }
    if threads == 0 || threads > 1024 {
        return Err(CryptoError::input(format!(
            "threads must be 1..=1024, got {threads}"
        )));
    }
    if !min_seconds.is_finite() || !(0.0..=600.0).contains(&min_seconds) {
        return Err(CryptoError::input(format!(
            "min_seconds must be within 0..=600, got {min_seconds}"
        )));
    }
    if working_set > 1 << 32 {
        return Err(CryptoError::input(format!(
            "working set must be at most 2^32 bytes per thread, got {working_set}"
        )));
    }
    let buffers = (working_set / size).max(1);
    // Time is checked once per batch so that clock reads stay negligible for tiny buffers.
    let batch = (65536 / size).max(1) as u64;
    veil_core::progress::start((min_seconds * 1e3) as u64, "ms");
    let results: Vec<Result<(u64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || -> Result<(u64, f64)> {
                    let eng = Engine::new(engine)?;
                    let mut bufs: Vec<Vec<u8>> =
                        (0..buffers).map(|_| (0..size).map(|i| i as u8).collect()).collect();
                    let t0 = Instant::now();
                    let mut iters = 0u64;
                    loop {
                        for _ in 0..batch {
                            eng.pass(&mut bufs[iters as usize % buffers], iters)?;
                            iters += 1;
                        }
                        let elapsed = t0.elapsed();
                        if elapsed.as_secs_f64() >= min_seconds {
                            break;
                        }
                        if veil_core::interrupt::requested() {
                            return Err(CryptoError::Interrupted);
                        }
                        veil_core::progress::set(elapsed.as_millis() as u64);
                    }
                    std::hint::black_box(&bufs);
                    // Timed from this thread's first pass: filling a large working set is not
                    // the engine's work.
                    Ok((iters, t0.elapsed().as_secs_f64()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CryptoError::input("a throughput thread panicked")))
            })
            .collect()
    });
    let (mut iterations, mut seconds, mut rate) = (0u64, 0.0f64, 0.0f64);
    for r in results {
        let (n, secs) = r?;
        iterations += n;
        seconds = seconds.max(secs);
        rate += (n * size as u64) as f64 / secs.max(1e-9);
    }
    Ok(Throughput {
        bytes: iterations * size as u64,
        seconds,
        gbps: rate / 1e9,
        iterations,
    })
}
