//! The freshness count a client checks (`ProOram::served_epochs`): only requests advance it,
//! never a restart, and it is what storage durably records, so an old copy of the store stays
//! behind a newer one however often it is reopened.

mod common;

use common::*;
use std::sync::Arc;
use veil_oram::crypto::TAG_LEN;
use veil_oram::proram::{region_slots, ProOram, DEFAULT_RUN_AHEAD};
use veil_oram::storage::{FileStorage, Storage};

fn file_store(dir: &std::path::Path, n: u64, bs: usize) {
    let st: Arc<dyn Storage> = Arc::new(FileStorage::create(dir, bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()).unwrap());
    drop(ProOram::create(st, master(), n, cfg(bs, 4), &fill).unwrap());
}

fn open(dir: &std::path::Path, bs: usize, seed: u64) -> ProOram {
    ProOram::open(Arc::new(FileStorage::open(dir).unwrap()), master(), cfg(bs, seed)).unwrap()
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn restarts_do_not_advance_it_and_an_old_copy_stays_behind() {
    let (n, bs) = (64u64, 32usize);
    let tmp = std::env::temp_dir().join(format!("veil-oram-rollback-{}", std::process::id()));
    let (live, old) = (tmp.join("live"), tmp.join("old"));
    let _ = std::fs::remove_dir_all(&tmp);
    file_store(&live, n, bs);
    copy_dir(&live, &old);
    let t = veil_oram::proram::Geometry::new(n).unwrap().epoch_len;
    let seen = {
        let o = open(&live, bs, 1);
        assert_eq!(o.served_epochs(), 0);
        for k in 0..6 * t {
            o.read(k % n).unwrap();
        }
        o.wait_shuffle();
        // durable up to the state record the running shuffle wrote: the last hand-overs may
        // not be recorded yet, but most are
        let s = o.served_epochs();
        assert!((3..=6).contains(&s), "{s}");
        s
    };
    // the live store reopened keeps what it reported
    assert!(open(&live, bs, 2).served_epochs() >= seen);
    // the attacker's old copy, reopened again and again: its epoch number walks on, its
    // freshness count does not
    let mut numbers = Vec::new();
    for k in 0..20 {
        let o = open(&old, bs, 10 + k);
        assert_eq!(o.served_epochs(), 0, "restart {k}");
        numbers.push(o.epoch());
    }
    assert!(numbers.windows(2).all(|w| w[1] > w[0]), "{numbers:?}");
    assert!(*numbers.last().unwrap() > seen, "the epoch number alone would have passed");
    let _ = std::fs::remove_dir_all(&tmp);
}
