//! The shuffle's server-side view does not depend on its secrets: two stores with the same
//! public parameters (N, B, threads, epoch length) but different seeds, hence different
//! permutations, epoch keys and sealing keys, show storage the same sequence of calls (which
//! slot, read or write, how many bytes, in which order; metadata records and their sizes;
//! syncs), call for call. The access component's reads are a different matter (uniformly
//! random slots, tested in `proram.rs`); this covers every step of the shuffle.
mod common;
use common::*;
use rand::{Rng, SeedableRng};
use std::sync::{Arc, Mutex};
use veil_oram::crypto::TAG_LEN;
use veil_oram::proram::{region_slots_for, Geometry, ProOram, ProOramConfig, DEFAULT_RUN_AHEAD};
use veil_oram::storage::{AccessLog, Actor, MemoryStorage, Op, Storage};
use veil_oram::Result;

/// One storage call as the server sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Slot { actor: Actor, op: Op, region: u32, index: u64, bytes: usize },
    PutMeta { name: String, bytes: usize },
    GetMeta { name: String },
    Sync,
    SyncRegion(u32),
}

/// A storage backend that records every call made to it, then passes it on: the observer the
/// adversary is.
struct Recorder {
    inner: Arc<dyn Storage>,
    calls: Mutex<Vec<Call>>,
}

impl Recorder {
    fn note(&self, c: Call) {
        self.calls.lock().unwrap().push(c);
    }
    fn slot(&self, actor: Actor, op: Op, region: u32, index: u64, bytes: usize) {
        self.note(Call::Slot { actor, op, region, index, bytes });
    }
}

impl Storage for Recorder {
    fn slot_size(&self) -> usize {
        self.inner.slot_size()
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.inner.region_slots(region)
    }
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()> {
        self.slot(actor, Op::Read, region, index, buf.len());
        self.inner.read(actor, region, index, buf)
    }
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()> {
        self.slot(actor, Op::Write, region, index, data.len());
        self.inner.write(actor, region, index, data)
    }
    fn read_with(&self, actor: Actor, region: u32, index: u64, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.inner.read_with(actor, region, index, &mut |b| {
            self.slot(actor, Op::Read, region, index, b.len());
            f(b)
        })
    }
    fn write_with(&self, actor: Actor, region: u32, index: u64, f: &mut dyn FnMut(&mut [u8]) -> Result<()>) -> Result<()> {
        self.inner.write_with(actor, region, index, &mut |b| {
            self.slot(actor, Op::Write, region, index, b.len());
            f(b)
        })
    }
    fn sync(&self) -> Result<()> {
        self.note(Call::Sync);
        self.inner.sync()
    }
    fn sync_region(&self, region: u32) -> Result<()> {
        self.note(Call::SyncRegion(region));
        self.inner.sync_region(region)
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        self.note(Call::PutMeta { name: name.into(), bytes: value.len() });
        self.inner.put_meta(name, value)
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.note(Call::GetMeta { name: name.into() });
        self.inner.get_meta(name)
    }
    fn log(&self) -> &AccessLog {
        self.inner.log()
    }
}

const N: u64 = 64;
const BS: usize = 48;

/// Runs `epochs` epochs of the same request sequence against a store made with `seed`, and
/// returns the store and everything storage saw except the access component's reads.
fn shuffle_view(seed: u64, epoch_len: Option<u64>, epochs: u64) -> (ProOram, Vec<Call>) {
    let g = Geometry::with_epoch_len(N, epoch_len).unwrap();
    let inner: Arc<dyn Storage> = Arc::new(MemoryStorage::new(BS + TAG_LEN, &region_slots_for(&g, DEFAULT_RUN_AHEAD).unwrap()));
    let rec = Arc::new(Recorder { inner, calls: Mutex::default() });
    // one shuffle thread, so the order inside a group is fixed too; no clock (faster, and the
    // clock decides only *when* calls happen, not which)
    let cfg = ProOramConfig { threads: 1, pace: false, epoch_len, ..cfg(BS, seed) };
    let master = veil_oram::crypto::BlockKey::from_bytes([seed as u8; 16]);
    let o = ProOram::create(rec.clone(), master, N, cfg, &fill).unwrap();
    // the requests are public here: the same in both runs (their independence is proram.rs's)
    let mut rng = rand::rngs::StdRng::seed_from_u64(99);
    for _ in 0..epochs * g.epoch_len {
        o.read(rng.gen_range(0..N)).unwrap();
    }
    o.wait_shuffle();
    let calls = rec.calls.lock().unwrap().iter().filter(|c| !matches!(c, Call::Slot { actor: Actor::Access, .. })).cloned().collect();
    (o, calls)
}

fn same_view_for_different_secrets(epoch_len: Option<u64>) {
    let epochs = 12;
    let (a, va) = shuffle_view(1, epoch_len, epochs);
    let (b, vb) = shuffle_view(2, epoch_len, epochs);
    // the secrets did differ: another permutation and another key in the served epoch
    let moved = (0..N).filter(|&i| a.debug_slot_of(i).1 != b.debug_slot_of(i).1).count();
    assert!(moved > N as usize / 2, "the two permutations hardly differ: {moved} of {N} blocks moved");
    assert_ne!(a.stats().key_fingerprint, b.stats().key_fingerprint);
    // whole shuffles of the served epochs at least (one run may have started one more ahead)
    let g = a.geometry();
    let shuffle_writes = |v: &[Call]| v.iter().filter(|c| matches!(c, Call::Slot { actor: Actor::Shuffle, op: Op::Write, .. })).count() as u64;
    let common = va.len().min(vb.len());
    assert!(shuffle_writes(&va[..common]) >= epochs * 3 * g.slots(), "view too short: {common} calls");
    for (k, (x, y)) in va[..common].iter().zip(&vb[..common]).enumerate() {
        assert_eq!(x, y, "call {k} of the shuffle differs between two secret permutations");
    }
    // and it has what the adversary could look at: every slot call moves a whole slot, and
    // the state record (sealed, it holds the key and position map) is written every shuffle
    assert!(va.iter().all(|c| !matches!(c, Call::Slot { bytes, .. } if *bytes != BS + TAG_LEN)));
    let states = va[..common].iter().filter(|c| matches!(c, Call::PutMeta { name, .. } if name == "proram.state")).count();
    assert!(states as u64 >= epochs, "{states} state records");
}

#[test]
fn shuffle_view_is_independent_of_the_permutation_and_keys() {
    same_view_for_different_secrets(None);
}

/// The same with a longer epoch (a private cache of 3 sqrt(N) blocks).
#[test]
fn shuffle_view_is_independent_of_the_secrets_with_a_longer_epoch() {
    same_view_for_different_secrets(Some(24));
}
