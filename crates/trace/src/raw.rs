//! The spike a measuring thread hands to the tracing session (plain numbers, passed through a
//! ring without allocation), and the record it becomes once attributed.

/// A spike as a measuring thread reports it (no allocation: plain numbers through a ring).
#[derive(Debug, Clone, Copy, Default)]
pub struct RawSpike {
    /// Index of the series (thread) in the run.
    pub series: u32,
    /// CPU it ran on.
    pub cpu: u32,
    /// Expected wake-up, CLOCK_MONOTONIC ns.
    pub expected: u64,
    /// Actual wake-up (clock read), CLOCK_MONOTONIC ns.
    pub actual: u64,
    /// Loop number (cyclic) or interruption number (noise), from 1.
    pub seq: u64,
    /// The measuring thread's id (0: unknown).
    pub tid: i32,
}
