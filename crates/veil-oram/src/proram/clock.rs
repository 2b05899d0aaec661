//! Holding a reply until its due time on the request clock, precisely and without burning the
//! core the shuffle needs.
//!
//! A sleeping thread wakes late by the timer slack (50 us by default on Linux) plus however
//! long it waits for a core that the shuffle keeps busy; the reply's latency would then carry
//! the scheduler's noise, i.e. p99/p50. So while it holds a reply, the serving thread asks for
//! no timer slack and, on kernels with the EEVDF scheduler (Linux 6.12+), for a short time
//! slice: a waking thread with a shorter slice than the running one preempts it at once
//! (`PREEMPT_SHORT`), while its share of the CPU stays what its weight says. Both are put back
//! when the reply goes, so the caller's thread (a Python thread that goes on to run other
//! work, a benchmark's baseline included) keeps its own scheduling. The rest of the wait is a
//! spin, kept well inside that short slice: a thread that spins past its slice is put behind
//! the shuffle's threads until they have run theirs.

use std::time::{Duration, Instant};

/// The most a held reply spins before its due time, in ns: a margin for the wake-up itself
/// (tens of us with the short slice). It must stay well inside `REQUEST_SLICE_NS`. At 200 us
/// (twice the slice) the spin outlived the slice, the scheduler put the thread behind the two
/// shuffle threads, and 3% of 256 KB replies went out 0.3-3.9 ms late: p99/p50 1.17-1.63 on a
/// quiet 2-core VM. At 30 us it was 1.01 in four runs, and 1.01-1.02 with no spin at all.
const SPIN_MAX_NS: u64 = 30_000;

/// The time slice asked for while a reply is held, in ns (EEVDF's minimum is 0.1 ms; the
/// default is 0.75-3 ms, which is how late a woken reply could otherwise be).
const REQUEST_SLICE_NS: u64 = 100_000;

const _: () = assert!(2 * SPIN_MAX_NS <= REQUEST_SLICE_NS, "a held reply must not spin past its slice");

/// Sleeps until `due`, spinning the last part; `period_ns` is the request clock's period.
/// Public for measurement: the clock alone, without an engine behind it, is the control that
/// tells a loaded machine's wake-up noise from the engine's own (`examples/spread_profile.rs`).
pub fn sleep_until(due: Instant, period_ns: u64) {
    let _tuned = Tuned::enter();
    // at most an eighth of a short period (small blocks), where the spin would take the core
    // from the shuffle
    let spin = Duration::from_nanos(SPIN_MAX_NS.min(period_ns / 8));
    let now = Instant::now();
    if due > now + spin {
        std::thread::sleep(due - now - spin);
    }
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}

/// No timer slack and a short EEVDF slice (at the thread's nice value) for as long as it lives;
/// the slack and the default slice come back when it is dropped. Failures are ignored: older
/// kernels keep their slice, and the spin still holds.
struct Tuned {
    #[cfg(target_os = "linux")]
    slack: libc::c_int,
}

impl Tuned {
    fn enter() -> Self {
        #[cfg(target_os = "linux")]
        // SAFETY: prctl(PR_GET/SET_TIMERSLACK) on the calling thread.
        unsafe {
            let slack = libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0);
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            set_slice(REQUEST_SLICE_NS);
            Self { slack }
        }
        #[cfg(not(target_os = "linux"))]
        Self {}
    }
}

impl Drop for Tuned {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: as in `enter`.
        unsafe {
            if self.slack > 0 {
                libc::prctl(libc::PR_SET_TIMERSLACK, self.slack as libc::c_ulong, 0, 0, 0);
            }
            // 0: the kernel's default slice again
            set_slice(0);
        }
    }
}

/// Sets the calling thread's EEVDF slice (0: the default), keeping its policy and nice value.
#[cfg(target_os = "linux")]
unsafe fn set_slice(ns: u64) {
    let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: ns,
        deadline: 0,
        period: 0,
    };
    libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0);
}

/// `struct sched_attr`, first version (48 bytes); for SCHED_OTHER `runtime` is the slice.
#[cfg(target_os = "linux")]
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// The slice thread `tid` (0: this one) runs with, in ns, as the kernel reports it (None where
/// it cannot).
#[cfg(all(test, target_os = "linux"))]
fn slice_ns(tid: libc::pid_t) -> Option<u64> {
    let mut attr = SchedAttr { size: 0, policy: 0, flags: 0, nice: 0, priority: 0, runtime: 0, deadline: 0, period: 0 };
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: sched_getattr writes at most `size` bytes into `attr`.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut attr as *mut SchedAttr, size, 0) };
    (r == 0).then_some(attr.runtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reply is never early, and a held reply comes close to its due time.
    #[test]
    fn sleeps_until_due_and_not_before() {
        for period_us in [300u64, 5000] {
            let due = Instant::now() + Duration::from_micros(period_us);
            sleep_until(due, period_us * 1000);
            let late = Instant::now() - due;
            assert!(Instant::now() >= due);
            assert!(late < Duration::from_millis(50), "{late:?} late");
        }
    }

    /// Where the kernel reports slices (EEVDF, Linux 6.12+), a thread holding a reply runs
    /// with the short slice, and afterwards with the slice, timer slack and nice value it had.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_held_reply_runs_with_a_short_slice_then_gives_it_back() {
        let (tx, rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            // SAFETY: gettid, getpriority and prctl(PR_GET_TIMERSLACK) on the calling thread
            let (tid, nice0, slack0) = unsafe {
                (libc::gettid(), libc::getpriority(libc::PRIO_PROCESS, 0), libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0))
            };
            let before = slice_ns(0);
            tx.send(tid).unwrap();
            sleep_until(Instant::now() + Duration::from_millis(300), 300_000_000);
            // SAFETY: as above
            let (nice1, slack1) = unsafe { (libc::getpriority(libc::PRIO_PROCESS, 0), libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0)) };
            (before, slice_ns(0), nice0 == nice1, slack0 == slack1)
        });
        let tid = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let during = slice_ns(tid);
        let (before, after, same_nice, same_slack) = holder.join().unwrap();
        assert!(same_nice && same_slack);
        // kernels before EEVDF's custom slices report no slice (0) for SCHED_OTHER
        if let (Some(b), Some(d), Some(a)) = (before, during, after) {
            if b != 0 {
                assert_eq!(d, REQUEST_SLICE_NS, "slice while holding a reply");
                assert_eq!(a, b, "slice afterwards");
            }
        }
    }
}
