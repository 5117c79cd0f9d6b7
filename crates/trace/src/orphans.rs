//! Tracing instances that latlab processes left behind and that no journal names any more
//! (their journal was in a state directory since deleted, such as a test's scratch one). Each
//! holds its ring buffers' kernel memory until removed, so `latlab restore` removes those whose
//! process is gone. Only in the machine's PID namespace, and only instances named there: a
//! container's pids mean nothing to the host (its instances carry `-ns<inode>`, see
//! `tracefs::instance_name`), nor the host's to a container.

use super::files::remove_instance;
use super::tracefs::{is_latlab_instance, named_pid, TraceFs};
use std::path::Path;

/// `latlab restore`'s sweep of orphaned instances, run after the journaled ones are handled.
pub const RESTORER: latlab_core::io::Restorer = latlab_core::io::Restorer {
    name: "orphaned tracing instances",
    run: |dir| {
        // tracefs found, or mounted (restore runs in a mount namespace of its own as root);
        // where that fails (not root), latlab cannot have left instances it could remove.
        // Only from the machine's own PID namespace, where an instance's pid names its
        // process: a restore in a container would take the host's live runs for dead ones.
        if latlab_core::sys::process::other_pid_namespace().is_some() {
            return Ok(Vec::new());
        }
        Ok(match TraceFs::system(dir) {
            Ok(fs) => sweep(&fs.root.join("instances"), |pid| {
                Path::new(&format!("/proc/{pid}")).exists()
            }),
            Err(_) => Vec::new(),
        })
    },
};

/// The pid in an instance's name (`latlab-<pid>` or `latlab-<pid>-procs`); None for an
/// instance of another PID namespace (`latlab-<pid>-ns<inode>`), whose pid this one cannot
/// check: its own journal's restore removes it.
fn owner(p: &Path) -> Option<u32> {
    let name = p.file_name()?.to_str()?;
    let name = super::tracefs::without_suffix(name);
    // Only a name latlab makes in this namespace: a pid as printed (no sign, no leading zero,
    // not 0), no `-ns<inode>` after it.
    let pid = named_pid(p)?;
    (pid > 0 && name == format!("latlab-{pid}")).then_some(pid)
}

/// Removes every latlab instance in `instances` whose process is not `alive` (never this
/// process's own). One line per instance removed or that could not be.
pub(crate) fn sweep(instances: &Path, alive: impl Fn(u32) -> bool) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(instances) else {
        return Vec::new();
    };
    let mut found: Vec<_> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| is_latlab_instance(p))
        .filter_map(|p| owner(&p).map(|pid| (pid, p)))
        .filter(|(pid, _)| *pid != std::process::id() && !alive(*pid))
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(pid, p)| match remove_instance(&p) {
            Ok(()) => format!(
                "removed tracefs instance {} (its latlab process {pid} is gone)",
                p.display()
            ),
            Err(e) => format!("could not remove {}: {e}", p.display()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_latlab_instances_of_dead_processes_go() {
        let d = tempfile::tempdir().unwrap();
        let inst = d.path().join("instances");
        let mine = format!("latlab-{}", std::process::id());
        // Every name, and whether the sweep leaves it.
        let names = [
            ("latlab-7", false),
            ("latlab-7-procs", true),
            ("latlab-8", true),
            ("latlab-9x", true),
            ("latlab-7-ns4026532000", true),
            ("perf-7", true),
            ("latlab-", true),
            ("latlab-0", true),
            ("latlab-011626", true),
            (mine.as_str(), true),
        ];
        for (n, _) in names {
            std::fs::create_dir_all(inst.join(n)).unwrap();
        }
        // 8 is alive; a directory with something in it stands for a busy instance; a pid of
        // another namespace is never taken for one of this one.
        std::fs::write(inst.join("latlab-7-procs/x"), "").unwrap();
        let out = sweep(&inst, |pid| pid == 8);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            out[0].starts_with("removed") && out[0].contains("latlab-7 "),
            "{out:?}"
        );
        assert!(out[1].starts_with("could not remove"), "{out:?}");
        let left: Vec<String> = std::fs::read_dir(&inst)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        for (n, stays) in names {
            assert_eq!(left.iter().any(|l| l == n), stays, "{n}: {left:?}");
        }
        // A missing directory is nothing to do.
        assert!(sweep(&d.path().join("none"), |_| false).is_empty());
    }
}
