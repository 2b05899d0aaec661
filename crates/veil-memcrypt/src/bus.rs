//! The memory bus's view of a record stream: what a physical attacker on the bus between the
//! chip and the SDRAM sees, record by record. The functional model gives the bytes that cross
//! (ciphertext chunks, MAC tags, each line's copy of its nonce), the timing model the accesses
//! (every SDRAM command with its time and line: data, bitmap, MAC and counter lines) and, apart,
//! what a program timing its own loads measures. Ciphertexts and tags leave as fingerprints (a
//! keyless 64-bit hash of each chunk): equality between chunks is all an observer can use of
//! a pseudorandom string, and the fingerprints keep it.
//!
//! `ecb` replaces the functional scheme by AES-ECB of each 16-byte chunk under one key with no
//! tweak or MAC: the negative control, whose equal plaintext chunks give equal ciphertexts.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use veil_crypto::AesCipher;

use crate::config::Config;
use crate::fvt::Fvt;
use crate::layout;
use crate::record::{Kind, Record};
use crate::secure::SecureMemory;
use crate::sim::Sim;
use crate::{Error, Result};

/// One run: the machine, the stream, and whether to put ECB on the bus instead of the scheme.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusRun {
    pub config: Config,
    #[serde(default)]
    pub ecb: bool,
    /// (kind: 0 load fill, 1 store fill, 2 writeback; line index; instructions since the
    /// previous record; the line's eight 64-bit words, little-endian)
    pub records: Vec<(u8, u64, u64, [u64; 8])>,
}

/// Per record: what crossed the bus. `accesses[i]` are the SDRAM accesses the timing model made
/// while processing record i, as (command time, line, last beat).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BusView {
    pub ct: Vec<Vec<u64>>,
    pub tags: Vec<Vec<u64>>,
    pub nonce: Vec<u64>,
    pub accesses: Vec<Vec<(f64, u64, f64)>>,
    /// Not the bus's view: the program's own measurement of each load fill (0 for others).
    pub load_latency: Vec<f64>,
}

fn fingerprint(b: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

fn record(k: u8, line: u64, insts: u64, w: &[u64; 8]) -> Result<Record> {
    let kind = match k {
        0 => Kind::LoadFill,
        1 => Kind::StoreFill,
        2 => Kind::Writeback,
        _ => return Err(Error::config(format!("records: kind {k} is not 0 (load fill), 1 (store fill) or 2 (writeback)"))),
    };
    let mut data = [0u8; 64];
    for (j, x) in w.iter().enumerate() {
        data[8 * j..8 * j + 8].copy_from_slice(&x.to_le_bytes());
    }
    Ok(Record { thread: 0, kind, addr: line << 6, insts, llc_hits: 0, data })
}

/// Runs the stream through the timing and functional models side by side.
pub fn observe(run: &BusRun) -> Result<BusView> {
    let cfg = &run.config;
    let scheme = cfg.validate()?;
    let mut sim = Sim::new(cfg)?;
    sim.log_bus();
    let mut mem = SecureMemory::new(scheme, cfg.seed)?;
    let mut fvt = Fvt::new(cfg.fvt_size, cfg.fvt_candidates, cfg.fvt_promote);
    let ecb = AesCipher::new(&crate::secure::key(cfg.seed, 5, 32)).map_err(Error::crypto)?;
    let cb = scheme.chunk_bytes();
    let mut v = BusView::default();
    for &(k, line, insts, w) in &run.records {
        let r = record(k, line, insts, &w)?;
        let before = sim.bus_accesses().len();
        sim.step(&r);
        v.accesses.push(sim.bus_accesses()[before..].to_vec());
        v.load_latency.push(if r.kind == Kind::LoadFill { sim.last_load_latency() } else { 0.0 });
        if r.kind == Kind::Writeback {
            mem.write_line(line, &r.data, &fvt)?;
        } else if !mem.contains(line) {
            mem.load_line(line, &r.data, &fvt)?;
        }
        if r.kind != Kind::Writeback {
            let f = mem.fetch_line(line, &fvt)?;
            if f.plaintext != r.data {
                return Err(Error::config(format!("records: line {line:#x} is read back with other bytes than were written \
                                                  (the stream must be consistent)")));
            }
            for x in layout::words(&r.data) {
                fvt.observe(x);
            }
        }
        let s = mem.stored(line).expect("written above");
        if run.ecb {
            let mut b = r.data;
            ecb.encrypt_ecb(&mut b).map_err(Error::crypto)?;
            v.ct.push(b.chunks(16).map(fingerprint).collect());
            v.tags.push(Vec::new());
            v.nonce.push(0);
        } else {
            v.ct.push(s.ct.chunks(cb).map(fingerprint).collect());
            v.tags.push(s.tags[..scheme.chunks()].iter().map(|t| fingerprint(t)).collect());
            v.nonce.push(s.nonce);
        }
    }
    Ok(v)
}

pub fn observe_json(json: &str) -> std::result::Result<String, Error> {
    let run: BusRun = serde_json::from_str(json).map_err(|e| Error::config(format!("bus run: {e}")))?;
    let v = observe(&run)?;
    serde_json::to_string(&v).map_err(|e| Error::config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ecb: bool) -> BusView {
        let config = Config { warmup_records: 0, pointer_dependences: false, ..Config::default() };
        // Zero lines written back and read again at several addresses.
        let records = (0..64u64).map(|i| ((if i % 2 == 0 { 2 } else { 0 }), i / 2 * 97, 30, [0u64; 8])).collect();
        observe(&BusRun { config, ecb, records }).unwrap()
    }

    #[test]
    fn the_real_scheme_hides_equal_plaintext_and_ecb_does_not() {
        let (real, ecb) = (run(false), run(true));
        let distinct = |v: &BusView| v.ct.iter().flatten().collect::<std::collections::HashSet<_>>().len();
        // A fill carries what the writeback before it stored: 32 lines x 4 chunks, all distinct.
        assert_eq!(distinct(&real), 32 * 4);
        assert_eq!(distinct(&ecb), 1);
        assert!(real.tags.iter().all(|t| t.len() == 4) && ecb.tags.iter().all(|t| t.is_empty()));
    }

    #[test]
    fn every_record_goes_to_memory_and_loads_have_a_latency() {
        let v = run(false);
        assert!(v.accesses.iter().all(|a| !a.is_empty()));
        for (i, lat) in v.load_latency.iter().enumerate() {
            assert_eq!(*lat > 0.0, i % 2 == 1, "record {i}");
        }
    }

    #[test]
    fn an_unknown_kind_is_a_config_error() {
        let json = r#"{"config": {}, "records": [[7, 1, 1, [0,0,0,0,0,0,0,0]]]}"#;
        assert!(matches!(observe_json(json), Err(Error::Config(m)) if m.contains("kind 7")));
    }
}
