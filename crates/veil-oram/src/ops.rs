//! What `veil oram serve` does about its operating limits: open file descriptors (every socket
//! the admission layer holds or parks is one) and storage outages (the log says which, and when
//! they end).

use crate::admit::AdmitConfig;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Descriptors beyond the sockets: the listener, the runtime's epoll and wake-up descriptors,
/// stdio, the data directory's region files and records (up to MAX_RUN_AHEAD + 2 regions, a
/// state record being replaced), the TLS files and the blocking threads' transient opens.
pub const RESERVE: u64 = 128;

/// What the descriptor limit allows: the soft limit to set and the admission budget to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NofilePlan {
    pub need: u64,
    pub soft: u64,
    /// Parked sockets allowed (the admission default, or less when the hard limit is short).
    pub park_budget: usize,
}

/// Sockets at once: authenticated connections, unauthenticated ones and parked ones.
pub fn sockets_needed(max_connections: usize, admit: &AdmitConfig) -> u64 {
    (max_connections + admit.queue + admit.budget + admit.park_budget) as u64
}

/// The soft limit to ask for (up to `hard`) for what the limits need; when even the hard limit
/// is short, the parked sockets, the one budget that is only a courtesy (a parked socket is
/// refused either way), shrink to fit.
pub fn plan_nofile(soft: u64, hard: u64, max_connections: usize, admit: &AdmitConfig) -> NofilePlan {
    let need = sockets_needed(max_connections, admit) + RESERVE;
    let new_soft = soft.max(need.min(hard));
    let fixed = (max_connections + admit.queue + admit.budget) as u64 + RESERVE;
    let park_budget = if new_soft >= need { admit.park_budget } else { new_soft.saturating_sub(fixed) as usize };
    NofilePlan { need, soft: new_soft, park_budget }
}

/// Raises this process's RLIMIT_NOFILE soft limit as `plan_nofile` says, shrinks `admit`'s
/// parked budget if it must, and returns the line to log.
pub fn fit_descriptors(max_connections: usize, admit: &mut AdmitConfig) -> String {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return "veil oram serve: descriptors: the limit is unreadable; admission limits kept".into();
    }
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    let plan = plan_nofile(soft, hard, max_connections, admit);
    let mut got = soft;
    if plan.soft > soft {
        let new = libc::rlimit { rlim_cur: plan.soft, rlim_max: hard };
        // SAFETY: setrlimit reads one rlimit; raising the soft limit up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            got = plan.soft;
        }
    }
    let plan = plan_nofile(got, got, max_connections, admit);
    let shrunk = plan.park_budget < admit.park_budget;
    admit.park_budget = plan.park_budget;
    let mut line = format!(
        "veil oram serve: descriptors: soft limit {soft} -> {got} (hard {hard}); the connection limits need {}",
        plan.need
    );
    if shrunk {
        line += &format!("; parked sockets limited to {} to fit", plan.park_budget);
    }
    line
}

/// Storage outages as the log tells them: one line when requests start failing on a storage
/// error (with its cause), one when a request succeeds again, never one per request.
#[derive(Default)]
pub struct Outage {
    down: AtomicBool,
    failed: AtomicU64,
}

impl Outage {
    /// A request failed on a storage error: the line to log if this starts an outage.
    pub fn failed(&self, cause: &str) -> Option<String> {
        self.failed.fetch_add(1, Ordering::Relaxed);
        (!self.down.swap(true, Ordering::SeqCst)).then(|| {
            format!(
                "veil oram serve: storage outage: {cause}; requests get a sealed storage-failure reply until \
                 it clears, and the server retries by itself"
            )
        })
    }

    /// A request succeeded: the line to log if this ends an outage.
    pub fn served(&self) -> Option<String> {
        self.down.swap(false, Ordering::SeqCst).then(|| {
            let n = self.failed.swap(0, Ordering::Relaxed);
            format!("veil oram serve: storage back: serving again ({n} requests failed during the outage)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_rises_to_what_the_limits_need() {
        let a = AdmitConfig::default();
        let need = (256 + a.queue + a.budget + a.park_budget) as u64 + RESERVE;
        let p = plan_nofile(1024, 1 << 20, 256, &a);
        assert_eq!((p.need, p.soft, p.park_budget), (need, need, a.park_budget));
        // already enough: left as it is
        assert_eq!(plan_nofile(1 << 16, 1 << 20, 256, &a).soft, 1 << 16);
    }

    #[test]
    fn a_short_hard_limit_shrinks_the_parked_budget_to_fit() {
        let a = AdmitConfig::default();
        let p = plan_nofile(1024, 1024, 256, &a);
        assert_eq!(p.soft, 1024);
        assert_eq!(p.park_budget as u64, 1024 - 256 - (a.queue + a.budget) as u64 - RESERVE);
        assert!(sockets_needed(256, &AdmitConfig { park_budget: p.park_budget, ..a }) + RESERVE <= 1024);
        assert_eq!(plan_nofile(100, 100, 256, &a).park_budget, 0);
    }

    #[test]
    fn this_process_gets_the_limit_it_needs() {
        let mut a = AdmitConfig::default();
        let line = fit_descriptors(256, &mut a);
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: as in fit_descriptors
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert!(sockets_needed(256, &a) + RESERVE <= lim.rlim_cur, "{line}");
        assert!(line.contains("descriptors: soft limit"), "{line}");
    }

    #[test]
    fn an_outage_is_told_once_at_its_start_and_once_at_its_end() {
        let o = Outage::default();
        assert_eq!(o.served(), None);
        let first = o.failed("Too many open files (os error 24)").unwrap();
        assert!(first.contains("storage outage: Too many open files") && !first.contains("modified"), "{first}");
        assert_eq!(o.failed("x"), None);
        assert!(o.served().unwrap().contains("2 requests failed"));
        assert_eq!(o.served(), None);
    }
}
