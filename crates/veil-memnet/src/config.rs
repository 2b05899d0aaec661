//! Simulation configuration: serde structs with BookSim2-compatible defaults.
//!
//! Every field has a default, so a config names only what it changes. The defaults are the
//! `booksim_compat` preset: BookSim2's iq router with lookahead routing (routing_delay 0),
//! one-cycle VC and switch allocation, a one-cycle crossbar, credit_delay 2 and BookSim's
//! warm-up / sample-period / convergence rules.

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Which network to build. Latencies are in cycles, `width` in flits per cycle is expressed
/// as its inverse, the serialisation time of one flit (`flit_cycles`, 1 = full width).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologyConfig {
    /// k-ary n-mesh, one terminal per router.
    Mesh {
        k: usize,
        #[serde(default = "two")]
        n: usize,
        #[serde(default = "one")]
        latency: u32,
        #[serde(default = "one")]
        flit_cycles: u32,
    },
    /// k-ary n-cube (torus), one terminal per router.
    Torus {
        k: usize,
        #[serde(default = "two")]
        n: usize,
        #[serde(default = "one")]
        latency: u32,
        #[serde(default = "one")]
        flit_cycles: u32,
    },
    /// 2D flattened butterfly: k x k routers, each fully connected along its row and its
    /// column, c terminals per router.
    Flatfly {
        k: usize,
        #[serde(default = "one_usize")]
        c: usize,
        #[serde(default = "one")]
        latency: u32,
        #[serde(default = "one")]
        flit_cycles: u32,
        /// Like BookSim2's `use_noc_latency`: routers sit on a k x k grid and a link's latency
        /// is `latency` times the number of router pitches it spans (1..k-1), not `latency`.
        #[serde(default)]
        noc_latency: bool,
    },
    /// Dragonfly: p terminals and h global links per router, a routers per group (fully
    /// connected locally), g groups (default a*h+1, the balanced maximum).
    Dragonfly {
        p: usize,
        a: usize,
        h: usize,
        #[serde(default)]
        g: Option<usize>,
        #[serde(default = "one")]
        local_latency: u32,
        #[serde(default = "one")]
        global_latency: u32,
        #[serde(default = "one")]
        local_flit_cycles: u32,
        #[serde(default = "one")]
        global_flit_cycles: u32,
    },
    /// Any topology from an adjacency list (see `topology::file` for the format). Either
    /// `path` or `text` is given.
    File {
        #[serde(default)]
        path: Option<String>,
        #[serde(default)]
        text: Option<String>,
    },
}

fn one() -> u32 {
    1
}
fn one_usize() -> usize {
    1
}
fn two() -> usize {
    2
}

/// Router micro-architecture (BookSim names in brackets).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RouterConfig {
    /// Virtual channels per port [num_vcs].
    pub num_vcs: usize,
    /// Flit buffers per VC [vc_buf_size].
    pub vc_buf_size: usize,
    /// Route computation stages; 0 = lookahead routing [routing_delay].
    pub routing_delay: u32,
    /// VC allocation stages (>= 1) [vc_alloc_delay].
    pub vc_alloc_delay: u32,
    /// Switch allocation stages (>= 1) [sw_alloc_delay].
    pub sw_alloc_delay: u32,
    /// Switch traversal stages (>= 1) [st_prepare_delay + st_final_delay].
    pub st_delay: u32,
    /// Cycles between a credit's arrival and its use [credit_delay].
    pub credit_delay: u32,
    /// Router internal steps per network cycle [internal_speedup].
    pub internal_speedup: f64,
    /// Keep an output VC reserved until the credit of its tail flit returns.
    pub wait_for_tail_credit: bool,
    /// Latency of injection and ejection channels (cycles).
    pub terminal_latency: u32,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            num_vcs: 4,
            vc_buf_size: 8,
            routing_delay: 0,
            vc_alloc_delay: 1,
            sw_alloc_delay: 1,
            st_delay: 1,
            credit_delay: 2,
            internal_speedup: 1.0,
            wait_for_tail_credit: false,
            terminal_latency: 1,
        }
    }
}

