//! Comparing data sets: ministat's exact output, and latlab's tail-aware comparison of latency
//! distributions.

pub mod ministat_cmd;
