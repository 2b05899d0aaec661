mod common;
use common::*;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use veil_oram::crypto::{BlockKey, TAG_LEN};
use veil_oram::data::check_block;
use veil_oram::pathoram::{self, PathOram};
use veil_oram::plain::PlainStore;
use veil_oram::storage::{Actor, MemoryStorage, Storage};
use veil_oram::OramError;

#[test]
fn path_oram_returns_every_block_and_touches_one_path() {
    let n = 300;
    let bs = 24;
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(pathoram::slot_size(bs, 4), &[pathoram::buckets_for(n)]));
    let mut o = PathOram::create(st.clone(), n, bs, 4, 3, &fill).unwrap();
    let levels = o.levels() as usize + 1;
    st.log().set_enabled(true);
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    for _ in 0..3000 {
        let id = rng.gen_range(0..n);
        st.log().drain();
        assert!(check_block(SEED, id, &o.read(id).unwrap()));
        let log = st.log().drain();
        assert_eq!(log.len(), 2 * levels);
        assert!(log.iter().all(|e| e.actor == Actor::PathOram));
        assert_eq!(log[0].index, 0, "path starts at the root");
    }
    // Z = 4 with N/2 leaves keeps the stash small (Stefanov et al.: a few dozen at most)
    assert!(o.max_stash < 40, "stash grew to {}", o.max_stash);
    assert_eq!(o.bytes_per_access(), 2 * levels as u64 * pathoram::slot_size(bs, 4) as u64);
    assert!(matches!(o.read(n), Err(OramError::UnknownBlock { .. })));
    // a flipped bit in the root is detected on the next read
    st.flip_bit(0, 0, 100).unwrap();
    assert!(matches!(o.read(1), Err(OramError::Tamper { .. })));
}

#[test]
fn plain_store_reads_the_requested_slot() {
    let n = 40;
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(32 + TAG_LEN, &[n]));
    let mut p = PlainStore::create(st.clone(), n, 32, BlockKey::from_bytes([3; 16]), &fill).unwrap();
    st.log().set_enabled(true);
    for id in 0..n {
        assert!(check_block(SEED, id, &p.read(id).unwrap()));
    }
    let idx: Vec<u64> = st.log().drain().iter().map(|e| e.index).collect();
    assert_eq!(idx, (0..n).collect::<Vec<_>>());
    st.flip_bit(0, 4, 3).unwrap();
    assert!(matches!(p.read(4), Err(OramError::Tamper { region: 0, index: 4 })));
}

#[test]
fn measured_run_reports_consistent_numbers() {
    let r = veil_oram::measure::run_json(r#"{"engine":"proram","n_blocks":256,"block_size":1024,"accesses":64,"seed":1}"#).unwrap();
    let r: serde_json::Value = serde_json::from_str(&r).unwrap();
    assert_eq!(r["errors"], 0);
    assert_eq!(r["epoch_len"], 16);
    // per request: one slot read + the shuffle's 5 M slot transfers (2 reads, 3 writes) over 16 requests
    let slot = 1024.0 + 16.0;
    let want = slot + 5.0 * 289.0 * slot / 16.0;
    let got = r["bytes_per_access"].as_f64().unwrap();
    assert!((got - want).abs() / want < 0.15, "bytes/access {got} vs {want}");
    let e = veil_oram::measure::run_json(r#"{"engine":"nope","n_blocks":4,"block_size":4}"#).unwrap_err();
    assert!(e.to_string().contains("unknown engine 'nope'"));
    assert!(veil_oram::measure::run_json(r#"{"engine":"plain","n_blocks":4,"block_size":4,"bogus":1}"#).is_err());
}
