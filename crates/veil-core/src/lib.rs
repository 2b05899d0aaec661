//! Shared simulation primitives for Veil's Rust crates.
//!
//! Everything a simulator needs to be deterministic and to report statistics the same way:
//! seeded RNG streams ([`rng`]), statistics ([`stats`]) and simulated time plus a
//! deterministic event queue ([`time`]), and the process-wide stop flag that long loops poll
//! for Ctrl-C ([`interrupt`]). Plain Rust: no Python here.

pub mod interrupt;
pub mod rng;
pub mod stats;
pub mod time;

pub use rng::{RngStreams, StreamRng};
pub use stats::{Accumulator, Histogram};
pub use time::{Cycle, EventQueue};
