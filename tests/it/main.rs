//! latlab's one integration-test binary: drives the real `latlab` binary end to end.
// Test-only: signals to child processes and euid checks call libc directly; the crate itself
// denies unsafe code outside crates/core/src/sys (Cargo.toml [workspace.lints.rust]).
#![allow(unsafe_code)]

mod ab;
mod architecture;
mod clocks;
mod compare;
mod contend;
mod ctxsw;
mod cyclic;
mod deadline;
mod fuzz;
mod gate;
mod grammar;
mod guest;
mod harness;
mod hostile_actions;
mod hostile_files;
mod hostile_imports;
mod hostile_monitor;
mod import;
mod import_rt;
mod ipc;
mod lifecycle_children;
mod lifecycle_outputs;
mod lifecycle_signals;
mod load;
mod loadcpus;
mod ministat;
mod monitor;
mod monitor_fleet;
mod monitor_ha;
mod monitor_http;
mod monitor_package;
mod monitor_prometheus;
mod monitor_store;
mod monitor_tls;
mod monitor_trace;
mod noise;
mod pi;
mod placement;
mod plan;
mod qualify;
mod readme;
mod report;
mod sched;
mod shared;
mod store;
mod store_hangs;
mod store_reading;
mod table;
mod tail;
mod tcp;
mod timerlat;
mod trace;
mod util;
