//! One error type: a bad configuration or input (the CLI's exit 2), a failed integrity check,
//! or an interrupted run.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad configuration or input; the message names the field or file.
    Config(String),
    /// A MAC did not verify: the line (or its bitmap) was modified in memory.
    Integrity(String),
    /// The run was interrupted (Ctrl-C).
    Interrupted,
}

impl Error {
    pub fn config(msg: impl Into<String>) -> Self {
        Error::Config(msg.into())
    }

    pub(crate) fn crypto(e: veil_crypto::CryptoError) -> Self {
        Error::Config(e.to_string())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => f.write_str(m),
            Error::Integrity(m) => write!(f, "integrity check failed: {m}"),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
