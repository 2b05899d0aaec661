//! A fork-join pool for one simulated cycle's router work. `run(f)` calls `f(0)` on the
//! caller and `f(k)` on every worker k that joins the job before the caller is done with
//! `f(0)`; `f` must therefore hand out its work dynamically (whoever comes takes the next
//! share), and a late worker simply misses that job.
//!
//! Why not rayon's scope: a cycle of the 1056-node dragonfly is about 0.2 ms of work, and the
//! serial part between two cycles (sources, ejection, the merge) is long enough for rayon's idle
//! workers to go to sleep, so every cycle paid a wake-up per worker: on two cores, two threads
//! spent 3 CPU-s more than one thread over the run and lost about as much wall time. Here an idle
//! worker spins on the job counter for a while before it parks, and the caller wakes only workers
//! that parked.
//!
//! Why join-or-miss and adaptive spinning: on a shared machine a peer is often descheduled for a
//! whole time slice (milliseconds). A pool that must wait for every worker then spins (or yields)
//! on the caller for that slice, and a worker spinning for a descheduled caller burns a core
//! someone else needs: 2 threads cost 1.98x the CPU of 1 on a loaded 2-core machine. Now (a) the
//! caller never waits for a worker that has not started: it does the work itself; (b) it waits
//! for a started worker by spinning briefly, then parks until that worker wakes it; (c) a worker
//! spins only about as long as the caller's recent serial gaps, and parks at once for a while
//! after it finds itself preempted (a jump of the clock while spinning: the machine has more
//! runnable threads than cores).

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// The longest an idle worker spins before it parks: above a quiet cycle's serial part on the
/// 1056-node dragonfly, and short next to a time slice.
const SPIN_MAX: Duration = Duration::from_micros(200);
/// The shortest: covers back-to-back jobs within one cycle, and costs less than a wake-up.
const SPIN_MIN: Duration = Duration::from_micros(20);
/// How long the caller spins for a started worker before it parks: a share's work on a running
/// thread is well under this; longer means the worker was descheduled.
const CALLER_SPIN: Duration = Duration::from_micros(100);
/// A jump of the clock this long between two looks while spinning means this thread was
/// preempted (a look is well under a microsecond).
const PREEMPTED: Duration = Duration::from_micros(15);
/// After a preemption a worker parks at once for this many jobs, doubling on each preemption
/// up to `BACKOFF_MAX` and halving on each clean spin.
const BACKOFF_MIN: u32 = 8;
const BACKOFF_MAX: u32 = 1024;

/// `slot`: the job's generation in the high 32 bits, `CLOSED` once the caller is done with
/// `f(0)` (no worker may join after), and the count of workers that joined in the rest.
const CLOSED: u64 = 1 << 31;
const COUNT: u64 = CLOSED - 1;

type Job = *const (dyn Fn(usize) + Sync);

struct Shared {
    slot: AtomicU64,
    /// Joined workers done with the current job.
    done: AtomicUsize,
    /// The current job, valid from its generation until every joined worker counted itself done.
    job: UnsafeCell<Option<Job>>,
    /// The thread in `run`, to wake when it parked waiting for a worker; same validity as `job`.
    caller: UnsafeCell<Option<Thread>>,
    caller_parked: AtomicBool,
    /// Moving average of the caller's serial gaps between jobs, in ns: how long to spin.
    gap_ns: AtomicU64,
    stop: AtomicBool,
    panicked: AtomicBool,
    /// Per worker: parked (or about to), so the caller must unpark it.
    parked: Vec<AtomicBool>,
}

// SAFETY: `job` and `caller` are written only by the caller of `run` while no worker reads them
// (before the generation that publishes them, after every joined worker is done with the last),
// and read by workers only between joining and counting themselves done; the pointee is `Sync`.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

pub struct SpinPool {
    shared: Arc<Shared>,
    workers: Vec<(JoinHandle<()>, Thread)>,
    generation: Cell<u32>,
    last_return: Cell<Option<Instant>>,
    /// One caller at a time: `run` publishes through shared cells.
    _not_sync: PhantomData<Cell<()>>,
}

impl SpinPool {
    /// A pool of `threads` threads in all: the caller and `threads - 1` workers.
    pub fn new(threads: usize, name: &str) -> std::io::Result<Self> {
        let n = threads.saturating_sub(1);
        let shared = Arc::new(Shared {
            slot: AtomicU64::new(CLOSED),
            done: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            caller: UnsafeCell::new(None),
            caller_parked: AtomicBool::new(false),
            gap_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            parked: (0..n).map(|_| AtomicBool::new(false)).collect(),
        });
        let mut workers = Vec::with_capacity(n);
        for w in 0..n {
            let sh = Arc::clone(&shared);
            let h = std::thread::Builder::new().name(format!("{name}-{w}")).spawn(move || worker(&sh, w))?;
            let t = h.thread().clone();
            workers.push((h, t));
        }
        Ok(Self { shared, workers, generation: Cell::new(0), last_return: Cell::new(None), _not_sync: PhantomData })
    }

