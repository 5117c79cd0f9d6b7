//! The time sources `latlab clocks` measures, each callable the way programs call it (through
//! libc, so through the vDSO where the kernel offers one), plus the direct system calls used to
//! tell a vDSO call from a kernel entry.

use super::tsc;

/// A time source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// clock_gettime(id).
    Clock(&'static str, libc::clockid_t),
    /// gettimeofday().
    Gettimeofday,
    /// time().
    Time,
    /// The rdtsc instruction.
    Rdtsc,
    /// The rdtscp instruction.
    Rdtscp,
}

/// Every time source latlab knows, in report order.
pub const ALL: &[Probe] = &[
    Probe::Clock("realtime", libc::CLOCK_REALTIME),
    Probe::Clock("monotonic", libc::CLOCK_MONOTONIC),
    Probe::Clock("monotonic_raw", libc::CLOCK_MONOTONIC_RAW),
    Probe::Clock("boottime", libc::CLOCK_BOOTTIME),
    Probe::Clock("tai", libc::CLOCK_TAI),
    Probe::Clock("realtime_coarse", libc::CLOCK_REALTIME_COARSE),
    Probe::Clock("monotonic_coarse", libc::CLOCK_MONOTONIC_COARSE),
    Probe::Clock("process_cputime", libc::CLOCK_PROCESS_CPUTIME_ID),
    Probe::Clock("thread_cputime", libc::CLOCK_THREAD_CPUTIME_ID),
    Probe::Gettimeofday,
    Probe::Time,
    Probe::Rdtsc,
    Probe::Rdtscp,
];

impl Probe {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Probe::Clock(n, _) => n,
            Probe::Gettimeofday => "gettimeofday",
            Probe::Time => "time",
            Probe::Rdtsc => "rdtsc",
            Probe::Rdtscp => "rdtscp",
        }
    }

    /// Why the source is unusable here, if it is.
    pub fn unavailable(self) -> Option<String> {
        match self {
            Probe::Clock(_, id) => {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: valid timespec pointer.
                if unsafe { libc::clock_getres(id, &mut ts) } != 0 {
                    return Some(format!("clock_getres: {}", std::io::Error::last_os_error()));
                }
                None
            }
            Probe::Rdtsc if !cfg!(target_arch = "x86_64") => Some("not x86_64".into()),
            Probe::Rdtscp if !tsc::has_rdtscp() => Some("the CPU has no rdtscp".into()),
            _ => None,
        }
    }

    /// Reads the source once; the value in ns (ticks for rdtsc/rdtscp, seconds·1e9 for time).
    #[inline(always)]
    pub fn read(self) -> u64 {
        match self {
            Probe::Clock(_, id) => crate::sys::clock::now_ns(id),
            Probe::Gettimeofday => {
                let mut tv = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                };
                // SAFETY: valid timeval pointer; a null timezone is allowed.
                unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
                tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000
            }
            // SAFETY: a null argument is allowed.
            Probe::Time => (unsafe { libc::time(std::ptr::null_mut()) }) as u64 * 1_000_000_000,
            Probe::Rdtsc => tsc::rdtsc(),
            Probe::Rdtscp => tsc::rdtscp(),
        }
    }

    /// Reads the source after every earlier load has completed (lfence before rdtsc), so a
    /// cross-CPU comparison is not fooled by out-of-order execution.
    #[inline(always)]
    pub fn read_ordered(self) -> u64 {
        match self {
            Probe::Rdtsc | Probe::Rdtscp => {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: lfence has no preconditions on x86_64.
                unsafe {
                    core::arch::x86_64::_mm_lfence()
                };
                tsc::rdtsc()
            }
            p => p.read(),
        }
    }

    /// The same request as a direct system call (never the vDSO), if it is one.
    #[inline(always)]
    pub fn read_syscall(self) -> Option<u64> {
        // SAFETY: plain system calls with valid out-pointers.
        unsafe {
            match self {
                Probe::Clock(_, id) => {
                    let mut ts = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    };
                    libc::syscall(libc::SYS_clock_gettime, id, &mut ts);
                    Some(ts.tv_nsec as u64)
                }
                Probe::Gettimeofday => Some(gettimeofday_syscall().tv_usec as u64),
                // time(2) has no system call of its own on every architecture (aarch64 has
                // none): there it is gettimeofday's seconds.
                #[cfg(target_arch = "x86_64")]
                Probe::Time => {
                    Some(libc::syscall(libc::SYS_time, std::ptr::null_mut::<libc::time_t>()) as u64)
                }
                #[cfg(not(target_arch = "x86_64"))]
                Probe::Time => Some(gettimeofday_syscall().tv_sec as u64),
                Probe::Rdtsc | Probe::Rdtscp => None,
            }
        }
    }

    /// clock_getres in ns (None for non-clock sources).
    pub fn resolution_ns(self) -> Option<u64> {
        match self {
            Probe::Clock(_, id) => {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: valid timespec pointer.
                (unsafe { libc::clock_getres(id, &mut ts) } == 0)
                    .then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
            }
            Probe::Gettimeofday => Some(1000),
            Probe::Time => Some(1_000_000_000),
            _ => None,
        }
    }
}

/// gettimeofday as a direct system call (never the vDSO).
fn gettimeofday_syscall() -> libc::timeval {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: a valid timeval out-pointer and a null timezone.
    unsafe {
        libc::syscall(
            libc::SYS_gettimeofday,
            &mut tv,
            std::ptr::null_mut::<libc::c_void>(),
        );
    }
    tv
}

/// Looks a source up by name.
pub fn by_name(name: &str) -> Option<Probe> {
    ALL.iter().copied().find(|p| p.name() == name)
}
