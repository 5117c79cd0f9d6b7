//! Clock reads and absolute/relative sleeps in nanoseconds (u64), for the measurement loops.

/// The clock a measurement reads and sleeps on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// CLOCK_MONOTONIC (default): never jumps, NTP-slewed.
    Monotonic,
    /// CLOCK_REALTIME: wall time; can jump when the time is set.
    Realtime,
}

impl Clock {
    /// The `CLOCK_*` id.
    pub fn id(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::Realtime => libc::CLOCK_REALTIME,
        }
    }
}

/// Reads `clock` in nanoseconds. Goes through the vDSO for the clocks above.
#[inline(always)]
pub fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; clock ids used here are always supported.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps until the absolute time `ns` on `clock` (TIMER_ABSTIME). Returns early on a signal;
/// the caller re-checks the time, so an early return is never mistaken for a wake-up.
#[inline(always)]
pub fn sleep_until_ns(clock: libc::clockid_t, ns: u64) -> i32 {
    let ts = to_timespec(ns);
    // SAFETY: ts is a valid timespec; the remainder pointer may be null for TIMER_ABSTIME.
    unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
}

/// Sleeps for `ns` nanoseconds on `clock` (relative sleep).
#[inline(always)]
pub fn sleep_for_ns(clock: libc::clockid_t, ns: u64) -> i32 {
    let ts = to_timespec(ns);
    // SAFETY: ts is a valid timespec; a null remainder is allowed.
    unsafe { libc::clock_nanosleep(clock, 0, &ts, std::ptr::null_mut()) }
}

/// One USER_HZ tick (ns): the unit of /proc/stat's times (100 per second on Linux).
pub fn user_hz_tick_ns() -> u64 {
    // SAFETY: sysconf reads a constant; no memory is touched.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        1_000_000_000 / hz as u64
    } else {
        10_000_000
    }
}
