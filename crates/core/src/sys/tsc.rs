//! The CPU's time-stamp counter: rdtsc/rdtscp reads and a calibration against
//! CLOCK_MONOTONIC_RAW. x86_64 only; elsewhere `available()` is false and callers fall back to
//! clock_gettime.

use super::clock::now_ns;

/// A cheap monotonic tick counter for measurement loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ticks {
    /// rdtsc; ticks are TSC cycles.
    Tsc,
    /// clock_gettime(CLOCK_MONOTONIC); ticks are ns.
    Monotonic,
}

impl Ticks {
    /// The TSC where it is a usable clock, else CLOCK_MONOTONIC.
    pub fn best() -> Ticks {
        if available() {
            Ticks::Tsc
        } else {
            Ticks::Monotonic
        }
    }

    /// Reads the counter.
    #[inline(always)]
    pub fn read(self) -> u64 {
        match self {
            Ticks::Tsc => rdtsc(),
            Ticks::Monotonic => now_ns(libc::CLOCK_MONOTONIC),
        }
    }

    /// Ticks per nanosecond (calibrates the TSC over `window_ms`; 1.0 for the clock).
    pub fn per_ns(self, window_ms: u64) -> f64 {
        match self {
            Ticks::Tsc => calibrate(window_ms),
            Ticks::Monotonic => 1.0,
        }
    }
}

/// Reads the TSC (not serialising). 0 on other architectures.
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Reads the TSC with rdtscp (waits for earlier instructions). 0 on other architectures.
#[inline(always)]
pub(crate) fn rdtscp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut aux = 0u32;
        // SAFETY: rdtscp is available wherever `has_rdtscp` said so; it only writes aux.
        unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// True when the TSC is usable as a clock: x86_64 with constant and nonstop TSC.
pub fn available() -> bool {
    cfg!(target_arch = "x86_64")
        && cpu_flags().is_some_and(|f| {
            f.contains(&"constant_tsc".to_string()) && f.contains(&"nonstop_tsc".to_string())
        })
}

/// True when the CPU has rdtscp.
pub(crate) fn has_rdtscp() -> bool {
    cfg!(target_arch = "x86_64") && cpu_flags().is_some_and(|f| f.contains(&"rdtscp".to_string()))
}

fn cpu_flags() -> Option<Vec<String>> {
    cpu_flags_in(&super::roots::Roots::host())
}

/// The CPU flags of the first processor in `<proc_root>/cpuinfo`.
pub(crate) fn cpu_flags_in(roots: &super::roots::Roots) -> Option<Vec<String>> {
    let text = roots.cpuinfo_first()?;
    let line = text.lines().find(|l| l.starts_with("flags"))?;
    Some(
        line.split(':')
            .nth(1)?
            .split_whitespace()
            .map(String::from)
            .collect(),
    )
}

/// TSC ticks per nanosecond, measured against CLOCK_MONOTONIC_RAW over `window_ms`. Each end
/// is a [`paired`] reading: a thread preempted between its clock read and its TSC read (a busy
/// housekeeping CPU) would otherwise skew the rate by the preemption's length over the window,
/// and every time converted from ticks by as much (noise's spikes, placed in the trace, by
/// milliseconds half a second in).
pub fn calibrate(window_ms: u64) -> f64 {
    let clk = libc::CLOCK_MONOTONIC_RAW;
    let read = || {
        let a = rdtsc();
        let t = now_ns(clk);
        (a, t, rdtsc())
    };
    let (t0, c0) = paired(read);
    std::thread::sleep(std::time::Duration::from_millis(window_ms));
    let (t1, c1) = paired(read);
    (c1.wrapping_sub(c0)) as f64 / (t1 - t0).max(1) as f64
}

/// Tries of [`paired`].
const PAIR_TRIES: usize = 16;

/// A (clock ns, TSC) pair from `read`'s (TSC before, clock, TSC after) readings: of a few
/// tries, the one whose two TSC reads lie closest (nothing came between them), the TSC taken
/// halfway.
fn paired(mut read: impl FnMut() -> (u64, u64, u64)) -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..PAIR_TRIES {
        let (a, t, b) = read();
        let w = b.wrapping_sub(a);
        if w < best.2 {
            best = (t, a.wrapping_add(w / 2), w);
        }
    }
    (best.0, best.1)
}

#[cfg(test)]
mod pair_tests {
    #[test]
    fn a_reading_interrupted_between_its_reads_is_passed_over() {
        // The first try was preempted for 3 ms (3 000 000 ticks at 1 tick/ns) between its
        // TSC and clock reads; the others are tight.
        let mut k = 0u64;
        let (t, c) = super::paired(|| {
            k += 1;
            let base = k * 10_000;
            if k == 1 {
                (base, base + 3_000_000, base + 3_000_050)
            } else {
                (base, base + 20, base + 40 + k)
            }
        });
        assert_eq!((t, c), (20_020, 20_021));
    }
}

#[cfg(test)]
mod roots_tests {
    #[test]
    fn flags_come_from_the_given_procfs() {
        let d = tempfile::tempdir().unwrap();
        let r = crate::sys::roots::Roots::under(d.path());
        std::fs::create_dir_all(&r.proc_root).unwrap();
        std::fs::write(
            r.proc_path("cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu tsc rdtscp constant_tsc\n",
        )
        .unwrap();
        let f = super::cpu_flags_in(&r).unwrap();
        assert!(f.contains(&"rdtscp".to_string()));
        assert!(
            super::cpu_flags_in(&crate::sys::roots::Roots::under(&d.path().join("none"))).is_none()
        );
    }
}
