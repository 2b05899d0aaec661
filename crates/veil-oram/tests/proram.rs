mod common;
use common::*;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::sync::Arc;
use veil_oram::crypto::TAG_LEN;
use veil_oram::data::check_block;
use veil_oram::plain::PlainStore;
use veil_oram::proram::{region_slots, Geometry, ProOram, ProOramConfig, DEFAULT_RUN_AHEAD};
use veil_oram::storage::{Actor, FileStorage, MemoryStorage, Op, Storage};
use veil_oram::OramError;

#[test]
fn geometry_has_sqrt_dummies_and_fits_a_grid() {
    for n in [1u64, 2, 10, 100, 1000, 1024, 4096, 262_144] {
        let g = Geometry::new(n).unwrap();
        let t = (n as f64).sqrt().ceil() as u64;
        assert_eq!(g.epoch_len, t);
        assert!(g.dummies() >= t, "n={n}");
        assert!(g.dummies() < t + g.cols + 1, "n={n}");
        assert!(g.rows.abs_diff(g.cols) <= 1, "n={n}");
    }
    assert!(Geometry::new(0).is_err());
}

/// A longer epoch (a bigger private cache): D >= T dummies still, every reply right, the
/// cache fills to T distinct blocks and no further; out-of-range lengths are refused.
#[test]
fn longer_epoch_serves_every_block_and_caches_up_to_t() {
    let g = Geometry::with_epoch_len(4096, Some(256)).unwrap();
    assert_eq!((g.rows, g.cols, g.epoch_len), (66, 66, 256));
    assert!(g.dummies() >= 256);
    assert_eq!(Geometry::with_epoch_len(4096, None).unwrap(), Geometry::new(4096).unwrap());
    assert!(Geometry::with_epoch_len(64, Some(0)).is_err() && Geometry::with_epoch_len(64, Some(65)).is_err());
    let (n, bs, t) = (64u64, 48usize, 24u64);
    let geom = Geometry::with_epoch_len(n, Some(t)).unwrap();
    let st: Arc<dyn Storage> =
        Arc::new(MemoryStorage::new(bs + TAG_LEN, &veil_oram::proram::region_slots_for(&geom, DEFAULT_RUN_AHEAD).unwrap()));
    let o = ProOram::create(st, master(), n, ProOramConfig { epoch_len: Some(t), ..cfg(bs, 5) }, &fill).unwrap();
    assert_eq!(o.geometry(), geom);
    let e0 = o.stats().epoch;
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    for k in 0..10 * t {
        let id = if k % 4 == 0 { 2 } else { rng.gen_range(0..n) };
        assert!(check_block(SEED, id, &o.read(id).unwrap()), "block {id} wrong at request {k}");
    }
    assert_eq!(o.stats().epoch - e0, 10);
    // an epoch of T distinct blocks fills the cache to T
    for id in 0..t {
        o.read(id).unwrap();
    }
    assert_eq!(o.stats().peak_cached_blocks, t);
}

