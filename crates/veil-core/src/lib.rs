//! Shared simulation primitives for Veil's Rust crates.
//!
//! Everything a simulator needs to be deterministic and to report statistics the same way:
//! seeded RNG streams ([`rng`]), statistics ([`stats`]) and simulated time plus a
//! deterministic event queue ([`time`]), a bandwidth-limited server for out-of-order
//! arrivals ([`queue`]), and the process-wide stop flag that long loops poll
//! for Ctrl-C ([`interrupt`]) with the progress they report ([`progress`]). Plain Rust: no Python here.

pub mod interrupt;
pub mod progress;
pub mod queue;
pub mod rng;
pub mod stats;
pub mod time;

pub use queue::{SlotQueue, SlotQueues};
pub use rng::{RngStreams, StreamRng};
pub use stats::{Accumulator, Histogram};
pub use time::{Cycle, EventQueue};