    /// Calls `f(0)` here and `f(k)` on each worker k in 1..threads that starts before `f(0)`
    /// returns, and returns when every call has returned. `f` must share its work out
    /// dynamically: how many workers join depends on the machine. A panic in any call is
    /// raised here.
    pub fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        let sh = &*self.shared;
        if let Some(t) = self.last_return.get() {
            // Samples clipped so that one long stall (a time slice) moves the average by a bounded step.
            let gap = (t.elapsed().as_nanos() as u64).min(4 * SPIN_MAX.as_nanos() as u64);
            let avg = sh.gap_ns.load(Ordering::Relaxed);
            sh.gap_ns.store(avg - avg / 8 + gap / 8, Ordering::Relaxed);
        }
        // SAFETY: the lifetime is erased only for the span of this call: workers use the
        // pointer after joining the generation below and stop before they count themselves
        // done, which this call waits for before returning (or unwinding).
        let job: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(f) };
        // SAFETY: no worker reads these now: every joined worker counted itself done.
        unsafe {
            *sh.job.get() = Some(job);
            if (*sh.caller.get()).as_ref().map(Thread::id) != Some(std::thread::current().id()) {
                *sh.caller.get() = Some(std::thread::current());
            }
        }
        sh.done.store(0, Ordering::Relaxed);
        let g = self.generation.get().wrapping_add(1);
        self.generation.set(g);
        sh.slot.store(u64::from(g) << 32, Ordering::SeqCst);
        for (w, (_, t)) in self.workers.iter().enumerate() {
            if sh.parked[w].load(Ordering::SeqCst) {
                t.unpark();
            }
        }
        let own = catch_unwind(AssertUnwindSafe(|| f(0)));
        let joined = (sh.slot.fetch_or(CLOSED, Ordering::AcqRel) & COUNT) as usize;
        wait_for_workers(sh, joined);
        self.last_return.set(Some(Instant::now()));
        if let Err(e) = own {
            std::panic::resume_unwind(e);
        }
        if sh.panicked.swap(false, Ordering::AcqRel) {
            panic!("a router thread panicked");
        }
    }
}

/// Spins for `CALLER_SPIN` while joined workers finish, then parks until the last wakes it.
fn wait_for_workers(sh: &Shared, joined: usize) {
    let start = Instant::now();
    let mut spins = 0u32;
    while sh.done.load(Ordering::Acquire) < joined {
        spins += 1;
        if !spins.is_multiple_of(64) || start.elapsed() < CALLER_SPIN {
            std::hint::spin_loop();
            continue;
        }
        sh.caller_parked.store(true, Ordering::SeqCst);
        while sh.done.load(Ordering::SeqCst) < joined {
            std::thread::park();
        }
        sh.caller_parked.store(false, Ordering::SeqCst);
    }
}

/// How long a worker spins for the next job: 1.5x the caller's recent mean serial gap, or the
/// minimum when that gap is too long to be worth spinning through.
fn spin_budget(sh: &Shared) -> Duration {
    let gap = Duration::from_nanos(sh.gap_ns.load(Ordering::Relaxed));
    if gap > SPIN_MAX {
        SPIN_MIN
    } else {
        (gap + gap / 2).clamp(SPIN_MIN, SPIN_MAX)
    }
}

enum Wait {
    Joined(u32),
    Missed(u32),
    Stop,
}

/// Worker `w`'s wait for a generation after `seen`: joins it if it is still open.
fn next_job(sh: &Shared, w: usize, seen: u32, budget: Duration, preempted: &mut bool) -> Wait {
    let mut last = Instant::now();
    let deadline = last + budget;
    let mut spins = 0u32;
    loop {
        if sh.stop.load(Ordering::Acquire) {
            return Wait::Stop;
        }
        let s = sh.slot.load(Ordering::Acquire);
        let g = (s >> 32) as u32;
        if g != seen {
            if s & CLOSED != 0 {
                return Wait::Missed(g);
            }
            if sh.slot.compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                return Wait::Joined(g);
            }
            continue;
        }
        spins += 1;
        if !spins.is_multiple_of(64) {
            std::hint::spin_loop();
            continue;
        }
        let now = Instant::now();
        if now.duration_since(last) > PREEMPTED {
            *preempted = true;
        }
        last = now;
        if now < deadline && !*preempted {
            continue;
        }
        // Announce the park, then look again: a job published after the look above
        // unparks this thread (park returns at once on a pending unpark).
        sh.parked[w].store(true, Ordering::SeqCst);
        if (sh.slot.load(Ordering::SeqCst) >> 32) as u32 == seen && !sh.stop.load(Ordering::SeqCst) {
            std::thread::park();
        }
        sh.parked[w].store(false, Ordering::SeqCst);
        last = Instant::now();
    }
}

