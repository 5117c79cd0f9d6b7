//! One error type whose variant decides latlab's exit code, so every failure maps to 1, 2 or 3.

use std::fmt;

/// What went wrong, classified by who can fix it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad usage or bad input (exit 2). The message names the flag, file, line or path.
    #[error("{0}")]
    Usage(String),
    /// The environment can't do what was asked: privilege or kernel support (exit 3).
    #[error("{0}")]
    Env(String),
    /// A check the user requested failed, e.g. `--break-on` tripped (exit 1).
    #[error("{0}")]
    CheckFailed(String),
    /// A requested verdict could not be decided from the data (exit 4; `latlab gate`).
    #[error("{0}")]
    Undecided(String),
    /// The command a measurement ran (`latlab sched -- CMD`) ended with this status, passed
    /// on as latlab's own (as `perf stat -- CMD` does); 128 + N for a death by signal N.
    #[error("the measured command exited with status {0}")]
    Passed(i32),
    /// An I/O failure on a named path (exit 3: the machine, not the user, is at fault).
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::CheckFailed(_) => 1,
            Error::Usage(_) => 2,
            Error::Env(_) | Error::Io { .. } => 3,
            Error::Undecided(_) => 4,
            Error::Passed(code) => *code,
        }
    }

    /// Shorthand for a usage error naming a flag and a value.
    pub fn flag(flag: &str, value: impl fmt::Display, why: impl fmt::Display) -> Self {
        Error::Usage(format!("{flag} {value}: {why}"))
    }

    /// Shorthand for an I/O error on a path.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// latlab's result type.
pub type Result<T> = std::result::Result<T, Error>;
