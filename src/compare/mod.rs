//! Comparing data sets: ministat's exact output (`ministat_cmd`), and latlab's tail-aware
//! comparison of latency distributions (`inputs` → `analysis` → `render`).

pub mod analysis;
pub mod inputs;
pub mod levels;
pub mod ministat_cmd;
pub mod per_run;
pub mod render;
pub mod select;
pub mod verdict;