#[test]
fn every_reply_is_the_block_over_many_epochs() {
    let (o, _) = memory_store(100, 48, 1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let e0 = o.stats().epoch;
    for k in 0..1000u64 {
        let id = if k % 3 == 0 { 7 } else { rng.gen_range(0..100) };
        let d = o.read(id).unwrap();
        assert!(check_block(SEED, id, &d), "block {id} wrong at request {k}");
    }
    assert_eq!(o.stats().epoch - e0, 1000 / 10);
    assert!(matches!(o.read(100), Err(OramError::UnknownBlock { id: 100, n_blocks: 100 })));
}

/// Each request reads exactly one slot of the live region; within an epoch no slot is read
/// twice (even when one block is requested over and over); keys differ between epochs.
#[test]
fn one_read_per_request_each_slot_once_per_epoch_fresh_keys() {
    let n = 64;
    let (o, st) = memory_store(n, 32, 2);
    let t = o.geometry().epoch_len;
    st.log().set_enabled(true);
    st.log().drain();
    let mut keys = vec![o.stats().key_fingerprint];
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    for e in 0..20 {
        for k in 0..t {
            let id = if e % 2 == 0 { 3 } else if k % 2 == 0 { rng.gen_range(0..n) } else { 3 };
            o.read(id).unwrap();
        }
        keys.push(o.stats().key_fingerprint);
    }
    let acc: Vec<_> = st.log().drain().into_iter().filter(|x| x.actor == Actor::Access).collect();
    assert_eq!(acc.len() as u64, 20 * t);
    for (e, chunk) in acc.chunks(t as usize).enumerate() {
        assert!(chunk.iter().all(|x| x.op == Op::Read && x.region == chunk[0].region));
        let set: HashSet<u64> = chunk.iter().map(|x| x.index).collect();
        assert_eq!(set.len() as u64, t, "epoch {e}: a slot was read twice");
    }
    let distinct: HashSet<u64> = keys.iter().copied().collect();
    assert_eq!(distinct.len(), keys.len(), "an epoch key repeated");
}

/// The private cache's peak is measured: an epoch that asks for one block only caches one,
/// one that asks for three distinct blocks caches three, and only an epoch of T distinct
/// requests fills it. The trusted side's block buffers stay within T + one shuffle batch.
#[test]
fn private_cache_peak_counts_distinct_blocks() {
    let (n, bs) = (64u64, 32usize);
    let (o, _) = memory_store(n, bs, 4);
    let g = o.geometry();
    let t = g.epoch_len;
    assert_eq!(o.stats().used_this_epoch, 0);
    // distinct blocks per epoch, and the running peak they must give
    for (want, peak) in [(1u64, 1u64), (3, 3), (2, 3), (t, t)] {
        let ids: Vec<u64> = (0..want).map(|k| (k * 7 + 1) % n).collect();
        for k in 0..t {
            o.read(ids[(k % want) as usize]).unwrap();
        }
        let s = o.stats();
        assert_eq!(s.used_this_epoch, 0, "epoch boundary");
        assert_eq!(s.peak_cached_blocks, peak, "after an epoch of {want} distinct blocks");
    }
    let s = o.stats();
    // the shuffle's batch: whole groups, as many as fit veil_oram::shuffle::BATCH_BYTES
    let batch = g.rows.max(g.cols) * veil_oram::shuffle::groups_per_batch(g.rows as usize, g.cols as usize, bs) as u64;
    assert!(batch * bs as u64 <= veil_oram::shuffle::BATCH_BYTES as u64);
    let lo = (t + 1 + batch) * bs as u64;
    assert!(s.private_block_bytes >= lo && s.private_block_bytes <= lo + batch * 8, "{s:?}");
    assert_eq!(s.position_map_bytes, g.slots() * 4);
}

fn access_trace(pattern: &str, epochs: u64, seed: u64) -> (Vec<u64>, Vec<(Op, u32, u64)>, u64) {
    let n = 64;
    // one shuffle thread: the shuffle's trace is then a fixed sequence, compared exactly
    let st: Arc<dyn Storage> = Arc::new(veil_oram::storage::MemoryStorage::new(16 + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()));
    let mut c = cfg(16, seed);
    c.threads = 1;
    let o = ProOram::create(st.clone(), master(), n, c, &fill).unwrap();
    let t = o.geometry().epoch_len;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // the traces start and end at shuffle boundaries, wherever the scheduler let it run
    o.wait_shuffle();
    st.log().set_enabled(true);
    st.log().drain();
    read_pattern(&o, pattern, epochs * t, n, &mut rng);
    o.wait_shuffle();
    let log = st.log().drain();
    let acc = log.iter().filter(|x| x.actor == Actor::Access).map(|x| x.index).collect();
    let shuf: Vec<_> = log.iter().filter(|x| x.actor == Actor::Shuffle).map(|x| (x.op, x.region, x.index)).collect();
    (acc, shuf, t)
}

/// The adversary's view does not depend on the requests: the slots read for "one block
/// again and again" and for "uniform requests" are indistinguishable (chi-square homogeneity
/// on slot index, and on the pair (rank within epoch, slot)), and the shuffle's trace is the
/// same multiset of slots. The same statistic does catch the non-oblivious plain store.
#[test]
fn access_sequence_is_independent_of_requests() {
    let epochs = 400;
    let (a, sa, t) = access_trace("repeat", epochs, 21);
    let (b, sb, _) = access_trace("uniform", epochs, 22);
    let (c, _, _) = access_trace("sequential", epochs, 23);
    let m = 72u64; // slots for n = 64 (8 x 9)
    let hist = |v: &[u64]| {
        let mut h = vec![0u64; m as usize];
        for &x in v {
            h[x as usize] += 1;
        }
        h
    };
    let p_ab = homogeneity_p(&hist(&a), &hist(&b));
    let p_ac = homogeneity_p(&hist(&a), &hist(&c));
    assert!(p_ab > 1e-3 && p_ac > 1e-3, "slot histograms differ: p={p_ab} {p_ac}");
    // slot of the first request of each epoch vs the last: joint (rank, slot-bucket) histogram
    let joint = |v: &[u64]| {
        let mut h = vec![0u64; (t * 8) as usize];
        for (k, &x) in v.iter().enumerate() {
            h[(k as u64 % t * 8 + x * 8 / m) as usize] += 1;
        }
        h
    };
    let p_joint = homogeneity_p(&joint(&a), &joint(&b));
    assert!(p_joint > 1e-3, "rank/slot histograms differ: p={p_joint}");
    // within-epoch repeats would show up as equal consecutive slots: there are none
    assert!(a.chunks(t as usize).all(|e| e.iter().collect::<HashSet<_>>().len() == t as usize));
    // whole shuffles, at least one per epoch of at least five passes over the slots each; the
    // shuffle runs up to one epoch ahead, so one run may hold one more shuffle than the other
    let common = sa.len().min(sb.len());
    assert!(common as u64 >= epochs * 5 * m, "shuffle trace too short: {common}");
    assert!(sa[..common] == sb[..common], "shuffle trace depends on the requests");

    // negative control: the real plain store, same request patterns and counts, same statistic
    let (pa, pb, pc) = (plain_trace("repeat", a.len(), 21), plain_trace("uniform", b.len(), 22),
                        plain_trace("sequential", c.len(), 23));
    let (q_ab, q_ac) = (homogeneity_p(&hist(&pa), &hist(&pb)), homogeneity_p(&hist(&pa), &hist(&pc)));
    assert!(q_ab < 1e-6 && q_ac < 1e-6, "the statistic misses the plain store: p={q_ab} {q_ac}");
}

/// The slots the plain store reads for a request pattern (its storage log, as the adversary sees it).
fn plain_trace(pattern: &str, requests: usize, seed: u64) -> Vec<u64> {
    let n = 64;
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(16 + TAG_LEN, &[n]));
    let mut p = PlainStore::create(st.clone(), n, 16, master(), &fill).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    st.log().set_enabled(true);
    st.log().drain();
    for k in 0..requests as u64 {
        let id = match pattern {
            "repeat" => 5,
            "sequential" => k % n,
            _ => rng.gen_range(0..n),
        };
        assert!(check_block(SEED, id, &p.read(id).unwrap()));
    }
    st.log().drain().into_iter().filter(|x| x.actor == Actor::Plain).map(|x| x.index).collect()
}

