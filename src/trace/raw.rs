//! The spike a measuring thread hands to the tracing session (plain numbers, passed through a
//! ring without allocation), and the record it becomes once attributed.

use super::attribute::Attribution;
use serde::{Deserialize, Serialize};

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

/// One attributed spike in the run's JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpikeRecord {
    /// Series name.
    pub series: String,
    /// CPU.
    pub cpu: usize,
    /// Loop (cyclic) or interruption (noise) number.
    pub seq: u64,
    /// Expected wake-up, CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    /// Latency as the measurement saw it, ns.
    pub latency_ns: u64,
    /// Why.
    #[serde(flatten)]
    pub why: Attribution,
}
