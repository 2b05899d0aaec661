//! The plan of a sampled run (`crate::sampled`): how the timed records are cut into units and
//! where each unit's window lies. A run's input (`crate::input::Run`) carries it; the sampled
//! simulation reads it.

use serde::{Deserialize, Serialize};
use veil_core::rng::splitmix64;

use crate::error::{Error, Result};

/// Most worker threads a run may ask for.
pub const MAX_THREADS: usize = 1024;
/// Fewest windows a run may leave: the caller's regression needs residual degrees of freedom
/// for its variance.
pub const MIN_WINDOWS: u64 = 8;

/// How the timed records are sampled.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// Records timed in detail per window, its warm-up included.
    pub window: u64,
    /// The first records of each window: timed, not counted.
    pub warmup: u64,
    /// Records per sampling unit at least (one window each); the timed records are cut into
    /// `records / interval` equal units.
    pub interval: u64,
    /// Worker threads timing windows.
    pub threads: usize,
    /// Only windows `first..last` are timed (and returned): a share of the work for one task
    /// of a cluster. `last` None: to the end.
    #[serde(default)]
    pub first: usize,
    /// Seeds each window's place in its unit.
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub last: Option<usize>,
}

impl Sampling {
    pub fn validate(&self) -> Result<()> {
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(Error::config(format!(
                "threads: must be 1 to {MAX_THREADS}, got {}",
                self.threads
            )));
        }
        if self.window <= self.warmup {
            return Err(Error::config(format!(
                "sample_window: a window of {} records must be longer than its warm-up (sample_warmup = {})",
                self.window, self.warmup
            )));
        }
        if self.interval < self.window {
            return Err(Error::config(format!(
                "sample_interval: {} records is shorter than a window (sample_window = {})",
                self.interval, self.window
            )));
        }
        Ok(())
    }

    /// Where each window's measured records begin, counted from the first timed record, for
    /// `records` timed records: unit k is [k n / u, (k+1) n / u) of u = n / interval units, and
    /// its measured records begin anywhere in it, drawn uniformly from `seed` (stratified random
    /// sampling: a fixed offset, as in plain systematic sampling, can fall in step with a loop of
    /// the program and put every window in the same phase). A window's warm-up lies before its
    /// measured records, in the unit before if need be, and its measured records may run into the
    /// next unit: so every timed record is measured with the same probability (measured / unit
    /// length; the last unit's draw stops where its measured records would pass the region's end).
    /// Keeping whole windows inside their units instead never measured the first `warmup`
    /// records of any unit, and weighting records unequally put the estimate 0.3% off the full run
    /// on a traced program. At least [`MIN_WINDOWS`], else a one-line error.
    pub fn plan(&self, records: u64) -> Result<Vec<u64>> {
        self.validate()?;
        let units = records / self.interval;
        if units < MIN_WINDOWS {
            return Err(Error::config(format!(
                "sample_interval: {records} timed records at one window per {} records leave {units} window(s); \
                 the estimate needs at least {MIN_WINDOWS}",
                self.interval
            )));
        }
        let measured = self.window - self.warmup;
        Ok((0..units)
            .map(|k| {
                let (a, b) = (k * records / units, (k + 1) * records / units);
                let b = b.min(records - measured + 1);
                a + splitmix64(self.seed ^ splitmix64(k)) % (b - a)
            })
            .collect())
    }
}
