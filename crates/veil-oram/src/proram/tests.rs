//! Unit tests of the PRO-ORAM engine's private parts (state record, pacing history, stats).

use super::state::state_bytes;
use super::*;
use crate::crypto::KEY_LEN;

/// One shuffle thread, no clock.
fn unpaced(bs: usize, seed: u64) -> ProOramConfig {
    ProOramConfig {
        block_size: bs,
        threads: 1,
        seed: Some(seed),
        pace: false,
        pace_margin: DEFAULT_PACE_MARGIN,
        shuffle_idle: false,
        epoch_len: None,
        shuffle: Default::default(),
    }
}

/// The sealed state's size is storage's to see: it must not depend on the key's digits.
#[test]
fn state_record_length_does_not_depend_on_the_key() {
    let st = |key: [u8; KEY_LEN]| SealedState {
        version: STATE_VERSION,
        geometry: Geometry::new(64).unwrap(),
        block_size: 32,
        epoch: 7,
        region: 1,
        ctx: 3,
        key,
        pos: (0..72).rev().collect(),
        work: Some(5),
    };
    let (a, b) = (st([0; KEY_LEN]), st([255; KEY_LEN]));
    assert_ne!(serde_json::to_vec(&a).unwrap().len(), serde_json::to_vec(&b).unwrap().len());
    assert_eq!(state_bytes(&a).len(), state_bytes(&b).len());
    let back: SealedState = serde_json::from_slice(&state_bytes(&a)).unwrap();
    assert_eq!(back.key, [0; KEY_LEN]);
}

/// Nor on the public counts, written when the scheduler chose (two runs of the same requests
/// wrote their records at different counts and differed by a byte at a power of ten).
#[test]
fn state_record_length_does_not_depend_on_the_counts() {
    let st = |n: u64, work: Option<u64>| SealedState {
        version: STATE_VERSION,
        geometry: Geometry::new(64).unwrap(),
        block_size: 32,
        epoch: n,
        region: n as u32,
        ctx: n as u32,
        key: [7; KEY_LEN],
        pos: (0..72).rev().collect(),
        work,
    };
    let cases = [(0, None), (9, Some(9)), (10, Some(10)), (99, Some(100)), (u32::MAX as u64, Some(u64::MAX))];
    let lens: Vec<usize> = cases.iter().map(|&(n, w)| state_bytes(&st(n, w)).len()).collect();
    assert!(lens.iter().all(|&l| l == lens[0]), "{lens:?}");
    let back: SealedState = serde_json::from_slice(&state_bytes(&st(10, Some(10)))).unwrap();
    assert_eq!((back.epoch, back.work), (10, Some(10)));
}

#[test]
fn shuffle_times_keep_a_bounded_steady_history() {
    let mut t = ShuffleTimes::default();
    assert_eq!(t.recent_quantile(0.75), None);
    t.record(9.0, false);
    assert_eq!(t.recent_quantile(0.75), None, "a shuffle that also ran stage 1 is not steady");
    for k in 1..=20 {
        t.record(k as f64, true);
    }
    assert_eq!(t.completed, 21);
    assert_eq!(t.total_secs, 9.0 + 210.0);
    // the last 16 are 5..=20; nearest rank ceil(0.75 * 16) = 12 -> 16
    assert_eq!(t.recent_steady.len(), RECENT_SHUFFLES);
    assert_eq!(t.recent_quantile(0.75), Some(16.0));
    assert_eq!(t.recent_quantile(0.5), Some(12.0));
    assert_eq!(t.recent_quantile(1.0), Some(20.0));
    assert_eq!(t.recent_quantile(0.0), Some(5.0));
}

