//! What the tracing tests need to know about tracefs: whether they can run, latlab's instances
//! and where tracefs is mounted.

use super::{exclusive, rt_unavailable, skipped};
use std::path::{Path, PathBuf};

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
pub fn trace_test() -> Option<super::Exclusive> {
    (!skipped(trace_unavailable())).then(exclusive)
}

/// Where tracefs is mounted now (as this process sees it), if anywhere.
pub fn tracefs_mounts() -> Vec<String> {
    tracefs_in(&std::fs::read_to_string("/proc/mounts").unwrap_or_default())
}

/// The tracefs mount points in a mounts table (/proc/PID/mounts).
fn tracefs_in(mounts: &str) -> Vec<String> {
    mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("tracefs"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
        .collect()
}

/// Instances named after `pid` (the traced CPUs' and the process events'): in any tracefs this
/// process sees, in the mount namespace of latlab `pid` while it lives (as root latlab mounts a
/// missing tracefs in a namespace of its own), and — where neither shows one — through a
/// tracefs mounted in a throwaway namespace (instances are the kernel's, whatever the mount).
pub fn instance_of(pid: u32) -> Vec<PathBuf> {
    let names = [format!("latlab-{pid}"), format!("latlab-{pid}-procs")];
    let mut roots: Vec<PathBuf> = tracefs_mounts().into_iter().map(PathBuf::from).collect();
    let own = std::fs::read_to_string(format!("/proc/{pid}/mounts")).unwrap_or_default();
    roots.extend(
        tracefs_in(&own)
            .into_iter()
            .map(|m| PathBuf::from(format!("/proc/{pid}/root{m}"))),
    );
    if roots.is_empty() {
        let out = std::process::Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg("mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; ls /sys/kernel/tracing/instances")
            .output();
        let listed = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        return listed
            .split_whitespace()
            .filter(|n| names.iter().any(|x| x == n))
            .map(|n| PathBuf::from("/sys/kernel/tracing/instances").join(n))
            .collect();
    }
    roots
        .iter()
        .flat_map(|m| names.iter().map(move |n| m.join("instances").join(n)))
        .filter(|p| p.exists())
        .collect()
}

/// Turns tracing off in the instance of latlab `pid` once latlab has turned it on (its
/// directory exists before its switches are set), as `trace-cmd reset -a` does to every
/// instance.
pub fn turn_tracing_off(pid: u32) {
    super::wait_until("an instance", std::time::Duration::from_secs(30), || {
        !instance_of(pid).is_empty()
    });
    let inst = instance_of(pid)
        .into_iter()
        .find(|p| !p.to_string_lossy().ends_with("-procs"))
        .unwrap();
    let on = inst.join("tracing_on");
    super::wait_until("tracing on", std::time::Duration::from_secs(10), || {
        std::fs::read(&on).is_ok_and(|v| v.starts_with(b"1"))
    });
    std::fs::write(&on, "0").unwrap();
}

/// How many BPF programs process `pid` holds (its descriptors whose fdinfo has a `prog_id`):
/// latlab sched's in-kernel engine holds ten while it runs.
pub fn bpf_programs_of(pid: u32) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return 0;
    };
    fds.flatten()
        .filter(|f| {
            std::fs::read_to_string(f.path())
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("prog_id:"))
        })
        .count()
}
