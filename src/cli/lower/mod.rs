//! The one way arguments flow: raw clap structs (`cli`) are lowered here into the validated
//! configs the measurements run (ripgrep's low-level -> high-level args). Nothing below `cli`
//! imports it; each file adds `from_args` to one measurement's config.

mod check;
mod clocks;
mod contend;
mod ctxsw;
mod cyclic;
mod migrate;
mod monitor;
mod noise;
mod tcp;

pub use check::{check_measurement, install};
