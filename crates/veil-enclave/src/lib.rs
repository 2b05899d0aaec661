//! Veil `enclave`: a discrete-event model of a tiled secure multicore running a web-server
//! workload under five execution models (baseline, exit-based, exitless, and Security Service
//! Engines with and without the L2 area penalty) and two exit policies (SGX-like: every system
//! call exits; SEV-like: only device calls exit). Reproduces Nye and Khan, "SSE: Security
//! Service Engines to Accelerate Enclave Performance in Secure Multicore Processors", IEEE CAL
//! 2022, Fig. 2 and Fig. 3, from the mechanisms: exits, timers, polling, swaps and caches.

pub mod cache;
pub mod config;
pub mod noc;
pub mod place;
pub mod sim;
pub mod workload;

pub use config::{Config, Model, Placement, Policy};
pub use sim::{simulate, simulate_many, SimResult, CAT_NAMES};

/// Parses a JSON config (missing fields take their defaults) and runs it; errors are one line.
pub fn simulate_json(json: &str) -> Result<String, String> {
    let cfg: Config = serde_json::from_str(json).map_err(|e| format!("bad enclave config: {e}"))?;
    let r = simulate(&cfg)?;
    serde_json::to_string(&r).map_err(|e| e.to_string())
}

/// Runs a JSON list of configs in parallel; returns a JSON list of results, or the first error.
pub fn simulate_many_json(json: &str) -> Result<String, String> {
    let cfgs: Vec<Config> = serde_json::from_str(json).map_err(|e| format!("bad enclave config list: {e}"))?;
    for (i, c) in cfgs.iter().enumerate() {
        c.validate().map_err(|e| format!("config {i}: {e}"))?;
    }
    let rs: Result<Vec<SimResult>, String> = simulate_many(&cfgs).into_iter().collect();
    serde_json::to_string(&rs?).map_err(|e| e.to_string())
}

/// The default configuration as JSON.
pub fn default_config_json() -> String {
    serde_json::to_string(&Config::default()).expect("config serialises")
}