/// The shuffle runs up to `run_ahead` epochs ahead in the regions that are not being served:
/// no shuffle write ever lands in the served epoch's region between its first and last read,
/// the epochs rotate through run_ahead + 1 regions, and the shuffle does get that far ahead.
/// Depth 2 is the layout of stores made before the depth was configurable (4 regions).
#[test]
fn run_ahead_never_writes_the_served_region() {
    for ahead in [1, 2, DEFAULT_RUN_AHEAD] {
        run_ahead_case(ahead);
    }
}

fn run_ahead_case(ahead: u32) {
    let n = 64;
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(32 + TAG_LEN, &region_slots(n, ahead).unwrap()));
    // a clock twice as slow as the shuffle, so that it gets ahead within a few epochs even on
    // a busy machine
    let o = ProOram::create(st.clone(), master(), n, ProOramConfig { pace_margin: 1.0, ..cfg(32, 9) }, &fill).unwrap();
    let t = o.geometry().epoch_len as usize;
    st.log().set_enabled(true);
    st.log().drain();
    let mut most_ready = 0;
    // at least 30 epochs, and on until the shuffle has been `ahead` epochs ahead: on a machine
    // busy with other work the shuffle's threads may take longer to get there (at most 300)
    let mut k = 0u64;
    while k < 30 * t as u64 || (most_ready < ahead as u64 && k < 300 * t as u64) || k % t as u64 != 0 {
        let id = k * 7 % n;
        assert!(check_block(SEED, id, &o.read(id).unwrap()), "run_ahead {ahead}: block {id} wrong");
        most_ready = most_ready.max(o.stats().epochs_ready);
        k += 1;
    }
    assert_eq!(o.run_ahead_limit(), ahead);
    assert_eq!(most_ready, ahead as u64, "the shuffle never got {ahead} epochs ahead in {k} requests");
    let log = st.log().drain();
    let reads: Vec<usize> = (0..log.len()).filter(|&i| log[i].actor == Actor::Access).collect();
    assert_eq!(reads.len() as u64, k);
    let mut regions = Vec::new();
    for epoch in reads.chunks(t) {
        let region = log[epoch[0]].region;
        assert!(epoch.iter().all(|&i| log[i].region == region), "an epoch read two regions");
        let (first, last) = (epoch[0], *epoch.last().unwrap());
        assert!(
            !log[first..=last].iter().any(|x| x.actor == Actor::Shuffle && x.op == Op::Write && x.region == region),
            "run_ahead {ahead}: the shuffle wrote the served region {region}"
        );
        regions.push(region);
    }
    let rotation = ahead + 1;
    assert!(regions.windows(2).all(|w| w[1] == (w[0] + 1) % rotation), "run_ahead {ahead}: epoch regions {regions:?}");
}

