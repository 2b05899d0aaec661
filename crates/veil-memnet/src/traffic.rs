//! Destination patterns. Bit patterns (transpose, bitcomp) need a power-of-two node count.

use rand::seq::SliceRandom;
use rand::Rng;
use veil_core::StreamRng;

use crate::config::TrafficConfig;
use crate::error::ConfigError;

pub const PATTERN_NAMES: &[(&str, &str)] = &[
    ("uniform", "uniform random destination (self included by default, as BookSim)"),
    ("transpose", "bit transpose: the two halves of the node id's bits swap"),
    ("bitcomp", "bit complement: every bit of the node id flips"),
    ("randperm", "a random permutation of the nodes, fixed by the seed"),
    ("hotspot", "a fraction of packets go to one of the hot nodes, the rest uniform"),
    ("neighbor", "node i sends to node i+1 (mod N)"),
    ("shift", "node i sends to node i+shift (mod N); shift = one dragonfly group is adversarial for minimal routing"),
];

pub enum Pattern {
    Uniform { nodes: u32, include_self: bool },
    Transpose { bits: u32 },
    BitComp { mask: u32 },
    Perm(Vec<u32>),
    Hotspot { nodes: u32, hot: Vec<u32>, fraction: f64 },
    Shift { nodes: u32, by: u32 },
}

impl Pattern {
    pub fn new(cfg: &TrafficConfig, nodes: usize, perm_rng: &mut StreamRng) -> Result<Self, ConfigError> {
        let pow2 = nodes.is_power_of_two();
        let bits = nodes.trailing_zeros();
        Ok(match cfg.pattern.as_str() {
            "uniform" => {
                if nodes < 2 && !cfg.include_self {
                    return Err(ConfigError("traffic.include_self: a one-node network needs include_self".into()));
                }
                Pattern::Uniform { nodes: nodes as u32, include_self: cfg.include_self }
            }
            "transpose" => {
                if !pow2 || bits % 2 != 0 {
                    return Err(ConfigError(format!("traffic.pattern: transpose needs 4^m nodes (got {nodes})")));
                }
                Pattern::Transpose { bits }
            }
            "bitcomp" => {
                if !pow2 {
                    return Err(ConfigError(format!("traffic.pattern: bitcomp needs a power-of-two node count (got {nodes})")));
                }
                Pattern::BitComp { mask: (nodes - 1) as u32 }
            }
            "randperm" => {
                let mut v: Vec<u32> = (0..nodes as u32).collect();
                v.shuffle(perm_rng);
                Pattern::Perm(v)
            }
            "hotspot" => {
                if cfg.hotspots.is_empty() {
                    return Err(ConfigError("traffic.hotspots: at least one hot node needed".into()));
                }
                if let Some(h) = cfg.hotspots.iter().find(|&&h| h >= nodes) {
                    return Err(ConfigError(format!("traffic.hotspots: node {h} does not exist ({nodes} nodes)")));
                }
                Pattern::Hotspot {
                    nodes: nodes as u32,
                    hot: cfg.hotspots.iter().map(|&h| h as u32).collect(),
                    fraction: cfg.hotspot_fraction,
                }
            }
            "neighbor" => Pattern::Shift { nodes: nodes as u32, by: 1 },
            "shift" => {
                // A shift of N or more is the same pattern as shift mod N: almost surely a typo.
                if cfg.shift >= nodes {
                    return Err(ConfigError(format!(
                        "traffic.shift: {} must be below the number of nodes ({nodes}): destination = source + shift (mod N)",
                        cfg.shift
                    )));
                }
                Pattern::Shift { nodes: nodes as u32, by: cfg.shift as u32 }
            }
            other => {
                return Err(ConfigError(format!(
                    "traffic.pattern: unknown pattern '{other}' (known: {})",
                    PATTERN_NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                )))
            }
        })
    }

    #[inline]
    pub fn dest(&self, src: u32, rng: &mut StreamRng) -> u32 {
        match self {
            Pattern::Uniform { nodes, include_self } => {
                if *include_self {
                    rng.gen_range(0..*nodes)
                } else {
                    let d = rng.gen_range(0..*nodes - 1);
                    if d >= src { d + 1 } else { d }
                }
            }
            Pattern::Transpose { bits } => {
                let half = bits / 2;
                let mask = (1u32 << bits) - 1;
                ((src >> half) | (src << half)) & mask
            }
            Pattern::BitComp { mask } => !src & mask,
            Pattern::Perm(v) => v[src as usize],
            Pattern::Hotspot { nodes, hot, fraction } => {
                if rng.gen::<f64>() < *fraction {
                    hot[rng.gen_range(0..hot.len())]
                } else {
                    rng.gen_range(0..*nodes)
                }
            }
            Pattern::Shift { nodes, by } => (src + by) % nodes,
        }
    }
}
