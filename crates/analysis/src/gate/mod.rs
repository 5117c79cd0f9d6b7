//! `latlab gate`: a pass/fail for CI that is honest about what the data can decide — a
//! latency requirement judged on runs as met (exit 0), violated (exit 1) or undecided (exit 4),
//! and a planner saying how long a run must be to decide at all.

pub mod args;
pub mod bounds;
mod command;
pub mod count;
mod extrapolate;
pub mod judge;
pub mod junit;
pub mod requirement;
