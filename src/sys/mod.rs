//! Every unsafe call latlab makes lives here: scheduling, affinity, memory locking, clocks,
//! `/dev/cpu_dma_latency` and privilege probing. Each submodule wraps one kernel interface.

pub mod clock;
pub mod dma;
pub mod mem;
pub mod privilege;
pub mod sched;
