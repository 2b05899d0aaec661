//! A fork-join pool for one simulated cycle's router work: `run(f)` calls `f(k)` for every
//! thread k (k = 0 on the caller) and returns when all are done.
//!
//! Why not rayon's scope: a cycle of the 1056-node dragonfly is about 0.2 ms of work, and the
//! serial part between two cycles (sources, ejection, the merge) is long enough for rayon's idle
//! workers to go to sleep, so every cycle paid a wake-up per worker: on two cores, two threads
//! spent 3 CPU-s more than one thread over the run and lost about as much wall time. Here an idle
//! worker spins on the job counter for a while (longer than the serial part) before it parks,
//! and the caller wakes only workers that parked.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long an idle worker spins before it parks: well above a cycle's serial part.
const SPIN: Duration = Duration::from_micros(200);

type Job = *const (dyn Fn(usize) + Sync);

struct Shared {
    /// Jobs published so far; a worker runs each once.
    generation: AtomicU64,
    /// Workers done with the current job.
    done: AtomicUsize,
    /// The current job, valid from its `generation` until every worker counted itself `done`.
    job: UnsafeCell<Option<Job>>,
    stop: AtomicBool,
    panicked: AtomicBool,
    /// Per worker: parked (or about to), so the caller must unpark it.
    parked: Vec<AtomicBool>,
}

// SAFETY: `job` is written only by the caller of `run` while no worker reads it (before the
// generation that publishes it, after every worker is done with the last), and read by workers
// only between those points; the pointee is `Sync`.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

pub struct SpinPool {
    shared: Arc<Shared>,
    workers: Vec<(JoinHandle<()>, Thread)>,
}

impl SpinPool {
    /// A pool of `threads` threads in all: the caller and `threads - 1` workers.
    pub fn new(threads: usize, name: &str) -> std::io::Result<Self> {
        let n = threads.saturating_sub(1);
        let shared = Arc::new(Shared {
            generation: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
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
        Ok(Self { shared, workers })
    }

    /// Calls `f(k)` for k in 0..threads (0 on this thread) and returns when every call has
    /// returned. A panic in a worker's call is raised here.
    pub fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        let sh = &*self.shared;
        // SAFETY: the lifetime is erased only for the span of this call: workers use the
        // pointer after the generation below publishes it and stop before they count
        // themselves done, which this call waits for before returning (or unwinding).
        let job: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(f) };
        // SAFETY: no worker reads `job` now: all counted themselves done with the last one.
        unsafe { *sh.job.get() = Some(job) };
        sh.done.store(0, Ordering::Relaxed);
        sh.generation.fetch_add(1, Ordering::Release);
        for (w, (_, t)) in self.workers.iter().enumerate() {
            if sh.parked[w].load(Ordering::Acquire) {
                t.unpark();
            }
        }
        let own = catch_unwind(AssertUnwindSafe(|| f(0)));
        let n = self.workers.len();
        let mut spins = 0u32;
        while sh.done.load(Ordering::Acquire) < n {
            spins += 1;
            if spins < 1 << 16 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if let Err(e) = own {
            std::panic::resume_unwind(e);
        }
        if sh.panicked.swap(false, Ordering::AcqRel) {
            panic!("a router thread panicked");
        }
    }
}

fn worker(sh: &Shared, w: usize) {
    let mut seen = 0u64;
    loop {
        let mut since = Instant::now();
        let mut spins = 0u32;
        let g = loop {
            let g = sh.generation.load(Ordering::Acquire);
            if g != seen || sh.stop.load(Ordering::Acquire) {
                break g;
            }
            spins += 1;
            if !spins.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            if since.elapsed() < SPIN {
                continue;
            }
            // Announce the park, then look again: a job published after the look above
            // unparks this thread (park returns at once on a pending unpark).
            sh.parked[w].store(true, Ordering::SeqCst);
            if sh.generation.load(Ordering::SeqCst) == seen && !sh.stop.load(Ordering::SeqCst) {
                std::thread::park();
            }
            sh.parked[w].store(false, Ordering::Release);
            since = Instant::now();
        };
        if sh.stop.load(Ordering::Acquire) {
            return;
        }
        seen = g;
        // SAFETY: published before `generation` moved to `g` (Release/Acquire) and valid
        // until this worker counts itself done below.
        let job = unsafe { (*sh.job.get()).expect("a published job") };
        let f = unsafe { &*job };
        if catch_unwind(AssertUnwindSafe(|| f(w + 1))).is_err() {
            sh.panicked.store(true, Ordering::Release);
        }
        sh.done.fetch_add(1, Ordering::AcqRel);
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

    #[test]
    fn every_thread_runs_each_job_once_and_run_waits_for_all() {
        let pool = SpinPool::new(3, "t").unwrap();
        let seen = Mutex::new(Vec::new());
        for round in 0..2000u64 {
            pool.run(&|k| seen.lock().unwrap().push((round, k)));
            let mut v = std::mem::take(&mut *seen.lock().unwrap());
            v.sort();
            assert_eq!(v, vec![(round, 0), (round, 1), (round, 2)]);
            if round % 500 == 0 {
                // Long enough for the workers to park: they must still be woken.
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }

    #[test]
    fn a_worker_panic_is_raised_by_run_and_the_pool_goes_on() {
        let pool = SpinPool::new(2, "t").unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| pool.run(&|k| assert!(k == 0, "worker fails"))));
        assert!(r.is_err());
        let n = AtomicUsize::new(0);
        pool.run(&|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 2);
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
}
