//! Parsing of times with units ("500us", "1ms", "10s", "5m") into nanoseconds, and unit display.

use std::fmt;

/// The unit a bare number is read in when no suffix is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareUnit {
    /// Bare numbers are microseconds (intervals, thresholds: cyclictest's convention).
    Micros,
    /// Bare numbers are seconds (durations: `-D 10` is ten seconds).
    Seconds,
}

const SUFFIXES: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("m", 60e9),
    ("h", 3600e9),
    ("d", 86400e9),
];

/// Parses a duration (`10s`, `500ms`, `1h`; a bare number is seconds) into nanoseconds, for
/// clap: a bad value is an exit-2 message naming the flag.
/// Durations past the longest planned run (`config::bounds`) are refused.
pub fn seconds(v: &str) -> Result<u64, String> {
    let ns = parse_time_ns(v, BareUnit::Seconds)?;
    if ns > super::bounds::MAX_PLANNED_NS {
        return Err(format!(
            "longer than {}, the longest run latlab plans",
            super::bounds::MAX_PLANNED_TEXT
        ));
    }
    Ok(ns)
}

/// Parses a time such as `1000`, `500us`, `1.5ms`, `10s`, `5m`, `1h` into nanoseconds.
///
/// The error text says what was wrong; callers prefix it with the flag.
pub fn parse_time_ns(text: &str, bare: BareUnit) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(
            "empty value; expected a number with an optional unit (ns, us, ms, s, m, h)".into(),
        );
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let scale = if suffix.is_empty() {
        match bare {
            BareUnit::Micros => 1e3,
            BareUnit::Seconds => 1e9,
        }
    } else {
        SUFFIXES
            .iter()
            .find(|(s, _)| *s == suffix)
            .map(|(_, f)| *f)
            .ok_or_else(|| format!("unknown unit '{suffix}' (use ns, us, ms, s, m, h or d)"))?
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{num}' is not a number"))?;
    if !value.is_finite() {
        return Err("not a finite number".into());
    }
    if value <= 0.0 {
        return Err("must be greater than zero".into());
    }
    let ns = (value * scale).round();
    if ns < 1.0 {
        return Err("is less than one nanosecond".into());
    }
    if ns > 1e18 {
        return Err("is too large (more than 31 years)".into());
    }
    Ok(ns as u64)
}

/// Like [`parse_time_ns`] but also accepts zero (`0`, `0us`): for offsets and distances.
pub fn parse_offset_ns(text: &str, bare: BareUnit) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
    if !digits.is_empty() && digits.parse::<f64>().ok() == Some(0.0) {
        parse_time_ns(&format!("1{}", &t[digits.len()..]), bare)?;
        return Ok(0);
    }
    parse_time_ns(text, bare)
}

/// The unit latencies are shown in on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DisplayUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
}

impl DisplayUnit {
    /// Like `fmt_ns`, with enough digits that small values do not show as 0: a decimal below
    /// 100 ns, three significant digits below 1 µs in µs.
    pub fn fmt_ns_fine(self, ns: f64) -> String {
        match self {
            DisplayUnit::Ns if ns.abs() < 100.0 => format!("{ns:.1}"),
            DisplayUnit::Us if ns > 0.0 && ns < 1000.0 => {
                let us = ns / 1e3;
                let decimals = (2 - us.log10().floor() as i32).max(1) as usize;
                format!("{us:.decimals$}")
            }
            _ => self.fmt_ns(ns),
        }
    }

    /// Formats a nanosecond value in this unit (µs keep one decimal below 10 000).
    pub fn fmt_ns(self, ns: f64) -> String {
        match self {
            DisplayUnit::Ns => format!("{:.0}", ns),
            DisplayUnit::Us => {
                let us = ns / 1e3;
                if us.abs() < 10_000.0 {
                    format!("{:.1}", us)
                } else {
                    format!("{:.0}", us)
                }
            }
        }
    }
}

