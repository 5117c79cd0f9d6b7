//! `--since` as `runs list` and `report --fleet` take it: a time ago or a time.

use latlab_core::error::{Error, Result};

/// `--since`: a time ago (`7d`, `12h`) or a time (RFC 3339, UTC); anything else is exit 2
/// naming the flag.
/// A time before the epoch (`--since 100000d`) is the epoch: nothing was stored before it.
pub fn parse_since(v: &str) -> Result<std::time::SystemTime> {
    let at_least_epoch = |t: std::time::SystemTime| t.max(std::time::UNIX_EPOCH);
    if let Ok(t) = humantime::parse_rfc3339_weak(v) {
        return Ok(at_least_epoch(t));
    }
    // A time before 1970, which humantime does not read: valid (checked as the same date in
    // 1972, a leap year too), and the epoch as the other early times are.
    if let Some((year, rest)) = v.split_at_checked(4) {
        let early = year.bytes().all(|b| b.is_ascii_digit()) && year < "1970";
        if early && humantime::parse_rfc3339_weak(&format!("1972{rest}")).is_ok() {
            let leap =
                |y: u32| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
            let feb29 = rest.starts_with("-02-29");
            if !feb29 || year.parse().is_ok_and(leap) {
                return Ok(std::time::UNIX_EPOCH);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_before_1970_is_the_epoch_and_a_bad_one_is_refused() {
        let e = std::time::UNIX_EPOCH;
        for v in [
            "1970-01-01T00:00:00Z",
            "1969-12-31T00:00:00Z",
            "0001-01-01T00:00:00Z",
            "1968-02-29T12:00:00Z",
            "100000d",
        ] {
            assert_eq!(parse_since(v).unwrap(), e, "{v}");
        }
        for v in [
            "1969-13-01T00:00:00Z",
            "1969-02-29T00:00:00Z",
            "196a-01-01T00:00:00Z",
            "19",
        ] {
            assert!(parse_since(v).is_err(), "{v}");
        }
    }
}
