//! Fault injection: a storage call that fails (out of descriptors, disk full, I/O error) in the
//! middle of a shuffle or a hand-over never hangs a request, never yields a wrong block, and the
//! engine recovers by itself once the fault clears, without being reopened.

mod common;

use common::*;
use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use veil_oram::error::{OramError, Result};
use veil_oram::cacheshuffle::ShuffleKind;
use veil_oram::proram::{ProOram, ProOramConfig};
use veil_oram::storage::{AccessLog, Actor, Storage};

/// Storage calls a fault can hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Call {
    None = 0,
    Read = 1,
    Write = 2,
    Sync = 3,
    PutMeta = 4,
}

/// Storage that fails one kind of call with `errno` once `countdown` more of them have passed,
/// and keeps failing it until disarmed, as a full disk or an exhausted descriptor table does.
struct Faulty {
    inner: Arc<dyn Storage>,
    call: AtomicU8,
    errno: AtomicI64,
    countdown: AtomicI64,
}

impl Faulty {
    fn arm(&self, call: Call, errno: i32, after: i64) {
        self.errno.store(errno as i64, Ordering::SeqCst);
        self.countdown.store(after, Ordering::SeqCst);
        self.call.store(call as u8, Ordering::SeqCst);
    }
    fn disarm(&self) {
        self.call.store(Call::None as u8, Ordering::SeqCst);
    }
    fn hit(&self, c: Call) -> Result<()> {
        if self.call.load(Ordering::SeqCst) == c as u8 && self.countdown.fetch_sub(1, Ordering::SeqCst) <= 0 {
            let e = std::io::Error::from_raw_os_error(self.errno.load(Ordering::SeqCst) as i32);
            return Err(e.into());
        }
        Ok(())
    }
}

impl Storage for Faulty {
    fn slot_size(&self) -> usize {
        self.inner.slot_size()
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.inner.region_slots(region)
    }
    fn read(&self, a: Actor, r: u32, i: u64, buf: &mut [u8]) -> Result<()> {
        self.hit(Call::Read)?;
        self.inner.read(a, r, i, buf)
    }
    fn write(&self, a: Actor, r: u32, i: u64, data: &[u8]) -> Result<()> {
        self.hit(Call::Write)?;
        self.inner.write(a, r, i, data)
    }
    fn read_with(&self, a: Actor, r: u32, i: u64, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.hit(Call::Read)?;
        self.inner.read_with(a, r, i, f)
    }
    fn write_with(&self, a: Actor, r: u32, i: u64, f: &mut dyn FnMut(&mut [u8]) -> Result<()>) -> Result<()> {
        self.hit(Call::Write)?;
        self.inner.write_with(a, r, i, f)
    }
    fn sync(&self) -> Result<()> {
        self.hit(Call::Sync)?;
        self.inner.sync()
    }
    fn sync_region(&self, region: u32) -> Result<()> {
        self.hit(Call::Sync)?;
        self.inner.sync_region(region)
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        self.hit(Call::PutMeta)?;
        self.inner.put_meta(name, value)
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get_meta(name)
    }
    fn log(&self) -> &AccessLog {
        self.inner.log()
    }
}

/// The longest any one request may take here (a paced request at this size takes a few ms; a
/// hang is for ever).
const BOUND: Duration = Duration::from_secs(20);

/// Reads `ids` in a worker thread, each within BOUND: Ok(block) or the error, checked against
/// the block's true contents (a wrong block fails the test at once).
fn read_all(o: &Arc<ProOram>, ids: impl Iterator<Item = u64>, bs: usize) -> (usize, usize) {
    let (mut ok, mut failed) = (0, 0);
    for id in ids {
        let (tx, rx) = mpsc::channel();
        let o2 = o.clone();
        std::thread::spawn(move || {
            let _ = tx.send(o2.read(id));
        });
        match rx.recv_timeout(BOUND) {
            Err(_) => panic!("read of block {id} hung past {BOUND:?}"),
            Ok(Ok(got)) => {
                let mut want = vec![0u8; bs];
                fill(id, &mut want);
                assert_eq!(got, want, "block {id}: wrong bytes");
                ok += 1;
            }
            Ok(Err(OramError::Io(_))) => failed += 1,
            Ok(Err(e)) => panic!("block {id}: {e} (a storage fault must read as a storage error)"),
        }
    }
    (ok, failed)
}