/// A shuffle holds its buffers for its whole run. The stats, which a measured run reads
/// after every request, must not wait for it: they did (locking the buffers to count their
/// bytes), and a request loop then stalled for the rest of a shuffle at a time.
#[test]
fn stats_do_not_wait_for_a_running_shuffle() {
    let (n, bs) = (64u64, 32usize);
    let st: Arc<dyn Storage> =
        Arc::new(crate::storage::MemoryStorage::new(bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()));
    let cfg = unpaced(bs, 3);
    let o = ProOram::create(st, BlockKey::from_bytes([7; 16]), n, cfg, &|i, b: &mut [u8]| b.fill(i as u8)).unwrap();
    o.wait_shuffle();
    let held = o.buffers.lock().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| tx.send(o.stats()).unwrap());
        let got = rx.recv_timeout(std::time::Duration::from_secs(10));
        let shuffle_bytes = held.bytes();
        drop(held);
        let stats = got.expect("stats() waited for the buffers a shuffle holds");
        // and they still count the buffers: one group (a row or column) of blocks
        let group = o.geom.rows.max(o.geom.cols);
        assert!(shuffle_bytes >= group * bs as u64, "{shuffle_bytes}");
        let g = o.inner.lock().unwrap();
        let own = g.slab.iter().map(|b| b.len() as u64).sum::<u64>() + g.slot.len() as u64;
        assert_eq!(stats.private_block_bytes, own + shuffle_bytes);
    });
}

/// Every change of the request clock's period is at most 8%, whatever the estimate and also
/// when the shuffle fell behind, so a window spanning one step has p99/p50 below 1.1 from it;
/// inside the drift band (-15%, +10%) the period holds, and before three steady shuffles it
/// follows the estimate.
#[test]
fn the_clock_steps_by_at_most_eight_percent() {
    use super::epochs::next_period;
    let p = 1_000_000u64;
    assert_eq!(next_period(p, 3 * p, 2, true), 3 * p, "a first guess is followed");
    assert_eq!(next_period(p, 3 * p, 16, false), 1_080_000, "behind: one step up");
    assert_eq!(next_period(p, p / 2, 16, false), 1_080_000, "behind: up even on a low estimate");
    assert_eq!(next_period(p, 3 * p, 16, true), 1_080_000);
    assert_eq!(next_period(p, p / 3, 16, true), 920_000);
    assert_eq!(next_period(p, 1_090_000, 16, true), p, "inside the band: no step");
    assert_eq!(next_period(p, 860_000, 16, true), p);
    assert_eq!(next_period(p, 1_105_000, 16, true), 1_080_000);
    assert_eq!(next_period(p, 840_000, 16, true), 920_000);
    for want in (100_000..5_000_000).step_by(7_919) {
        for (samples, ready) in [(3, true), (16, true), (16, false)] {
            let q = next_period(p, want, samples, ready) as f64;
            assert!((q / p as f64 - 1.0).abs() <= 0.08 + 1e-9, "{want}: {q}");
        }
    }
}