impl fmt::Display for DisplayUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DisplayUnit::Ns => "ns",
            DisplayUnit::Us => "us",
        })
    }
}

/// A size in bytes: `123`, `4k`, `64M`, `1G` (powers of 1024); None when malformed or when
/// it does not fit in 64 bits.
pub fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mult) = match v.chars().last()? {
        'k' | 'K' => (&v[..v.len() - 1], 1u64 << 10),
        'm' | 'M' => (&v[..v.len() - 1], 1 << 20),
        'g' | 'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_unit_steps_keep_their_digits() {
        assert_eq!(DisplayUnit::Ns.fmt_ns_fine(0.4), "0.4");
        assert_eq!(DisplayUnit::Ns.fmt_ns_fine(1000.0), "1000");
        assert_eq!(DisplayUnit::Us.fmt_ns_fine(20.0), "0.0200");
        assert_eq!(DisplayUnit::Us.fmt_ns_fine(0.4), "0.000400");
        assert_eq!(DisplayUnit::Us.fmt_ns_fine(640.0), "0.640");
        assert_eq!(DisplayUnit::Us.fmt_ns_fine(1000.0), "1.0");
        assert_eq!(DisplayUnit::Us.fmt_ns_fine(4_000_000.0), "4000.0");
    }

    #[test]
    fn bare_numbers_take_the_default_unit() {
        assert_eq!(parse_time_ns("1000", BareUnit::Micros), Ok(1_000_000));
        assert_eq!(parse_time_ns("10", BareUnit::Seconds), Ok(10_000_000_000));
    }

    #[test]
    fn suffixes() {
        assert_eq!(parse_time_ns("500us", BareUnit::Seconds), Ok(500_000));
        assert_eq!(parse_time_ns("1.5ms", BareUnit::Seconds), Ok(1_500_000));
        assert_eq!(parse_time_ns("5m", BareUnit::Micros), Ok(300_000_000_000));
        assert_eq!(parse_time_ns("1h", BareUnit::Micros), Ok(3_600_000_000_000));
        assert_eq!(parse_time_ns("250ns", BareUnit::Micros), Ok(250));
        assert_eq!(parse_time_ns("2µs", BareUnit::Micros), Ok(2000));
    }

    #[test]
    fn offsets_may_be_zero() {
        assert_eq!(parse_offset_ns("0", BareUnit::Micros), Ok(0));
        assert_eq!(parse_offset_ns("0us", BareUnit::Micros), Ok(0));
        assert_eq!(parse_offset_ns("50us", BareUnit::Micros), Ok(50_000));
        assert!(parse_offset_ns("0parsecs", BareUnit::Micros).is_err());
        assert!(parse_offset_ns("-1", BareUnit::Micros).is_err());
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "",
            "0",
            "-5",
            "abc",
            "10parsecs",
            "1e999",
            "0.0001ns",
            "nan",
            "1..2ms",
        ] {
            assert!(
                parse_time_ns(bad, BareUnit::Micros).is_err(),
                "{bad} accepted"
            );
        }
    }
}

/// A rate or count in readable SI units: `295.4 k`, `1.25 M`, `12.0` (four significant
/// digits at most, never scientific notation).
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let (scaled, prefix) = [(1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")]
        .iter()
        .find(|(f, _)| v.abs() >= *f)
        .map_or((v, ""), |(f, p)| (v / f, *p));
    let digits = if scaled.abs() >= 100.0 {
        1
    } else if scaled.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{scaled:.digits$}{prefix}")
}

#[cfg(test)]
mod si_tests {
    #[test]
    fn si_is_readable() {
        assert_eq!(super::si(295_360.0), "295.4 k");
        assert_eq!(super::si(1_250_000.0), "1.250 M");
        assert_eq!(super::si(12.0), "12.00");
        assert_eq!(super::si(0.5), "0.500");
    }
}
