use std::fmt;
use std::io;

/// Everything that can go wrong reading or writing a trace. Offsets are byte offsets into the
/// file where the problem was found (for a truncated file: where the bytes ran out).
#[derive(Debug)]
pub enum TraceError {
    /// The file could not be opened or created.
    Open { path: String, source: io::Error },
    /// Reading or writing failed.
    Io { offset: u64, source: io::Error },
    /// The file ends before the trace does.
    Truncated { offset: u64, what: &'static str },
    /// The bytes at `offset` are not what the format allows.
    Corrupt { offset: u64, what: String },
    /// The file is a trace of a format version this reader does not read; `supported` is the
    /// newest it reads (it reads every version from `MIN_FORMAT_VERSION` on).
    Version { found: u32, supported: u32 },
    /// A header or record handed to the writer breaks the format's rules.
    Invalid(String),
}

impl TraceError {
    /// Byte offset of the problem, where there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            TraceError::Io { offset, .. }
            | TraceError::Truncated { offset, .. }
            | TraceError::Corrupt { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Open { path, source } => write!(f, "cannot open trace {path}: {source}"),
            TraceError::Io { offset, source } => write!(f, "trace I/O error at byte {offset}: {source}"),
            TraceError::Truncated { offset, what } => {
                write!(f, "trace truncated at byte {offset}: file ends inside {what}")
            }
            TraceError::Corrupt { offset, what } => write!(f, "trace corrupt at byte {offset}: {what}"),
            TraceError::Version { found, supported } => write!(
                f,
                "trace format version {found} is not supported (this reader reads versions {} to {supported})",
                crate::MIN_FORMAT_VERSION
            ),
            TraceError::Invalid(what) => write!(f, "invalid trace content: {what}"),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Open { source, .. } | TraceError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