/// Offered traffic.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TrafficConfig {
    /// Destination pattern: uniform, transpose, bitcomp, randperm, hotspot, neighbor.
    pub pattern: String,
    /// Injection process: bernoulli or batch.
    pub injection: String,
    /// Offered load in flits/node/cycle (bernoulli).
    pub rate: f64,
    /// Packet length in flits (requests when request_reply).
    pub packet_size: usize,
    /// uniform: allow a node to send to itself (BookSim does).
    pub include_self: bool,
    /// hotspot: the hot nodes and the fraction of packets sent to one of them.
    pub hotspots: Vec<usize>,
    pub hotspot_fraction: f64,
    /// shift: destination offset.
    pub shift: usize,
    /// request-reply: every request (packet_size flits) is answered by a reply of
    /// `reply_size` flits sent from its destination back to its source; requests and replies
    /// use disjoint VC sets (two message classes) so the protocol cannot deadlock.
    pub request_reply: bool,
    pub reply_size: usize,
    /// batch: packets per node; the run ends when all have been delivered.
    pub batch_size: usize,
    /// batch / request-reply: most requests a node may have outstanding (0 = unlimited).
    pub max_outstanding: usize,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        Self {
            pattern: "uniform".into(),
            injection: "bernoulli".into(),
            rate: 0.1,
            packet_size: 4,
            include_self: true,
            hotspots: vec![0],
            hotspot_fraction: 0.2,
            shift: 1,
            request_reply: false,
            reply_size: 4,
            batch_size: 100,
            max_outstanding: 0,
        }
    }
}

/// Run control: BookSim's warm-up / sample-period / convergence loop, or fixed phases.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SimControl {
    /// "booksim": sample periods with BookSim's convergence rule; "fixed": warmup_cycles then
    /// measure_cycles, then drain.
    pub mode: String,
    pub sample_period: u64,
    pub warmup_periods: u32,
    pub max_samples: u32,
    /// Average latency (cycles) above which the network is declared saturated.
    pub latency_threshold: f64,
    /// Relative change of latency / throughput between periods that counts as converged.
    pub stopping_threshold: f64,
    pub acc_stopping_threshold: f64,
    pub warmup_cycles: u64,
    pub measure_cycles: u64,
    /// Watchdog: cycles without any flit moving while flits are in flight => deadlock.
    pub watchdog_cycles: u64,
    /// Watchdog: a packet older than this many cycles while the network still moves =>
    /// livelock / starvation (0 disables).
    pub max_packet_age: u64,
    /// Drain limit: give up draining after this many cycles (reported, not a hang).
    pub max_drain_cycles: u64,
}

impl Default for SimControl {
    fn default() -> Self {
        Self {
            mode: "booksim".into(),
            sample_period: 10_000,
            warmup_periods: 3,
            max_samples: 10,
            latency_threshold: 500.0,
            stopping_threshold: 0.05,
            acc_stopping_threshold: 0.05,
            warmup_cycles: 10_000,
            measure_cycles: 50_000,
            watchdog_cycles: 20_000,
            max_packet_age: 0,
            max_drain_cycles: 1_000_000,
        }
    }
}

/// A whole simulation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    pub topology: TopologyConfig,
    /// Routing function: dor, min, valiant, ugal.
    pub routing: String,
    pub router: RouterConfig,
    pub traffic: TrafficConfig,
    pub sim: SimControl,
    pub seed: u64,
    /// Keep the latency histogram buckets in the result.
    pub histogram: bool,
    /// Report every channel's utilisation (`channels` in the result).
    pub channel_detail: bool,
    /// Separate VC classes as the routing function's deadlock-freedom argument needs. Off:
    /// every VC is usable on every hop (to demonstrate deadlock; the watchdog reports it).
    pub vc_classes: bool,
    /// Random numbers: "streams" (independent per-node streams from veil-core) or "booksim"
    /// (BookSim2's global Knuth generators drawn in BookSim2's order: with the booksim
    /// presets a run reproduces BookSim2 with the same seed draw for draw).
    pub rng: String,
    /// Threads one simulation steps its routers on (None: every core). Results do not
    /// depend on it; small networks step serially whatever it says (see `router`).
    pub threads: Option<usize>,
}

/// The most threads a run may ask for.
pub const MAX_THREADS: usize = 1024;

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            topology: TopologyConfig::Mesh { k: 8, n: 2, latency: 1, flit_cycles: 1 },
            routing: "dor".into(),
            router: RouterConfig::default(),
            traffic: TrafficConfig::default(),
            sim: SimControl::default(),
            seed: 1,
            histogram: false,
            channel_detail: false,
            vc_classes: true,
            rng: "streams".into(),
            threads: None,
        }
    }
}

