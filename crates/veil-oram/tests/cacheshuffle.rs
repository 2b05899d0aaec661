//! The cache (K-oblivious, one-pass) shuffle: through the engine (right blocks, regions, crash,
//! the adversary's view of the accesses) and alone (its storage trace depends on the public
//! touched set only, never on the permutation or the keys).
mod common;
use common::*;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use veil_oram::cacheshuffle::{self, KJob, ShuffleKind};
use veil_oram::crypto::{slot_nonce, BlockKey, TAG_LEN};
use veil_oram::data::check_block;
use veil_oram::proram::{region_slots, ProOram, ProOramConfig, DEFAULT_RUN_AHEAD};
use veil_oram::shuffle::{Buffers, Progress};
use veil_oram::storage::{AccessLog, Actor, FileStorage, MemoryStorage, Op, Storage};
use veil_oram::Result;

fn cache_cfg(bs: usize, seed: u64) -> ProOramConfig {
    ProOramConfig { shuffle: ShuffleKind::Cache, ..cfg(bs, seed) }
}

fn store(n: u64, bs: usize, c: ProOramConfig, ahead: u32) -> (ProOram, Arc<dyn Storage>) {
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(bs + TAG_LEN, &region_slots(n, ahead).unwrap()));
    (ProOram::create(st.clone(), master(), n, c, &fill).unwrap(), st)
}

/// Every reply is the right block over many epochs, most of them built by the cache shuffle,
/// and no shuffle ever writes the region being served; at run_ahead 2 and 3.
#[test]
fn cache_shuffle_serves_every_block_and_spares_the_served_region() {
    for ahead in [2, DEFAULT_RUN_AHEAD] {
        let n = 100;
        let (o, st) = store(n, 48, ProOramConfig { pace_margin: 1.0, ..cache_cfg(48, 3) }, ahead);
        let t = o.geometry().epoch_len;
        st.log().set_enabled(true);
        st.log().drain();
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let epochs = 60;
        for k in 0..epochs * t {
            let id = if k % 3 == 0 { 7 } else { rng.gen_range(0..n) };
            assert!(check_block(SEED, id, &o.read(id).unwrap()), "run_ahead {ahead}: block {id} wrong at request {k}");
        }
        let s = o.stats();
        assert!(s.cache_shuffles >= epochs - 6, "run_ahead {ahead}: only {} cache shuffles in {epochs} epochs", s.cache_shuffles);
        // copy e + run_ahead is built from e: at a start the run_ahead + 1 epoch regions hold
        // the source, the served epoch, run_ahead - 2 epochs built ahead and the one being
        // built (the source takes the place of one more epoch built ahead, which the Clos
        // shuffle keeps: docs/oram.md, "Where the cache shuffle's p99/p50 comes from")
        assert_eq!(s.cache_chain, u64::from(ahead), "run_ahead {ahead}: cache shuffles build from this many epochs back");
        let log = st.log().drain();
        let reads: Vec<usize> = (0..log.len()).filter(|&i| log[i].actor == Actor::Access).collect();
        for epoch in reads.chunks(t as usize) {
            let region = log[epoch[0]].region;
            let (first, last) = (epoch[0], *epoch.last().unwrap());
            assert!(
                !log[first..=last].iter().any(|x| x.actor == Actor::Shuffle && x.op == Op::Write && x.region == region),
                "run_ahead {ahead}: a shuffle wrote the served region {region}"
            );
        }
    }
}

/// run_ahead 1 leaves no region for an ended epoch to be read from: refused with a clear error.
#[test]
fn cache_shuffle_needs_run_ahead_two() {
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(32 + TAG_LEN, &region_slots(64, 1).unwrap()));
    let e = ProOram::create(st, master(), 64, cache_cfg(32, 1), &fill).err().unwrap().to_string();
    assert!(e.contains("run_ahead >= 2"), "{e}");
}

