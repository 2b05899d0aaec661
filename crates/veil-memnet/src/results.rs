//! What a simulation reports.

use serde::{Deserialize, Serialize};

/// Utilisation (flits/cycle) over a set of channels.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ChannelUse {
    pub count: usize,
    pub mean: f64,
    pub max: f64,
}

impl ChannelUse {
    pub fn add(&mut self, u: f64) {
        self.mean = (self.mean * self.count as f64 + u) / (self.count + 1) as f64;
        self.count += 1;
        self.max = self.max.max(u);
    }
}

/// Utilisation of one channel (with `channel_detail`): injection channels are numbered by
/// node, all others by (router, output port).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ChannelStat {
    pub kind: String,
    pub router_or_node: u32,
    pub port: u16,
    pub flits_per_cycle: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SimResult {
    /// The run hit the latency threshold (or never converged / drained): the offered load is
    /// beyond saturation and the latency figures are not meaningful.
    pub saturated: bool,
    pub offered_flits_per_node_cycle: f64,
    pub injected_flits_per_node_cycle: f64,
    pub accepted_flits_per_node_cycle: f64,
    /// Creation (source queue entry) to tail ejection.
    pub avg_packet_latency: f64,
    /// Head injection to tail ejection.
    pub avg_network_latency: f64,
    pub p50_packet_latency: f64,
    pub p99_packet_latency: f64,
    pub max_packet_latency: f64,
    /// Routers traversed.
    pub avg_hops: f64,
    pub packets_measured: u64,
    /// Every packet delivered in the run (warm-up and drain included).
    pub packets_delivered: u64,
    /// (lower bound, width, count) of non-empty latency buckets, when requested.
    pub latency_histogram: Vec<(u64, u64, u64)>,
    pub injection_channels: ChannelUse,
    pub ejection_channels: ChannelUse,
    /// Router-to-router channels (all of them on mesh/torus/flatfly; local ones on dragonfly).
    pub network_channels: ChannelUse,
    pub global_channels: ChannelUse,
    /// Every channel's utilisation, when `channel_detail` is set.
    pub channels: Vec<ChannelStat>,
    /// Batch mode: cycles until the last packet was delivered.
    pub batch_cycles: Option<u64>,
    pub cycles_simulated: u64,
    pub wall_seconds: f64,
    /// Threads the routers stepped on (a fact of the run, like its wall time: the other
    /// fields do not depend on it).
    pub threads: usize,
    /// Packets, flits and credits balanced after the final drain.
    pub conservation_ok: bool,
    pub nodes: usize,
    pub routers: usize,
}