#[test]
fn flipped_bit_is_detected_never_returned() {
    let (o, st) = memory_store(50, 40, 3);
    let (region, slot) = o.debug_slot_of(17);
    st.flip_bit(region, slot, 77).unwrap();
    assert!(matches!(o.read(17), Err(OramError::Tamper { .. })));
    // asking again in the same epoch reads a dummy and still refuses
    assert!(matches!(o.read(17), Err(OramError::Tamper { .. })));
    assert!(check_block(SEED, 18, &o.read(18).unwrap()));
}

#[test]
fn file_store_survives_a_crash_mid_shuffle_and_reopens() {
    let dir = std::env::temp_dir().join(format!("veil-oram-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let n = 200;
    let bs = 64;
    {
        let st: Arc<dyn Storage> = Arc::new(FileStorage::create(&dir, bs + TAG_LEN, &region_slots(n, DEFAULT_RUN_AHEAD).unwrap()).unwrap());
        let o = ProOram::create(st, master(), n, cfg(bs, 4), &fill).unwrap();
        for id in 0..20 {
            assert!(check_block(SEED, id, &o.read(id).unwrap()));
        }
        o.debug_crash(); // the shuffle stops part-way; the state still names the live epoch
    }
    for round in 0..2 {
        let st: Arc<dyn Storage> = Arc::new(FileStorage::open(&dir).unwrap());
        let o = ProOram::open(st, master(), cfg(bs, 5 + round)).unwrap();
        for id in 0..n {
            assert!(check_block(SEED, id, &o.read(id).unwrap()), "block {id} after restart {round}");
        }
    }
    // wrong master key or block size: clear errors
    let st: Arc<dyn Storage> = Arc::new(FileStorage::open(&dir).unwrap());
    let e = ProOram::open(st.clone(), veil_oram::crypto::BlockKey::from_bytes([1; 16]), cfg(bs, 1)).err().unwrap();
    assert!(matches!(e, OramError::Corrupt(_)), "{e}");
    assert!(matches!(ProOram::open(st, master(), cfg(bs + 1, 1)).err().unwrap(), OramError::Config(_)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Scheduling policy (field 41 of stat(5)) of this process's threads whose name starts `prefix`.
#[cfg(target_os = "linux")]
fn thread_policies(prefix: &str) -> Vec<u32> {
    let mut policies = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        // the thread may have ended (another test's pool) between the listing and this read
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        policies.push(rest.split_whitespace().nth(41 - 3).unwrap().parse::<u32>().unwrap());
    }
    policies
}

/// With shuffle_idle the shuffle's threads run under SCHED_IDLE (a paced reply due now preempts
/// them at once); by default they keep the normal policy (their share beside other work).
#[cfg(target_os = "linux")]
#[test]
fn shuffle_thread_policy_follows_the_config() {
    let st: Arc<dyn Storage> = Arc::new(MemoryStorage::new(32 + TAG_LEN, &region_slots(64, 3).unwrap()));
    let o = ProOram::create(st, master(), 64, ProOramConfig { shuffle_idle: true, ..cfg(32, 3) }, &fill).unwrap();
    o.read(1).unwrap();
    let idle = thread_policies("oram-shufidle-");
    assert!(!idle.is_empty() && idle.iter().all(|&p| p == 5), "policies {idle:?}, SCHED_IDLE is 5");
    let (o2, _) = memory_store(64, 32, 3);
    o2.read(1).unwrap();
    let normal = thread_policies("oram-shuffle-");
    assert!(!normal.is_empty() && normal.iter().all(|&p| p == 0), "policies {normal:?}, SCHED_OTHER is 0");
}

/// After a pause the clock is behind: the requests already due go at once until it has caught
/// up, and from then on each is held for its period again. `clock_behind` says which.
#[test]
fn a_paused_clock_catches_up_then_holds_replies_again() {
    let (o, _) = memory_store(100, 65536, 3);
    // the clock's first estimates follow the shuffles: let it settle over a few epochs
    for id in 0..60u64 {
        o.read(id).unwrap();
    }
    let period = std::time::Duration::from_secs_f64(o.stats().period_ms / 1e3);
    std::thread::sleep(period * 8);
    assert!(o.clock_behind(), "8 periods after the last request");
    let mut caught_up = 0;
    while o.clock_behind() {
        o.read(1).unwrap();
        caught_up += 1;
        assert!(caught_up < 200, "the clock never caught up");
    }
    assert!(caught_up >= 4, "{caught_up} requests caught up after a pause of 8 periods");
    // each request is now held for its period (a hand-over may move it by 8%)
    let period = std::time::Duration::from_secs_f64(o.stats().period_ms / 1e3);
    let t = std::time::Instant::now();
    for id in 0..4 {
        o.read(id).unwrap();
    }
    assert!(t.elapsed() >= period * 3 * 9 / 10, "4 requests after catching up took {:?}, period {period:?}", t.elapsed());
}

/// The runner times only requests the clock holds: after the wait for the shuffle it lets the
/// clock catch up untimed, so the timed window spans every period but one (its first request is
/// due a period after it starts at the latest, each later one a period after the one before),
/// less however late the first one found itself (a preemption between the catch-up and the
/// window): four periods allowed. Without the catch-up, the requests due during the wait went
/// at once and the window was 10-14 periods short of 64.
#[test]
fn the_runner_times_paced_requests_only() {
    let cfg = r#"{"engine": "proram", "n_blocks": 256, "block_size": 65536, "accesses": 32, "warmup": 320, "seed": 2}"#;
    let r: veil_oram::measure::RunResult = serde_json::from_str(&veil_oram::measure::run_json(cfg).unwrap()).unwrap();
    assert_eq!(r.errors, 0);
    let floor = r.period_min_ms * (r.accesses - 5) as f64 / r.accesses as f64;
    assert!(r.server_ms >= floor, "{} ms per request against a period of at least {} ms", r.server_ms, r.period_min_ms);
}
