//! Errors: bad user input (a config that cannot be simulated) versus a run that went wrong
//! (deadlock, livelock, a broken conservation invariant).

use std::fmt;

/// A configuration that cannot be simulated; the message names the offending parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ConfigError {}

/// Why a simulation did not finish normally.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    Config(ConfigError),
    /// The watchdog fired: no flit moved for a long time while flits were in flight.
    Deadlock { cycle: u64, in_flight_flits: u64, idle_cycles: u64 },
    /// A packet stayed in the network far longer than allowed while others moved.
    Livelock { cycle: u64, packet_age: u64 },
    /// Packets, flits or credits were created or lost.
    Conservation(String),
    /// Stopped early because `veil_core::interrupt` was requested (Ctrl-C).
    Interrupted,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config(e) => write!(f, "{e}"),
            SimError::Deadlock { cycle, in_flight_flits, idle_cycles } => write!(
                f,
                "deadlock: no flit moved for {idle_cycles} cycles with {in_flight_flits} flits in flight (cycle {cycle})"
            ),
            SimError::Livelock { cycle, packet_age } => write!(
                f,
                "livelock: a packet has been in flight for {packet_age} cycles while the network keeps moving (cycle {cycle})"
            ),
            SimError::Conservation(m) => write!(f, "conservation check failed: {m}"),
            SimError::Interrupted => f.write_str("interrupted"),
        }
    }
}
impl std::error::Error for SimError {}

impl From<ConfigError> for SimError {
    fn from(e: ConfigError) -> Self {
        SimError::Config(e)
    }
}