impl SimConfig {
    /// The exact settings of `shared/reference/booksim/mesh8x8.csv`.
    pub fn booksim_mesh8x8(rate: f64) -> Self {
        let mut c = Self::default();
        c.traffic.rate = rate;
        c.rng = "booksim".into();
        c
    }

    /// The exact settings of `shared/reference/booksim/dragonfly72.csv` (BookSim
    /// `dragonflynew k=2` built with DRAGON_LATENCY: local 10, global 100 cycles).
    pub fn booksim_dragonfly72(rate: f64) -> Self {
        let mut c = Self::default();
        c.topology = TopologyConfig::Dragonfly {
            p: 2,
            a: 4,
            h: 2,
            g: None,
            local_latency: 10,
            global_latency: 100,
            local_flit_cycles: 1,
            global_flit_cycles: 1,
        };
        c.routing = "min".into();
        c.router.num_vcs = 2;
        c.router.vc_buf_size = 256;
        c.router.internal_speedup = 2.0;
        c.traffic.rate = rate;
        c.rng = "booksim".into();
        c
    }

    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError(format!("memnet config: {e}")))
    }

    /// Checks parameters that serde cannot: impossible values name the field.
    /// The threads a run steps its routers on.
    pub fn threads(&self) -> usize {
        self.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let r = &self.router;
        let bad = |m: String| Err(ConfigError(m));
        if let Some(n) = self.threads {
            if n == 0 || n > MAX_THREADS {
                return bad(format!("threads: must be in 1..={MAX_THREADS} (got {n})"));
            }
        }
        if r.num_vcs == 0 {
            return bad("router.num_vcs: must be at least 1 (got 0)".into());
        }
        if r.num_vcs > 64 {
            return bad(format!("router.num_vcs: at most 64 supported (got {})", r.num_vcs));
        }
        if r.vc_buf_size == 0 || r.vc_buf_size > 65_535 {
            return bad(format!("router.vc_buf_size: must be in 1..=65535 (got {})", r.vc_buf_size));
        }
        if r.vc_alloc_delay == 0 || r.sw_alloc_delay == 0 || r.st_delay == 0 {
            return bad("router: vc_alloc_delay, sw_alloc_delay and st_delay must be >= 1".into());
        }
        if r.terminal_latency == 0 {
            return bad("router.terminal_latency: must be >= 1".into());
        }
        if !(r.internal_speedup >= 1.0 && r.internal_speedup <= 16.0) {
            return bad(format!("router.internal_speedup: must be in [1, 16] (got {})", r.internal_speedup));
        }
        let t = &self.traffic;
        if t.packet_size == 0 || t.packet_size > 4096 {
            return bad(format!("traffic.packet_size: must be in 1..=4096 (got {})", t.packet_size));
        }
        if t.request_reply && (t.reply_size == 0 || t.reply_size > 4096) {
            return bad(format!("traffic.reply_size: must be in 1..=4096 (got {})", t.reply_size));
        }
        match t.injection.as_str() {
            "bernoulli" => {
                let max = t.packet_size as f64;
                if !(t.rate >= 0.0 && t.rate <= max) || !t.rate.is_finite() {
                    return bad(format!("traffic.rate: must be in [0, packet_size] flits/node/cycle (got {})", t.rate));
                }
            }
            "batch" => {
                if t.batch_size == 0 {
                    return bad("traffic.batch_size: must be >= 1".into());
                }
            }
            other => return bad(format!("traffic.injection: unknown process '{other}' (bernoulli, batch)")),
        }
        if !(0.0..=1.0).contains(&t.hotspot_fraction) {
            return bad(format!("traffic.hotspot_fraction: must be in [0, 1] (got {})", t.hotspot_fraction));
        }
        let s = &self.sim;
        match s.mode.as_str() {
            "booksim" => {
                if s.sample_period == 0 || s.max_samples == 0 {
                    return bad("sim: sample_period and max_samples must be >= 1".into());
                }
            }
            "fixed" => {
                if s.measure_cycles == 0 {
                    return bad("sim.measure_cycles: must be >= 1".into());
                }
            }
            other => return bad(format!("sim.mode: unknown mode '{other}' (booksim, fixed)")),
        }
        if self.rng != "streams" && self.rng != "booksim" {
            return bad(format!("rng: unknown generator '{}' (streams, booksim)", self.rng));
        }
        if s.watchdog_cycles == 0 {
            return bad("sim.watchdog_cycles: must be >= 1".into());
        }
        Ok(())
    }
}