/// Slots the access component reads, `epochs` epochs of `pattern`, after the cache shuffle has
/// taken over.
fn access_slots(pattern: &str, epochs: u64, seed: u64) -> (Vec<u64>, u64, u64) {
    let n = 64;
    let (o, st) = store(n, 16, ProOramConfig { pace: false, ..cache_cfg(16, seed) }, DEFAULT_RUN_AHEAD);
    let t = o.geometry().epoch_len;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..8 * t {
        o.read(rng.gen_range(0..n)).unwrap();
    }
    st.log().set_enabled(true);
    st.log().drain();
    read_pattern(&o, pattern, epochs * t, n, &mut rng);
    assert!(o.stats().cache_shuffles > epochs / 2);
    let acc = st.log().drain().into_iter().filter(|x| x.actor == Actor::Access).map(|x| x.index).collect();
    (acc, t, o.geometry().slots())
}

fn hist(v: &[u64], m: u64) -> Vec<u64> {
    let mut h = vec![0u64; m as usize];
    for &x in v {
        h[x as usize] += 1;
    }
    h
}

/// Cross-epoch link: (bucket of the slot epoch e's first request read, bucket of epoch e+1's).
/// A shuffle that left a touched block near where it was would show here for "one block again
/// and again".
fn link(v: &[u64], t: u64, m: u64) -> Vec<u64> {
    let firsts: Vec<u64> = v.iter().step_by(t as usize).map(|&x| x * 6 / m).collect();
    let mut h = vec![0u64; 36];
    for w in firsts.windows(2) {
        h[(w[0] * 6 + w[1]) as usize] += 1;
    }
    h
}

/// The adversary's view of the accesses does not depend on the requests with the cache
/// shuffle either: one block again and again, uniform and sequential requests give slot
/// histograms, and cross-epoch links, that a chi-square homogeneity test cannot tell apart;
/// the same statistic catches the plain store's fixed slots.
#[test]
fn cache_shuffle_access_view_is_independent_of_requests() {
    let epochs = 600;
    let (a, t, m) = access_slots("repeat", epochs, 31);
    let (b, _, _) = access_slots("uniform", epochs, 32);
    let (c, _, _) = access_slots("sequential", epochs, 33);
    let p_ab = homogeneity_p(&hist(&a, m), &hist(&b, m));
    let p_ac = homogeneity_p(&hist(&a, m), &hist(&c, m));
    assert!(p_ab > 1e-3 && p_ac > 1e-3, "slot histograms differ: p={p_ab} {p_ac}");
    let p_link = homogeneity_p(&link(&a, t, m), &link(&b, t, m));
    assert!(p_link > 1e-3, "cross-epoch links differ: p={p_link}");
    assert!(a.chunks(t as usize).all(|e| e.iter().collect::<HashSet<_>>().len() == t as usize));
    // negative control: a store whose block stays put links every epoch to the same bucket
    let fixed: Vec<u64> = (0..a.len() as u64).map(|k| if k % t == 0 { 17 } else { k % m }).collect();
    let q = homogeneity_p(&link(&fixed, t, m), &link(&b, t, m));
    assert!(q < 1e-6, "the link statistic misses fixed slots: p={q}");
}

