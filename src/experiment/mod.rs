//! Whole experiments: plans (TOML), system knobs with an on-disk restore journal, and the runner
//! that crosses factors, repeats and compares (`latlab run`, `latlab restore`).

pub mod clocksource;
pub mod hrtick;
pub mod knobs;
pub mod plan;
pub mod runner;