/// Every outcome of a request makes the same copies and evictions of the same sizes through
/// buffers of the same roles (`reply`): a first read, a repeat, a first read of a tampered
/// block and a repeat of it. Only which cache entry a repeat reads differs. Before, a repeat
/// copied out of an entry written long ago and a first read out of one written just now.
#[test]
fn every_outcome_makes_the_same_copies() {
    let (n, bs) = (64u64, 32usize);
    let st: Arc<dyn Storage> =
        Arc::new(crate::storage::MemoryStorage::new(bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()));
    let cfg = unpaced(bs, 4);
    let o = ProOram::create(st.clone(), BlockKey::from_bytes([7; 16]), n, cfg, &|i, b: &mut [u8]| b.fill(i as u8 + 1)).unwrap();
    let (region, slot) = o.debug_slot_of(9);
    st.flip_bit(region, slot, 5).unwrap();
    let mut seen = Vec::new();
    for (id, ok) in [(3u64, true), (3, true), (9, false), (9, false), (4, true), (3, true)] {
        // cleared first: `steps` is only ever set to the same five steps, so an outcome whose
        // path skipped `copy_reply` would otherwise show the previous request's steps and pass
        o.inner.lock().unwrap().steps = Default::default();
        let mut out = vec![0xAAu8; bs];
        let r = o.read_into(id, &mut out);
        assert_eq!(r.is_ok(), ok, "block {id}");
        assert_eq!(out, vec![if ok { id as u8 + 1 } else { 0 }; bs], "block {id}'s reply");
        let g = o.inner.lock().unwrap();
        assert!(g.steps.iter().flatten().count() == 5, "{:?}", g.steps);
        seen.push(g.steps);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    // each request took one fresh cache entry, repeats and failures too
    assert_eq!(o.inner.lock().unwrap().slab_used, 6);
    assert_eq!(o.stats().cached_blocks, 3);
}

/// Storage whose next access-component read fails once it has been asked for (the server saw
/// which slot was wanted, then answered with an error: untrusted storage can do that at will).
struct FailNextAccess {
    inner: Arc<dyn Storage>,
    armed: AtomicBool,
    /// Slots the access component asked for, failed or not.
    asked: std::sync::Mutex<Vec<u64>>,
}

impl Storage for FailNextAccess {
    fn slot_size(&self) -> usize {
        self.inner.slot_size()
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.inner.region_slots(region)
    }
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()> {
        if actor == Actor::Access {
            self.asked.lock().unwrap().push(index);
        }
        if actor == Actor::Access && self.armed.swap(false, Ordering::SeqCst) {
            return Err(OramError::Io("injected read failure".into()));
        }
        self.inner.read(actor, region, index, buf)
    }
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()> {
        self.inner.write(actor, region, index, data)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        self.inner.put_meta(name, value)
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get_meta(name)
    }
    fn log(&self) -> &crate::storage::AccessLog {
        self.inner.log()
    }
}

/// A store of `n` blocks of `bs` bytes (block i filled with i) over `FailNextAccess`.
fn failing_store(n: u64, bs: usize, shuffle: ShuffleKind) -> (ProOram, Arc<FailNextAccess>) {
    let mem: Arc<dyn Storage> =
        Arc::new(crate::storage::MemoryStorage::new(bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()));
    let st = Arc::new(FailNextAccess { inner: mem, armed: AtomicBool::new(false), asked: Default::default() });
    let cfg = ProOramConfig { shuffle, ..unpaced(bs, 6) };
    let o = ProOram::create(st.clone(), BlockKey::from_bytes([7; 16]), n, cfg, &|i, b: &mut [u8]| b.fill(i as u8)).unwrap();
    (o, st)
}

/// The cache shuffle keeps the untouched blocks' order, which is safe only for slots the
/// server never saw read. A read that storage failed after seeing its slot must count as
/// touched: left out, that block's new slot would follow its old one's rank among the
/// untouched (within K slots of it), linking its next request to this one.
#[test]
fn a_slot_whose_read_failed_counts_as_touched() {
    let (n, bs) = (64u64, 32usize);
    let (o, st) = failing_store(n, bs, ShuffleKind::Cache);
    o.read(1).unwrap();
    let (_, slot) = o.debug_slot_of(2);
    st.armed.store(true, Ordering::SeqCst);
    assert!(o.read(2).is_err());
    {
        let g = o.inner.lock().unwrap();
        assert!(g.touched.contains(&slot), "slot {slot} was asked for but is not in the touched set {:?}", g.touched);
    }
    // an outage: the same request failing again and again does not grow the set without bound
    for _ in 0..10_000 {
        st.armed.store(true, Ordering::SeqCst);
        assert!(o.read(2).is_err());
    }
    let t = o.geometry().epoch_len as usize;
    let g = o.inner.lock().unwrap();
    assert!(g.touched.len() <= 4 * t + 65 && g.touched.contains(&slot), "{} entries", g.touched.len());
}


/// A repeat whose dummy read storage fails takes the same dummy again when retried, as a first
/// read retries its block's slot. It used to take the next dummy each time: the retries told a
/// repeat from a first read (another slot, or the same), and after D failed repeats the dummy
/// index ran past the store (index out of bounds under the engine's lock, which every later
/// request then found poisoned: wedged for good).
#[test]
fn failed_repeats_retry_their_dummy_and_never_wedge() {
    let (n, bs) = (64u64, 32usize);
    let (o, st) = failing_store(n, bs, ShuffleKind::Clos);
    o.read(1).unwrap();
    let dummies = o.geometry().slots() - n;
    st.asked.lock().unwrap().clear();
    for _ in 0..2 * dummies {
        st.armed.store(true, Ordering::SeqCst);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| o.read(1)));
        assert!(matches!(r, Ok(Err(OramError::Io(_)))), "a failed repeat must fail cleanly");
    }
    let asked = st.asked.lock().unwrap().clone();
    assert!(asked.windows(2).all(|w| w[0] == w[1]), "retries of one repeat asked for {asked:?}");
    assert_eq!(o.read(1).unwrap(), vec![1u8; bs]);
    assert_eq!(o.read(3).unwrap(), vec![3u8; bs]);
}
