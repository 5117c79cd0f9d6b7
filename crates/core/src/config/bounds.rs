//! The longest work a measurement may plan, so a typo (`--batch 18446744073709551615`, `-l` with
//! twenty digits) is refused at once (exit 2 naming the flag) instead of running for centuries.

use crate::error::{Error, Result};

/// The longest a single measurement may be planned to run: 30 days. Longer watches are what
/// `latlab monitor` (no `-D`) is for; a soak test longer than a month is run in pieces.
pub(crate) const MAX_PLANNED_NS: u64 = 30 * 86_400 * 1_000_000_000;

/// The bound in words, for messages.
pub(crate) const MAX_PLANNED_TEXT: &str = "30 days";

/// Checks a planned duration (ns) given by `flag` as `text`.
pub fn duration(flag: &str, text: impl std::fmt::Display, ns: u64) -> Result<u64> {
    if ns > MAX_PLANNED_NS {
        return Err(Error::flag(
            flag,
            text,
            format!("longer than {MAX_PLANNED_TEXT}, the longest run latlab plans"),
        ));
    }
    Ok(ns)
}

/// Checks planned work: `count` items (calls, loops, wake-ups) of at least `min_ns_each` each,
/// set by `flag` as `text`, must fit in the longest planned run.
pub fn work(flag: &str, text: impl std::fmt::Display, count: u128, min_ns_each: u64) -> Result<()> {
    let ns = count.saturating_mul(u128::from(min_ns_each.max(1)));
    if ns > u128::from(MAX_PLANNED_NS) {
        return Err(Error::flag(
            flag,
            text,
            format!(
                "would take longer than {MAX_PLANNED_TEXT} (at least {:.3e} s), the longest run \
                 latlab plans",
                ns as f64 / 1e9
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_centuries_and_names_the_flag() {
        let e = work(
            "--batch",
            "18446744073709551615",
            18_446_744_073_709_551_615,
            1,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--batch") && e.contains("30 days"), "{e}");
        assert!(work("--batch", "1000", 1000, 1).is_ok());
        assert!(duration("-D", "31d", 31 * 86_400 * 1_000_000_000).is_err());
        assert!(duration("-D", "1h", 3_600_000_000_000).is_ok());
    }
}
