//! Sampled simulation: the timed records are cut into equal units, one window of each unit is
//! timed in detail, and the windows run in parallel (SMARTS-style systematic sampling, Wunderlich
//! et al., ISCA 2003).
//!
//! One pass over the input keeps a copy of the machine up to date with **functional warm-up**
//! only ([`Sim::warm_functional`]: FVT, stored bitmaps, bitmap cache and prefetcher, data TLB,
//! counter cache, open SDRAM rows; a fraction of a timed step's cost). At each window's start
//! the pass forks that copy ([`Sim::fork`]: a clone without the idle timing state) and hands the
//! fork and the window's records to a worker thread,
//! which times the window: its first `warmup` records in detail but not counted (they rebuild
//! what functional warm-up cannot: the core's window, memory and engine bookings, the pointer
//! table), then the measured rest. Every window's state depends only on the records before it,
//! never on which thread or machine timed it: results are the same for any thread count, and a
//! window timed on another machine (a Dask task that runs [`windows`] for some of them) is the
//! same window.
//!
//! The estimate and its confidence interval are combined from the windows by the caller
//! (`veil.memcrypt.sampled`), so that windows timed locally or on a cluster combine alike.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::input::{for_each, Run};
use crate::record::Record;
use crate::sim::{Results, Sim, Spare};
pub use crate::sampling::{Sampling, MAX_THREADS, MIN_WINDOWS};

/// Windows handed to a worker at once.
const BATCH: usize = 4;

/// One timed window: where its measured records begin (in the timed records) and what they did.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    pub index: usize,
    pub start: u64,
    /// The measured records' counters (a difference of [`Sim::snapshot`]s: `cycles` is the time
    /// they took, the two means are sums).
    pub results: Results,
}

/// Times one window from the machine state before it.
pub fn time_window(sim: Sim, recs: &[Record], warmup: usize) -> Results {
    time_window_keeping(sim, recs, warmup).0
}

/// [`time_window`], handing the machine back for its allocations.
fn time_window_keeping(mut sim: Sim, recs: &[Record], warmup: usize) -> (Results, Sim) {
    sim.end_warmup();
    let (warm, measured) = recs.split_at(warmup.min(recs.len()));
    for r in warm {
        sim.step(r);
    }
    let before = sim.snapshot();
    for r in measured {
        sim.step(r);
    }
    (difference(&sim.snapshot(), &before), sim)
}

/// `b - a` of every counter (cumulative fields only: both are snapshots of one run).
fn difference(b: &Results, a: &Results) -> Results {
    let mut d = b.clone();
    macro_rules! sub {
        ($($f:ident),*) => { $( d.$f = b.$f - a.$f; )* };
    }
    sub!(
        warmup_records,
        cycles,
        insts,
        records,
        load_fills,
        store_fills,
        writebacks,
        llc_hits,
        fetched_words,
        frequent_words,
        frequent_words_paired_natural,
        frequent_words_paired_reordered,
        frequent_words_paired_at_fetch,
        frequent_words_lost_odd,
        frequent_words_lost_changed,
        chunks,
        chunks_predicted,
        spec_ops,
        writeback_ops,
        demand_ops,
        spec_displaced,
        bitmap_hits,
        bitmap_misses,
        bitmap_prefetches,
        bitmap_prefetches_used,
        bitmap_late,
        bitmap_ops,
        dependent_misses,
        bitmap_wait_cycles,
        tlb_misses,
        bitmap_walk_fetches,
        counter_misses,
        tree_fetches,
        counter_writebacks,
        counter_ops,
        counter_overflows,
        overflow_lines,
        overflow_ops,
        dram_row_hits,
        dram_row_closed,
        dram_row_conflicts,
        dram_accesses,
        mean_memory_cycles,
        mean_crypto_cycles,
        stall_cycles
    );
    d.ipc = if d.cycles > 0.0 {
        d.insts as f64 / d.cycles
    } else {
        0.0
    };
    d
}

/// What every timed record adds up to, counted by the functional pass (the auxiliary totals
/// of the caller's regression estimate). Complete only when the pass read the whole timed
/// region (`last` = the last window).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Totals {
    pub records: u64,
    pub insts: u64,
    pub load_fills: u64,
    pub store_fills: u64,
    pub writebacks: u64,
}

