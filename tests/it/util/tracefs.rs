//! What the tracing tests need to know about tracefs: whether they can run, latlab's instances
//! and where tracefs is mounted.

use super::{exclusive, rt_unavailable, skipped};
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

/// Why tracing tests cannot run here, if they cannot.
pub fn trace_unavailable() -> Option<String> {
    if let Some(w) = rt_unavailable() {
        return Some(w);
    }
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .contains(" tracefs ");
    if !mounted && !Path::new("/sys/kernel/tracing").is_dir() {
        return Some("no tracefs and no /sys/kernel/tracing to mount it on".into());
    }
    None
}

/// For a test that traces: the exclusive lock, or None after saying (through `skip`) why it
/// cannot run here.
pub fn trace_test() -> Option<MutexGuard<'static, ()>> {
    (!skipped(trace_unavailable())).then(exclusive)
}

/// Where tracefs is mounted now, if anywhere.
pub fn tracefs_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("tracefs"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect()
}

/// Instances named after `pid` (the traced CPUs' and the process events') in any mounted
/// tracefs.
pub fn instance_of(pid: u32) -> Vec<PathBuf> {
    tracefs_mounts()
        .into_iter()
        .map(PathBuf::from)
        .flat_map(|m| {
            [
                m.join(format!("instances/latlab-{pid}")),
                m.join(format!("instances/latlab-{pid}-procs")),
            ]
        })
        .filter(|p| p.exists())
        .collect()
}
