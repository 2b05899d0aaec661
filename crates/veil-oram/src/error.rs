//! One error type for the crate: every failure a caller can trigger (bad id, tampered or
//! missing storage, bad configuration) comes back as a value with a one-line message.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OramError {
    /// Authentication failed: the untrusted store returned bytes that were not written by us.
    Tamper { region: u32, index: u64 },
    UnknownBlock { id: u64, n_blocks: u64 },
    Config(String),
    Io(String),
    /// The store's persistent state is missing or unreadable.
    Corrupt(String),
    /// A measured run stopped early on request (Ctrl-C; `veil_core::interrupt`).
    Interrupted,
}

impl fmt::Display for OramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OramError::Tamper { region, index } => write!(
                f,
                "integrity check failed: storage slot {index} of region {region} was modified"
            ),
            OramError::UnknownBlock { id, n_blocks } => {
                write!(f, "unknown block id {id}: the store holds blocks 0..{n_blocks}")
            }
            OramError::Config(m) => write!(f, "invalid configuration: {m}"),
            OramError::Io(m) => write!(f, "storage I/O error: {m}"),
            OramError::Corrupt(m) => write!(f, "storage state unusable: {m}"),
            OramError::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for OramError {}

impl From<std::io::Error> for OramError {
    fn from(e: std::io::Error) -> Self {
        OramError::Io(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, OramError>;
