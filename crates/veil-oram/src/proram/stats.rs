//! What `ProOram::stats` reports.

use super::Geometry;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProOramStats {
    pub epoch: u64,
    pub region: u32,
    pub used_this_epoch: u64,
    pub cached_blocks: u64,
    /// The most blocks the access component's cache has held at once so far.
    pub peak_cached_blocks: u64,
    /// Block-sized buffers the trusted side has allocated so far (they only grow, so this is
    /// their peak): the cache's, the slot just opened, and the shuffle's group buffers.
    pub private_block_bytes: u64,
    /// The served epoch's position map, also kept privately.
    pub position_map_bytes: u64,
    pub key_fingerprint: u64,
    pub geometry: Geometry,
    /// The request clock's period this epoch (followed only with `pace`).
    pub period_ms: f64,
    /// Epochs already built after the served one (the shuffle runs ahead).
    pub epochs_ready: u64,
    /// Hand-overs so far that had to wait for the shuffle: the epochs built ahead were used up.
    pub late_handovers: u64,
    /// Shuffles started that were cache (K-oblivious) shuffles.
    #[serde(default)]
    pub cache_shuffles: u64,
    /// Epochs between the latest cache shuffle's source and the epoch it built (0: none yet):
    /// run_ahead, every epoch region in use at its start, so that run_ahead - 2 epochs are
    /// built ahead while it runs (the source holds the region of one more).
    #[serde(default)]
    pub cache_chain: u64,
}
