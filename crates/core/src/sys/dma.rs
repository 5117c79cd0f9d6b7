//! Holding `/dev/cpu_dma_latency` at a value for the length of a run (PM QoS request).

use std::fs::File;
use std::io::Write;

/// While alive, asks the kernel to keep CPU wake-up latency at or below the value written.
/// The request ends when the file is closed (on drop).
#[derive(Debug)]
pub(crate) struct DmaLatency {
    _file: File,
}

impl DmaLatency {
    /// Opens `/dev/cpu_dma_latency` and writes `value_us` as a binary i32.
    pub(crate) fn hold(value_us: i32) -> Result<DmaLatency, std::io::Error> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")?;
        f.write_all(&value_us.to_ne_bytes())?;
        Ok(DmaLatency { _file: f })
    }
}
