//! The one error type of the crate: every message is one line naming the bad input.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CryptoError {
    /// A key, nonce, block or buffer of the wrong length, or another bad argument.
    InvalidInput(String),
    /// An authentication tag did not match; no plaintext is released.
    AuthenticationFailed(String),
    /// A long call stopped early because `veil_core::interrupt` was requested (Ctrl-C).
    Interrupted,
}

impl CryptoError {
    pub(crate) fn input(msg: impl Into<String>) -> Self {
        CryptoError::InvalidInput(msg.into())
    }

    pub(crate) fn key_len(what: &str, expected: &str, got: usize) -> Self {
        CryptoError::InvalidInput(format!("{what} key must be {expected} bytes, got {got}"))
    }
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptoError::InvalidInput(m) => f.write_str(m),
            CryptoError::AuthenticationFailed(m) => write!(f, "authentication failed: {m}"),
            CryptoError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for CryptoError {}

pub type Result<T> = std::result::Result<T, CryptoError>;
