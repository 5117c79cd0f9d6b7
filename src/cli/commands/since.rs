//! `--since` as `runs list` and `report --fleet` take it: a time ago or a time.

use crate::error::{Error, Result};

/// `--since`: a time ago (`7d`, `12h`) or a time (RFC 3339, UTC); anything else is exit 2
/// naming the flag.
/// A time before the epoch (`--since 100000d`) is the epoch: nothing was stored before it.
pub fn parse_since(v: &str) -> Result<std::time::SystemTime> {
    let at_least_epoch = |t: std::time::SystemTime| t.max(std::time::UNIX_EPOCH);
    if let Ok(t) = humantime::parse_rfc3339_weak(v) {
        return Ok(at_least_epoch(t));
    }
    humantime::parse_duration(v)
        .ok()
        .map(|d| {
            std::time::SystemTime::now()
                .checked_sub(d)
                .map_or(std::time::UNIX_EPOCH, at_least_epoch)
        })
        .ok_or_else(|| {
            Error::flag(
                "--since",
                v,
                "expected a time ago (7d, 12h) or a time (2026-11-24T00:00:00Z)",
            )
        })
}