/// The windows of a sampled run and the totals of the timed records the pass read.
#[derive(Clone, Debug, Serialize)]
pub struct Sampled {
    pub windows: Vec<Window>,
    pub totals: Totals,
    /// The pass read every timed record (the totals are the region's).
    pub complete: bool,
}

/// The windows `sampling.first..last` of a run: one functional pass over the input (up to the
/// last of them; to the end of the timed records when that is the last window), the windows
/// timed on `sampling.threads` threads. `run.max_records` must give the timed records (the plan
/// depends on it).
pub fn windows(run: &Run, sampling: &Sampling, interrupted: &dyn Fn() -> bool) -> Result<Sampled> {
    let (part, _) = reading(run, sampling)?;
    windows_from(run, sampling, |f| for_each(&part, interrupted, f))
}

/// The run cut to the records the pass of `sampling` reads, and the plan.
fn reading(run: &Run, sampling: &Sampling) -> Result<(Run, Vec<u64>)> {
    if run.max_records == 0 {
        return Err(Error::config(
            "sampling: give the number of timed records (max_records)",
        ));
    }
    let starts = sampling.plan(run.max_records)?;
    let mut part = run.clone();
    if let Some(l) = sampling.last.filter(|&l| l < starts.len()) {
        part.max_records = starts[l.max(1) - 1] + (sampling.window - sampling.warmup);
    }
    Ok((part, starts))
}

/// A window being read: its index, the machine it starts from, its records so far and how many
/// of them are its warm-up.
struct Open {
    at: usize,
    sim: Sim,
    recs: Vec<Record>,
    warmup: usize,
    /// Input position (records after the skipped ones) one past its last record.
    end: u64,
}

/// [`windows`] over any source of the run's records (after the skipped ones): `source` calls
/// its argument on each record in order (a trace through [`for_each`], or records in memory).
pub fn windows_from(
    run: &Run,
    sampling: &Sampling,
    source: impl FnOnce(&mut dyn FnMut(&Record) -> Result<()>) -> Result<()>,
) -> Result<Sampled> {
    let (part, starts) = reading(run, sampling)?;
    let last = sampling.last.unwrap_or(starts.len()).min(starts.len());
    let first = sampling.first.min(last);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(sampling.threads)
        .build()
        .map_err(|e| Error::config(format!("threads: {e}")))?;
    let out: Vec<std::sync::Mutex<Option<Results>>> =
        (first..last).map(|_| Default::default()).collect();
    let warm = run.config.warmup_records;
    let timed_end = part.max_records;
    let measured = sampling.window - sampling.warmup;
    // Window k reads from `warmup` records before its measured ones (fewer where the input
    // begins sooner: the run's own warm-up is shorter than a window's) to their end.
    let begin = |k: usize| (warm + starts[k]).saturating_sub(sampling.warmup);
    let mut fw = Sim::new(&run.config)?;
    let mut totals = Totals::default();
    // Machines whose windows are timed, cleared by the worker that timed them, for the pass's
    // next forks.
    let spares: std::sync::Mutex<Vec<Spare>> = Default::default();
    pool.in_place_scope(|scope| -> Result<()> {
        let mut pos = 0u64;
        let mut k = first;
        let mut open: std::collections::VecDeque<Open> = Default::default();
        let mut batch: Vec<Open> = Vec::new();
        source(&mut |r: &Record| {
            let here = pos;
            pos += 1;
            if here >= warm + timed_end {
                return Ok(());
            }
            // Windows overlap when one's measured records end late in its unit and the next
            // one's warm-up begins early in its own: several may be open at once.
            while k < last && begin(k) == here {
                let end = warm + starts[k] + measured;
                let warmup = (warm + starts[k] - here) as usize;
                let spare = spares.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let sim = fw.fork_reusing(&run.config, spare)?;
                open.push_back(Open {
                    at: k - first,
                    sim,
                    recs: Vec::new(),
                    warmup,
                    end,
                });
                k += 1;
            }
            for w in open.iter_mut() {
                w.recs.push(*r);
            }
            // Windows end in the order they begin (their measured records begin in order and
            // are equally long).
            while open.front().is_some_and(|w| w.end == here + 1) {
                batch.push(open.pop_front().expect("an open window"));
                if batch.len() == BATCH || (k == last && open.is_empty()) {
                    // Windows go to the pool in batches: a worker that runs out of work spins
                    // before it sleeps, and one job per window made it do so per window.
                    let jobs = std::mem::take(&mut batch);
                    let (out, spares) = (&out, &spares);
                    scope.spawn(move |_| {
                        for w in jobs {
                            let (res, sim) = time_window_keeping(w.sim, &w.recs, w.warmup);
                            *out[w.at].lock().unwrap_or_else(|e| e.into_inner()) = Some(res);
                            let spare = sim.into_spare();
                            spares.lock().unwrap_or_else(|e| e.into_inner()).push(spare);
                        }
                    });
                }
            }
            if here < warm {
                // The run's own warm-up, as the full run does it.
                fw.step(r);
                return Ok(());
            }
            totals.records += 1;
            totals.insts += r.insts;
            match r.kind {
                crate::record::Kind::LoadFill => totals.load_fills += 1,
                crate::record::Kind::StoreFill => totals.store_fills += 1,
                crate::record::Kind::Writeback => totals.writebacks += 1,
            }
            fw.warm_functional(r);
            Ok(())
        })
    })?;
    let mut ws = Vec::with_capacity(out.len());
    for (n, slot) in out.into_iter().enumerate() {
        let results = slot
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| {
                Error::config(format!("input: ended before sample window {}", first + n))
            })?;
        ws.push(Window {
            index: first + n,
            start: starts[first + n],
            results,
        });
    }
    let complete = totals.records == run.max_records;
    Ok(Sampled {
        windows: ws,
        totals,
        complete,
    })
}