/// A crash part-way through a cache shuffle: the state names the served epoch, whose region no
/// shuffle writes, so the store reopens with every block intact, twice.
#[test]
fn file_store_survives_a_crash_mid_cache_shuffle() {
    let dir = std::env::temp_dir().join(format!("veil-oram-kcrash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (n, bs) = (200u64, 64usize);
    {
        let st: Arc<dyn Storage> = Arc::new(FileStorage::create(&dir, bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()).unwrap());
        let o = ProOram::create(st, master(), n, cache_cfg(bs, 4), &fill).unwrap();
        let t = o.geometry().epoch_len;
        for k in 0..6 * t {
            assert!(check_block(SEED, k % n, &o.read(k % n).unwrap()));
        }
        assert!(o.stats().cache_shuffles > 0);
        o.debug_crash();
    }
    for round in 0..2 {
        let st: Arc<dyn Storage> = Arc::new(FileStorage::open(&dir).unwrap());
        let o = ProOram::open(st, master(), cache_cfg(bs, 5 + round)).unwrap();
        for id in 0..n {
            assert!(check_block(SEED, id, &o.read(id).unwrap()), "block {id} after restart {round}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Storage that keeps (op, region, slot) of every slot call, in order.
struct Trace {
    inner: Arc<dyn Storage>,
    calls: Mutex<Vec<(Op, u32, u64)>>,
}

impl Storage for Trace {
    fn slot_size(&self) -> usize {
        self.inner.slot_size()
    }
    fn region_slots(&self, region: u32) -> u64 {
        self.inner.region_slots(region)
    }
    fn read(&self, actor: Actor, region: u32, index: u64, buf: &mut [u8]) -> Result<()> {
        self.calls.lock().unwrap().push((Op::Read, region, index));
        self.inner.read(actor, region, index, buf)
    }
    fn write(&self, actor: Actor, region: u32, index: u64, data: &[u8]) -> Result<()> {
        self.calls.lock().unwrap().push((Op::Write, region, index));
        self.inner.write(actor, region, index, data)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn sync_region(&self, region: u32) -> Result<()> {
        self.inner.sync_region(region)
    }
    fn put_meta(&self, name: &str, value: &[u8]) -> Result<()> {
        self.inner.put_meta(name, value)
    }
    fn get_meta(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get_meta(name)
    }
    fn log(&self) -> &AccessLog {
        self.inner.log()
    }
}

/// One cache shuffle of an m-slot copy whose `touched` slots were read, with secrets drawn from
/// `seed`: its storage calls, and whether every block landed where the plan says.
fn one_shuffle(m: u64, touched: &[u64], seed: u64) -> Vec<(Op, u32, u64)> {
    let bs = 24;
    let mem: Arc<dyn Storage> = Arc::new(MemoryStorage::new(bs + TAG_LEN, &[m, m]));
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (k0, k1) = (Arc::new(BlockKey::random(&mut rng)), Arc::new(BlockKey::random(&mut rng)));
    for p in 0..m {
        let mut slot = vec![0u8; bs + TAG_LEN];
        slot[..8].copy_from_slice(&p.to_le_bytes());
        k0.seal_slot(slot_nonce(p, 7), &mut slot);
        mem.write(Actor::Init, 0, p, &slot).unwrap();
    }
    let dest = cacheshuffle::plan(m, touched, &mut rng);
    let tr = Trace { inner: mem.clone(), calls: Mutex::default() };
    let job = KJob { src: (0, 7, k0), touched: touched.to_vec(), dest: dest.clone(), dst: (1, 3, k1.clone()) };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    cacheshuffle::run(&tr, &job, &pool, &Progress::default(), &Default::default(), None, &mut Buffers::default(), 10).unwrap();
    for p in 0..m {
        let q = dest[p as usize] as u64;
        let mut slot = vec![0u8; bs + TAG_LEN];
        mem.read(Actor::Init, 1, q, &mut slot).unwrap();
        k1.open_slot(slot_nonce(q, 3), &mut slot, 1, q).unwrap();
        assert_eq!(u64::from_le_bytes(slot[..8].try_into().unwrap()), p, "old slot {p}'s block is not at {q}");
    }
    tr.calls.into_inner().unwrap()
}

/// The cache shuffle's trace: other permutations and keys, same calls; every slot of the source
/// read once (the touched ones first, then the rest in order) and every slot of the new copy
/// written once, in order. It differs only where the (public) touched set does.
#[test]
fn cache_shuffle_trace_is_a_function_of_the_touched_set() {
    let m = 300;
    let touched: Vec<u64> = vec![2, 3, 50, 51, 120, 199, 250, 299];
    let a = one_shuffle(m, &touched, 1);
    let b = one_shuffle(m, &touched, 2);
    assert_eq!(a, b, "the trace depends on the secrets");
    let reads: Vec<u64> = a.iter().filter(|c| c.0 == Op::Read).map(|c| c.2).collect();
    let writes: Vec<u64> = a.iter().filter(|c| c.0 == Op::Write).map(|c| c.2).collect();
    let untouched: Vec<u64> = (0..m).filter(|p| !touched.contains(p)).collect();
    assert_eq!(reads, [touched.clone(), untouched].concat());
    assert_eq!(writes, (0..m).collect::<Vec<_>>());
    assert!(a.iter().all(|c| (c.0 == Op::Read) == (c.1 == 0)), "reads from the source, writes to the new copy");
    let other = one_shuffle(m, &[0, 1, 2, 3, 4, 5, 6, 7], 1);
    let w_other: Vec<u64> = other.iter().filter(|c| c.0 == Op::Write).map(|c| c.2).collect();
    assert_eq!(w_other, writes);
}
