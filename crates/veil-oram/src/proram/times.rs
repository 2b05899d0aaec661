//! The history of shuffle times the request clock follows.

#[allow(unused_imports)]
use super::*;

/// How many recent steady-state shuffle times the request clock looks at, which quantile of
/// them it follows, and how far one change of the period may go. Chosen by replaying shuffle
/// times recorded on the 2-core VM this was built on (271-721 ms for the same 1 GiB shuffle
/// within a minute) through the pacing rules: against the last three's median and unbounded
/// steps, 8-epoch windows with p99/p50 <= 1.2 went from about half to 95%, at the same mean
/// throughput. A step is the p99/p50 of any window that spans it, so against a target of 1.1
/// one step is at most 8% (it was 15%, and 10% or more when the shuffle fell behind).
pub(super) const RECENT_SHUFFLES: usize = 16;
pub(super) const PERIOD_QUANTILE: f64 = 0.5;
pub(super) const MAX_STEP: f64 = 0.08;

/// Completed shuffles: how many, their total time, and the latest steady-state ones' times
/// (bounded, so a long-running server does not grow a list).
#[derive(Clone, Debug, Default)]
pub struct ShuffleTimes {
    pub completed: u64,
    pub total_secs: f64,
    /// Seconds, oldest first; the first shuffles after create or open (which also run stage 1
    /// or write a region for the first time) excluded.
    pub recent_steady: std::collections::VecDeque<f64>,
}

impl ShuffleTimes {
    pub(super) fn record(&mut self, secs: f64, steady: bool) {
        self.completed += 1;
        self.total_secs += secs;
        if steady {
            if self.recent_steady.len() == RECENT_SHUFFLES {
                self.recent_steady.pop_front();
            }
            self.recent_steady.push_back(secs);
        }
    }

    /// The q-quantile (nearest rank) of the recent steady-state times; None before the first.
    pub fn recent_quantile(&self, q: f64) -> Option<f64> {
        let mut v: Vec<f64> = self.recent_steady.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let k = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
        v.get(k - 1).copied()
    }
}