/// The bindings' entry point: a [`Run`] with its `sampling`, JSON in, the windows as JSON out.
pub fn windows_json(json: &str, interrupted: &dyn Fn() -> bool) -> Result<String> {
    let run: Run = serde_json::from_str(json).map_err(|e| Error::config(format!("config: {e}")))?;
    let sampling = run
        .sampling
        .clone()
        .ok_or_else(|| Error::config("sampling: missing"))?;
    let ws = windows(&run, &sampling, interrupted)?;
    Ok(serde_json::to_string(&ws).expect("results serialise"))
}

/// The plan of a sampling (JSON) over `records` timed records: bad options are a config error.
pub fn plan_json(records: u64, sampling: &str) -> Result<Vec<u64>> {
    let s: Sampling =
        serde_json::from_str(sampling).map_err(|e| Error::config(format!("sampling: {e}")))?;
    s.plan(records)
}

/// CPU seconds of the whole process (every thread), for the benchmark's CPU figures beside wall.
fn process_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0 {
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    } else {
        f64::NAN
    }
}

/// Wall seconds and process CPU seconds of one timed part.
pub type Took = (f64, f64);

/// Speed of sequential against sampled timing over the same records, decoded into memory
/// first: timed records, then what the sequential model and the sampled run on
/// `sampling.threads` threads took.
pub fn time_sampled(run: &Run, sampling: &Sampling) -> Result<(u64, Took, Took)> {
    let mut recs = Vec::new();
    for_each(run, &|| false, |r| {
        recs.push(*r);
        Ok(())
    })?;
    let (t, c) = (std::time::Instant::now(), process_seconds());
    let mut sim = Sim::new(&run.config)?;
    for r in &recs {
        sim.step(r);
    }
    let n = std::hint::black_box(sim.finish()).records;
    let seq = (t.elapsed().as_secs_f64(), process_seconds() - c);
    let (t, c) = (std::time::Instant::now(), process_seconds());
    std::hint::black_box(windows_from(run, sampling, |f| {
        recs.iter().try_for_each(f)
    })?);
    Ok((n, seq, (t.elapsed().as_secs_f64(), process_seconds() - c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::synth::{Synth, SynthConfig};

    fn sampling(window: u64, warmup: u64, interval: u64, threads: usize) -> Sampling {
        Sampling {
            window,
            warmup,
            interval,
            threads,
            first: 0,
            last: None,
            seed: 0,
        }
    }

    fn records(n: u64) -> Vec<Record> {
        Synth::new(SynthConfig {
            records: n,
            run_lines: 4,
            seed: 3,
            ..Default::default()
        })
        .collect()
    }

    fn run(n: u64, warm: u64) -> Run {
        Run {
            config: Config {
                warmup_records: warm,
                ..Default::default()
            },
            trace: None,
            synth: None,
            max_records: n,
            skip_records: 0,
            sampling: None,
        }
    }

    #[test]
    fn measured_records_begin_anywhere_in_equal_units_at_seeded_offsets() {
        let s = sampling(100, 40, 1000, 1);
        // 10,500 records: 10 units of 1,050; 60 measured records begin anywhere inside each (the
        // last unit's stop 60 records before the region's end).
        let p = s.plan(10_500).unwrap();
        assert_eq!(p.len(), 10);
        for (k, &a) in p.iter().enumerate() {
            assert!(
                a >= k as u64 * 1050 && a < (k as u64 + 1) * 1050,
                "window {k} at {a}"
            );
        }
        assert!(p[9] + 60 <= 10_500);
        assert_eq!(p, s.plan(10_500).unwrap(), "the same seed, the same plan");
        let other = Sampling {
            seed: 1,
            ..s.clone()
        }
        .plan(10_500)
        .unwrap();
        assert_ne!(p, other);
        // Every position of a unit is as likely, its first records included: over 1,000 units
        // of 1,000 records the offsets cover [0, 1000) roughly uniformly.
        let q: Vec<u64> = sampling(100, 40, 1000, 1)
            .plan(1_000_000)
            .unwrap()
            .iter()
            .enumerate()
            .map(|(k, &a)| a - k as u64 * 1000)
            .collect();
        let mean = q.iter().sum::<u64>() as f64 / q.len() as f64;
        assert!((mean - 500.0).abs() < 30.0, "mean offset {mean}");
        let in_tenth = |lo: u64| q.iter().filter(|&&o| o >= lo && o < lo + 100).count();
        assert!(
            in_tenth(0) > 60 && in_tenth(900) > 60,
            "{} {}",
            in_tenth(0),
            in_tenth(900)
        );
        // Units as short as a window: the last window still ends inside the region.
        for seed in 0..50 {
            let p = Sampling {
                seed,
                ..sampling(100, 40, 100, 1)
            }
            .plan(800)
            .unwrap();
            assert!(p[7] >= 700 && p[7] + 60 <= 800, "{p:?}");
        }
    }

    #[test]
    fn every_timed_record_is_measured_equally_often() {
        // Over many seeds, records at the start, middle and end of a unit are measured about
        // equally often (the fix of a design that never measured a unit's first records).
        let s = |seed| Sampling {
            seed,
            ..sampling(60, 30, 150, 1)
        };
        let mut hits = vec![0u32; 1500];
        for seed in 0..4000 {
            for a in s(seed).plan(1500).unwrap() {
                for h in &mut hits[a as usize..a as usize + 30] {
                    *h += 1;
                }
            }
        }
        // Expected 4000 * 30 / 150 = 800 per record, away from the region's two ends.
        for (p, &h) in hits.iter().enumerate().skip(30).take(1500 - 60 - 150) {
            assert!((h as f64 - 800.0).abs() < 120.0, "record {p}: {h}");
        }
    }

    #[test]
    fn bad_sampling_is_a_config_error_naming_its_field() {
        let err = |s: Sampling, n: u64| match s.plan(n) {
            Err(Error::Config(m)) => m,
            other => panic!("expected a config error, got {other:?}"),
        };
        assert!(err(sampling(100, 40, 1000, 0), 1 << 20).starts_with("threads:"));
        assert!(err(sampling(100, 40, 1000, MAX_THREADS + 1), 1 << 20).starts_with("threads:"));
        assert!(err(sampling(100, 100, 1000, 1), 1 << 20).starts_with("sample_window:"));
        assert!(err(sampling(100, 200, 1000, 1), 1 << 20).starts_with("sample_window:"));
        assert!(err(sampling(100, 40, 99, 1), 1 << 20).starts_with("sample_interval:"));
        // 7,999 records leave 7 units of 1,000: too few; none at all below one interval.
        assert!(err(sampling(100, 40, 1000, 1), 7_999).starts_with("sample_interval:"));
        assert!(err(sampling(100, 40, 1000, 1), 10).contains("leave 0 window"));
        assert_eq!(
            sampling(100, 40, 1000, MAX_THREADS)
                .plan(8_000)
                .unwrap()
                .len(),
            8
        );
    }

    #[test]
    fn windows_do_not_depend_on_threads_and_shares_make_the_whole() {
        let recs = records(70_000);
        let r = run(60_000, 5_000);
        let go = |s: &Sampling| windows_from(&r, s, |f| recs.iter().try_for_each(f)).unwrap();
        let one = go(&sampling(600, 300, 3000, 1));
        assert_eq!(one.windows.len(), 20);
        assert!(one.complete && one.totals.records == 60_000);
        let json = |w: &Sampled| serde_json::to_string(&w.windows).unwrap();
        assert_eq!(json(&one), json(&go(&sampling(600, 300, 3000, 3))));
        // Windows 0..7 and 7..20 timed apart (two cluster tasks) are the windows of one run.
        let a = go(&Sampling {
            first: 0,
            last: Some(7),
            ..sampling(600, 300, 3000, 2)
        });
        let b = go(&Sampling {
            first: 7,
            last: None,
            ..sampling(600, 300, 3000, 2)
        });
        assert!(!a.complete && b.complete && b.totals == one.totals);
        let joined: Vec<_> = a.windows.iter().chain(&b.windows).cloned().collect();
        assert_eq!(serde_json::to_string(&joined).unwrap(), json(&one));
        for w in &one.windows {
            assert_eq!(w.results.records, 300, "only the measured records count");
            assert!(w.results.cycles > 0.0 && w.results.insts > 0);
        }
    }

    #[test]
    fn functional_warm_up_leaves_the_state_timing_leaves() {
        // The same records timed in sequence or only warmed functionally: the window after them
        // finds the same frequent values, stored bitmaps, TLB and bitmap cache (its value and
        // bitmap counts are equal); from a cold machine it does not.
        let recs = records(60_000);
        let (before, window) = recs.split_at(50_000);
        let cfg = Config::default();
        let mut timed = Sim::new(&cfg).unwrap();
        let mut warmed = Sim::new(&cfg).unwrap();
        for r in before {
            timed.step(r);
            warmed.warm_functional(r);
        }
        let a = time_window(timed, window, 0);
        // A fork (what a sampled run times) is the warmed machine itself.
        let json = |r: &Results| serde_json::to_string(r).unwrap();
        let forked = time_window(warmed.fork(&cfg).unwrap(), window, 100);
        assert_eq!(
            json(&forked),
            json(&time_window(warmed.clone(), window, 100))
        );
        // A fork into a spare machine another window used is the same machine as a fresh fork.
        let (_, used) = time_window_keeping(warmed.fork(&cfg).unwrap(), &recs[20_000..30_000], 100);
        let reused = warmed.fork_reusing(&cfg, Some(used.into_spare())).unwrap();
        assert_eq!(json(&time_window(reused, window, 100)), json(&forked));
        let b = time_window(warmed, window, 0);
        let cold = time_window(Sim::new(&cfg).unwrap(), window, 0);
        assert_eq!(a.frequent_words, b.frequent_words);
        assert_eq!(
            a.frequent_words_paired_reordered,
            b.frequent_words_paired_reordered
        );
        assert_eq!(
            a.frequent_words_paired_at_fetch,
            b.frequent_words_paired_at_fetch
        );
        assert_eq!(a.tlb_misses, b.tlb_misses);
        assert_eq!(
            a.bitmap_misses + a.bitmap_walk_fetches,
            b.bitmap_misses + b.bitmap_walk_fetches
        );
        assert!(cold.frequent_words < b.frequent_words);
        assert!(cold.tlb_misses > b.tlb_misses);
    }
}
