//! Every unsafe call latlab makes lives here: scheduling, affinity, memory locking, clocks,
//! `/dev/cpu_dma_latency` and privilege probing. Each submodule wraps one kernel interface.

// The one module where unsafe code is allowed (the workspace denies it: Cargo.toml [workspace.lints.rust]).
#![allow(unsafe_code)]

pub mod clock;
pub mod clocksource;
pub mod deadline;
pub(crate) mod dma;
pub mod family;
pub mod ioperm;
pub mod ipcprim;
pub mod mem;
pub mod mount;
pub mod net;
pub mod pimutex;
pub mod policy;
pub mod poll;
pub mod privilege;
pub mod process;
pub mod procs;
pub mod roots;
pub mod sched;
pub mod shared;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) mod simd;
pub mod sysvsem;
pub mod taskpair;
pub mod term;
pub mod timesrc;
pub mod tsc;
