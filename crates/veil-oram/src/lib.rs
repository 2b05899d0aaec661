//! Veil `oram`: PRO-ORAM (read-only square-root ORAM whose next epoch is shuffled while the
//! current one serves), a Path ORAM baseline and plain encrypted reads, over one untrusted
//! storage interface (memory, data directory) that records the adversary's view.

pub mod clos;
pub mod crypto;
pub mod error;
pub mod storage;

pub use error::{OramError, Result};
pub mod proram;
pub mod shuffle;
pub mod cacheshuffle;
pub mod data;
pub mod pathoram;
pub mod plain;
pub mod measure;
pub mod floor;
pub mod observe;
pub mod service;
pub mod http;
pub mod admit;
pub mod session;
pub mod ops;
/// Re-exported so the bindings can serialise results without a dependency line of their own.
pub use serde_json;
pub mod redis;
