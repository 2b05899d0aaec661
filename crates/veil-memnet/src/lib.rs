//! memnet: a cycle-level simulator for memory-centric networks.
//!
//! Input-queued virtual-channel routers with credit flow control (BookSim2 `iq` timing),
//! mesh / torus / flattened butterfly / dragonfly / file topologies, DOR, minimal, Valiant and
//! UGAL routing, Bernoulli and batch injection with several traffic patterns. Components are
//! picked by name (see [`routing::ROUTING_NAMES`], [`traffic::PATTERN_NAMES`]).
//!
//! ```
//! let cfg = veil_memnet::SimConfig::booksim_mesh8x8(0.1);
//! let mut cfg = cfg;
//! cfg.sim.sample_period = 1000;
//! let r = veil_memnet::simulate(&cfg).unwrap();
//! assert!(!r.saturated && r.avg_packet_latency > 20.0);
//! ```

pub mod config;
pub mod error;
mod fifo;
pub mod keyx;
pub mod knuth;
pub mod memsys;
pub mod observe;
pub mod packet;
pub mod results;
pub mod router;
pub mod routing;
pub mod sim;
mod spin_pool;
pub mod topology;
pub mod traffic;

pub use config::{RouterConfig, SimConfig, SimControl, TopologyConfig, TrafficConfig};
pub use error::{ConfigError, SimError};
pub use results::SimResult;

/// Builds and runs one simulation.
pub fn simulate(cfg: &SimConfig) -> Result<SimResult, SimError> {
    let mut e = sim::Engine::new(cfg)?;
    e.run()
}

/// JSON in, JSON out (for the Python bindings). Errors keep their kind: a `ConfigError` is
/// bad input, anything else a failed run.
pub fn simulate_json(text: &str) -> Result<String, SimError> {
    let cfg = SimConfig::from_json(text)?;
    let r = simulate(&cfg)?;
    Ok(serde_json::to_string(&r).expect("results serialise"))
}

/// The default (booksim_compat) configuration as JSON.
pub fn default_config_json() -> String {
    serde_json::to_string(&SimConfig::default()).expect("config serialises")
}

/// Names the registry exposes: (kind, name, doc).
pub fn component_names() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    for (n, d) in routing::ROUTING_NAMES {
        v.push(("routing", *n, *d));
    }
    for (n, d) in traffic::PATTERN_NAMES {
        v.push(("traffic", *n, *d));
    }
    for (n, d) in memsys::encryption::ENCRYPTION_NAMES {
        v.push(("encryption", *n, *d));
    }
    for (n, d) in memsys::injection::INJECTION_NAMES {
        v.push(("injection", *n, *d));
    }
    for (n, d) in memsys::workload::WORKLOAD_NAMES {
        v.push(("workload", *n, *d));
    }
    for (n, d) in [
        ("mesh", "k-ary n-mesh, one terminal per router"),
        ("torus", "k-ary n-cube with wrap-around links"),
        ("flatfly", "2D flattened butterfly, c terminals per router"),
        ("dragonfly", "dragonfly (p, a, h, g), balanced or arbitrary g"),
        ("file", "any topology from an adjacency-list file"),
    ] {
        v.push(("topology", n, d));
    }
    v
}