fn run_case(call: Call, errno: i32, after: i64) {
    run_case_with(call, errno, after, ShuffleKind::Clos)
}

fn run_case_with(call: Call, errno: i32, after: i64, shuffle: ShuffleKind) {
    let (n, bs) = (144u64, 48usize);
    let (mem_oram, mem) = memory_store(n, bs, 5);
    drop(mem_oram);
    let faulty = Arc::new(Faulty { inner: mem, call: AtomicU8::new(0), errno: AtomicI64::new(0), countdown: AtomicI64::new(0) });
    let st: Arc<dyn Storage> = faulty.clone();
    let o = Arc::new(ProOram::open(st, master(), ProOramConfig { shuffle, ..cfg(bs, 5) }).unwrap());
    let t = o.geometry().epoch_len;
    let (ok, _) = read_all(&o, (0..2 * t).map(|k| k * 7 % n), bs);
    assert_eq!(ok as u64, 2 * t, "before the fault");
    // the fault strikes `after` calls into whatever runs now: the shuffle built ahead, the next
    // hand-over's state record, or the requests' own reads
    faulty.arm(call, errno, after);
    // how many requests pass before a failed shuffle is needed by one is the scheduler's (a
    // shuffle built ahead may already hold the next epochs): 3 in 150 runs at load 5 needed more
    // than 6 epochs, so up to 24 are read before the fault must have shown
    let mut failed = 0;
    for _ in 0..4 {
        failed += read_all(&o, (0..6 * t).map(|k| k * 11 % n), bs).1;
        if failed > 0 {
            break;
        }
    }
    assert!(failed > 0, "{call:?}: the fault never reached a request");
    faulty.disarm();
    // recovery without reopening: within one epoch's worth of retries the reads succeed again,
    // then every block reads back correctly
    let mut recovered = false;
    for k in 0..(4 * t) {
        if read_all(&o, std::iter::once(k % n), bs).0 == 1 {
            recovered = true;
            break;
        }
    }
    assert!(recovered, "{call:?}/{errno}: no recovery after the fault cleared");
    let (ok, failed) = read_all(&o, 0..n, bs);
    assert_eq!((ok as u64, failed), (n, 0), "{call:?}/{errno}: after recovery");
    assert!(o.epoch() > 2, "hand-overs resumed");
}

#[test]
fn a_failed_state_write_mid_run_neither_hangs_nor_wedges() {
    // the wedge this guards against: the next shuffle's state record fails with EMFILE
    run_case(Call::PutMeta, libc::EMFILE, 0);
    run_case(Call::PutMeta, libc::ENOSPC, 1);
}

#[test]
fn slot_writes_failing_mid_shuffle_neither_hang_nor_wedge() {
    for errno in [libc::ENOSPC, libc::EIO, libc::EMFILE] {
        run_case(Call::Write, errno, 40);
    }
}

#[test]
fn syncs_failing_neither_hang_nor_wedge() {
    run_case(Call::Sync, libc::EIO, 0);
    run_case(Call::Sync, libc::ENOSPC, 2);
}

#[test]
fn reads_failing_neither_hang_nor_wedge() {
    // the requests' own slot reads and the shuffle's reads alike
    run_case(Call::Read, libc::EIO, 0);
    run_case(Call::Read, libc::EMFILE, 100);
}

/// The same faults with the cache shuffle, warmed up so that it is the one running: reads of an
/// ended epoch's copy and writes of the new one fail mid-shuffle.
#[test]
fn faults_mid_cache_shuffle_neither_hang_nor_wedge() {
    run_case_with(Call::Write, libc::ENOSPC, 40, ShuffleKind::Cache);
    run_case_with(Call::Read, libc::EIO, 100, ShuffleKind::Cache);
    run_case_with(Call::PutMeta, libc::EMFILE, 0, ShuffleKind::Cache);
}
