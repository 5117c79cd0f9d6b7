//! One module per experiment. Each turns a validated config into a `result::Run`.

pub mod clocks;
pub mod contend;
pub mod ctxsw;
pub mod cyclic;
pub mod ipc;
pub mod load;
pub mod migrate;
pub mod noise;
pub mod pi;
pub mod sched;
pub mod tcp;