fn worker(sh: &Shared, w: usize) {
    let mut seen = 0u32;
    let (mut skip, mut backoff) = (0u32, BACKOFF_MIN);
    loop {
        let mut preempted = false;
        let budget = if skip > 0 { Duration::ZERO } else { spin_budget(sh) };
        let clean = budget > Duration::ZERO;
        match next_job(sh, w, seen, budget, &mut preempted) {
            Wait::Stop => return,
            Wait::Missed(g) => seen = g,
            Wait::Joined(g) => {
                seen = g;
                // SAFETY: published before generation `g` (SeqCst store / AcqRel join) and
                // valid until this worker counts itself done below.
                let (job, caller) = unsafe { ((*sh.job.get()).expect("a published job"), (*sh.caller.get()).clone()) };
                let f = unsafe { &*job };
                if catch_unwind(AssertUnwindSafe(|| f(w + 1))).is_err() {
                    sh.panicked.store(true, Ordering::Release);
                }
                sh.done.fetch_add(1, Ordering::SeqCst);
                if sh.caller_parked.load(Ordering::SeqCst) {
                    if let Some(t) = caller {
                        t.unpark();
                    }
                }
            }
        }
        if preempted {
            skip = backoff;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        } else if skip > 0 {
            skip -= 1;
        } else if clean {
            backoff = (backoff / 2).max(BACKOFF_MIN);
        }
    }
}

impl Drop for SpinPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for (_, t) in &self.workers {
            t.unpark();
        }
        for (h, _) in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Waits (bounded) until `flag` is set: holds a job open until a worker joins it.
    fn until(flag: &AtomicBool) -> bool {
        let t = Instant::now();
        while !flag.load(Ordering::Acquire) {
            if t.elapsed() > Duration::from_secs(10) {
                return false;
            }
            std::hint::spin_loop();
        }
        true
    }

    #[test]
    fn every_share_is_done_once_and_run_waits_for_every_joined_call() {
        let pool = SpinPool::new(3, "t").unwrap();
        const SHARES: usize = 12;
        for round in 0..2000u64 {
            let next = AtomicUsize::new(0);
            let hits: Vec<AtomicUsize> = (0..SHARES).map(|_| AtomicUsize::new(0)).collect();
            let ks = Mutex::new(Vec::new());
            let inside = AtomicUsize::new(0);
            pool.run(&|k| {
                inside.fetch_add(1, Ordering::SeqCst);
                ks.lock().unwrap().push(k);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= SHARES {
                        break;
                    }
                    hits[i].fetch_add(1, Ordering::Relaxed);
                }
                inside.fetch_sub(1, Ordering::SeqCst);
            });
            assert_eq!(inside.load(Ordering::SeqCst), 0, "a call outlived run");
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "round {round}");
            let mut ks = ks.into_inner().unwrap();
            ks.sort();
            assert_eq!(ks[0], 0, "the caller always runs f(0)");
            ks.dedup();
            assert!(ks.iter().all(|&k| k < 3));
            if round % 500 == 0 {
                // Long enough for the workers to park.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    #[test]
    fn parked_workers_are_woken_and_join() {
        let pool = SpinPool::new(3, "t").unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(5));
            let came = [AtomicBool::new(false), AtomicBool::new(false)];
            pool.run(&|k| {
                if k == 0 {
                    assert!(until(&came[0]) && until(&came[1]), "a parked worker never joined");
                } else {
                    came[k - 1].store(true, Ordering::Release);
                }
            });
        }
    }

    #[test]
    fn a_worker_panic_is_raised_by_run_and_the_pool_goes_on() {
        let pool = SpinPool::new(2, "t").unwrap();
        let came = AtomicBool::new(false);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(&|k| {
                if k == 0 {
                    until(&came);
                } else {
                    came.store(true, Ordering::Release);
                    panic!("worker fails");
                }
            })
        }));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        pool.run(&|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert!((1..=2).contains(&n.load(Ordering::Relaxed)));
    }

    #[test]
    fn one_thread_is_the_caller_alone() {
        let pool = SpinPool::new(1, "t").unwrap();
        let n = AtomicUsize::new(0);
        pool.run(&|k| {
            assert_eq!(k, 0);
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn spin_budget_follows_the_callers_gaps() {
        let pool = SpinPool::new(2, "t").unwrap();
        let sh = &*pool.shared;
        sh.gap_ns.store(50_000, Ordering::Relaxed);
        assert_eq!(spin_budget(sh), Duration::from_micros(75));
        sh.gap_ns.store(1_000, Ordering::Relaxed);
        assert_eq!(spin_budget(sh), SPIN_MIN);
        sh.gap_ns.store(150_000, Ordering::Relaxed);
        assert_eq!(spin_budget(sh), SPIN_MAX);
        // A caller that is away longer than any spin is worth: park almost at once.
        sh.gap_ns.store(2_000_000, Ordering::Relaxed);
        assert_eq!(spin_budget(sh), SPIN_MIN);
    }
}
