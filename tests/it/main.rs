//! latlab's one integration-test binary: drives the real `latlab` binary end to end.

mod ab;
mod clocks;
mod compare;
mod contend;
mod ctxsw;
mod cyclic;
mod fuzz;
mod gate;
mod import;
mod ipc;
mod lifecycle;
mod load;
mod ministat;
mod monitor;
mod noise;
mod plan;
mod report;
mod store;
mod table;
mod tcp;
mod trace;
mod util;
