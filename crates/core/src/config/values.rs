//! The value parsers of latlab's flags: each one carries the unit a bare number is read in and
//! refuses what no measurement can take, so a bad value is an exit-2 message naming the flag
//! (clap reports it; `driver::args::name_the_flag` writes it as `-i/--interval -5: why`) before any
//! lowering. What depends on other flags or on the machine (the online CPUs, a policy's priority
//! range) is checked in each measurement's lowering.
//!
//! One unit per kind of quantity, across every command:
//! - run lengths and periods of bookkeeping (`-D`, `--snapshot-every`, `--window`,
//!   `--check-monotonic`): a bare number is **seconds**;
//! - short times (intervals, spins, thresholds, runtimes, periods of measuring threads): a bare
//!   number is **µs**, cyclictest's `-i` convention.
//!
//! Either takes a unit instead: ns, us (µs), ms, s, m, h, d.

use super::{parse_offset_ns, parse_time_ns, BareUnit, CpuSet};

/// A run length or a period of bookkeeping (`-D 10` is ten seconds): nanoseconds, above zero,
/// at most the longest run latlab plans (`config::bounds`).
pub fn run_length(v: &str) -> Result<u64, String> {
    super::seconds(v)
}

/// A short time as given: nanoseconds, and the text (a message about it quotes the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Time {
    /// Nanoseconds.
    pub ns: u64,
    /// The value as given.
    pub text: String,
}

impl std::fmt::Display for Time {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A short time (`-i 1000` is 1000 µs), above zero.
pub fn short_time(v: &str) -> Result<Time, String> {
    Ok(Time {
        ns: parse_time_ns(v, BareUnit::Micros)?,
        text: v.to_string(),
    })
}

/// A short time that may be zero (an offset, a distance, work per job).
pub fn short_time_or_zero(v: &str) -> Result<Time, String> {
    Ok(Time {
        ns: parse_offset_ns(v, BareUnit::Micros)?,
        text: v.to_string(),
    })
}

/// A whole number above zero (loops, iterations, repeats, threads). How many a measurement
/// can plan is checked in its lowering (`config::bounds`).
pub fn count(v: &str) -> Result<u64, String> {
    let n: u64 = v
        .trim()
        .parse()
        .map_err(|_| "expected a whole number greater than zero".to_string())?;
    if n == 0 {
        return Err("must be greater than zero".into());
    }
    Ok(n)
}

/// A whole number, zero included (warm-up iterations, KiB touched, µs of DMA latency).
pub fn amount(v: &str) -> Result<u64, String> {
    v.trim()
        .parse()
        .map_err(|_| "expected a whole number (0 or more)".to_string())
}

/// A scheduling priority: 0 to 99 (1-99 for the real-time policies, 0 for the others); which
/// of them the policy in force takes is checked in the lowering.
pub fn priority(v: &str) -> Result<i32, String> {
    let p: i32 = v
        .trim()
        .parse()
        .map_err(|_| "expected a priority from 0 to 99".to_string())?;
    if !(0..=99).contains(&p) {
        return Err("expected a priority from 0 to 99 (1-99 real-time, 0 SCHED_OTHER)".into());
    }
    Ok(p)
}

/// One CPU number (whether it is online is checked in the lowering).
pub fn cpu(v: &str) -> Result<usize, String> {
    let c: usize = v
        .trim()
        .parse()
        .map_err(|_| "expected a CPU number".to_string())?;
    if c > super::cpuset::MAX_CPU {
        return Err(format!("CPU numbers go up to {}", super::cpuset::MAX_CPU));
    }
    Ok(c)
}

/// A CPU list as given (`1,0`) and as a set (`0-1`): the text keeps the order a deprecated
/// spelling depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList {
    /// The value as given.
    pub text: String,
    /// The CPUs.
    pub(crate) set: CpuSet,
}

impl CpuList {
    /// The set, every CPU checked to be online (exit 2 naming `flag` otherwise).
    pub fn online(&self, flag: &str, online: &CpuSet) -> crate::Result<CpuSet> {
        CpuSet::parse_online(flag, &self.text, online)
    }
}

/// A CPU list in the kernel's syntax (`0-3,6`, `0-15:2`).
pub fn cpus(v: &str) -> Result<CpuList, String> {
    Ok(CpuList {
        text: v.trim().to_string(),
        set: CpuSet::parse(v)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_numbers_take_their_kinds_unit() {
        assert_eq!(run_length("2"), Ok(2_000_000_000));
        assert_eq!(short_time("2").unwrap().ns, 2_000);
        assert_eq!(short_time("2ms").unwrap().ns, 2_000_000);
        assert_eq!(short_time("2ms").unwrap().to_string(), "2ms");
        assert_eq!(short_time_or_zero("0").unwrap().ns, 0);
    }

    #[test]
    fn absurd_values_are_refused() {
        for bad in ["0", "-1", "18446744073709551615", "NaN", "1e400", ""] {
            assert!(run_length(bad).is_err(), "-D {bad}");
            assert!(priority(bad).is_err() || bad == "0", "-p {bad}");
        }
        for bad in ["0", "-1", "NaN", "1e400", "18446744073709551616", "1.5"] {
            assert!(count(bad).is_err(), "count {bad}");
        }
        for bad in ["-1", "NaN", "100", "2147483648"] {
            assert!(priority(bad).is_err(), "-p {bad}");
        }
        assert_eq!(priority("0"), Ok(0));
        assert!(cpu("8192").is_err() && cpu("-1").is_err());
        let l = cpus("1,0").unwrap();
        assert_eq!((l.text.as_str(), l.set.len()), ("1,0", 2));
        assert!(cpus("-1").is_err());
    }
}
