//! The `build` load: a parallel build (`make -j`) of a bundled C tree, over and over, in a
//! scratch directory, as rteval's kernel build loads a machine — compiler processes starting,
//! allocating, reading and writing files and exiting on every CPU the load may use, with
//! nothing downloaded. The tree is `crates/lab/src/loadgen/build/` (a template translation unit and a
//! Makefile), built into latlab and written out at the start: `units` files (default 32) that
//! each include the template under their own name.

use super::spec::{LoadSpec, DEFAULT_UNITS};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The template every unit includes.
const TEMPLATE: &str = include_str!("build/template.h");
/// The Makefile.
const MAKEFILE: &str = include_str!("build/Makefile");
/// Prefix of scratch directories (`latlab-build-PID`).
const PREFIX: &str = "latlab-build-";

/// Where scratch directories go: `$TMPDIR`, else /var/tmp.
fn scratch_base() -> PathBuf {
    std::env::var_os("TMPDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| "/var/tmp".into())
}

/// Removes the scratch directories of build loads whose process is gone (a latlab killed with
/// SIGKILL takes its load workers along, but cannot remove their trees).
fn remove_stale(base: &Path) {
    let Ok(dir) = std::fs::read_dir(base) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Writes the tree: the Makefile, the template, `units` units and a main.
pub(crate) fn write_tree(dir: &Path, units: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("Makefile"), MAKEFILE)?;
    std::fs::write(dir.join("template.h"), TEMPLATE)?;
    std::fs::write(dir.join("main.c"), "int main(void) { return 0; }\n")?;
    for i in 0..units {
        std::fs::write(
            dir.join(format!("u{i}.c")),
            format!("#define UNIT {i}\n#include \"template.h\"\n"),
        )?;
    }
    Ok(())
}

/// Runs one `make` in `dir` (its own process group) until it ends or `stop` is set; true when
/// it ended by itself with success.
fn make(dir: &Path, args: &str, stop: &AtomicBool) -> std::io::Result<bool> {
    // The compilers' temporary files go inside the tree (removed with it): a compiler killed
    // when the load stops cannot remove its own.
    let cmd = format!(
        "cd '{0}' && mkdir -p tmp && TMPDIR='{0}/tmp' exec make -s {args}",
        dir.display()
    );
    let mut c = latlab_core::sys::process::spawn_command(&cmd)?;
    let group = c.id() as i32;
    latlab_core::sys::process::track_group(group);
    let ok = loop {
        if let Ok(Some(status)) = c.try_wait() {
            break status.success();
        }
        if stop.load(Ordering::Relaxed) {
            latlab_core::sys::process::signal_group(group, libc::SIGKILL);
            let _ = c.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Whatever the build left running in its group goes with it.
    latlab_core::sys::process::signal_group(group, libc::SIGKILL);
    latlab_core::sys::process::track_group(0);
    Ok(ok)
}

/// The jobs of `make -j` when `jobs=` is not given: twice the CPUs this process may use.
fn default_jobs() -> u64 {
    latlab_core::sys::sched::affinity().map_or(2, |s| 2 * s.len() as u64)
}

/// Builds over and over until `stop`; `progress` counts the builds done. Returns the builds
/// done and a note saying how (for the load's report).
pub(crate) fn run(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &Arc<AtomicU64>,
) -> std::io::Result<(u64, String)> {
    let units = spec.num("units", DEFAULT_UNITS).unwrap_or(DEFAULT_UNITS);
    let jobs = spec.num("jobs", 0).unwrap_or(0);
    let jobs = if jobs == 0 { default_jobs() } else { jobs };
    let base = scratch_base();
    remove_stale(&base);
    let dir = base.join(format!("{PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_tree(&dir, units)?;
    let (mut builds, mut failed) = (0u64, 0u64);
    let r = (|| -> std::io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            make(&dir, "clean", stop)?;
            if make(&dir, &format!("-j{jobs}"), stop)? {
                builds += 1;
                progress.store(builds, Ordering::Relaxed);
            } else if !stop.load(Ordering::Relaxed) {
                failed += 1;
                if failed >= 3 && builds == 0 {
                    return Err(std::io::Error::other(format!(
                        "make failed {failed} times in {} (is a C compiler installed?)",
                        dir.display()
                    )));
                }
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    r?;
    let note = format!(
        "make -j{jobs} of {units} C units in {}{}",
        dir.display(),
        if failed > 0 {
            format!("; {failed} build(s) failed")
        } else {
            String::new()
        }
    );
    Ok((builds, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_builds_and_a_stop_ends_a_build_at_once() {
        if !latlab_core::sys::process::command_exists("make")
            || !latlab_core::sys::process::command_exists("cc")
        {
            eprintln!("SKIPPED: no make or cc");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), 2).unwrap();
        let stop = AtomicBool::new(false);
        assert!(make(dir.path(), "-j2", &stop).unwrap());
        assert!(dir.path().join("prog").exists() && dir.path().join("u1.o").exists());
        assert!(make(dir.path(), "clean", &stop).unwrap());
        assert!(!dir.path().join("u1.o").exists());
        stop.store(true, Ordering::Relaxed);
        assert!(!make(dir.path(), "-j2", &stop).unwrap());
    }

    #[test]
    fn stale_trees_of_dead_processes_go() {
        let base = tempfile::tempdir().unwrap();
        let dead = base.path().join(format!("{PREFIX}999999999"));
        let mine = base.path().join(format!("{PREFIX}{}", std::process::id()));
        let other = base.path().join("latlab-build-x");
        for d in [&dead, &mine, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        remove_stale(base.path());
        assert!(!dead.exists() && mine.exists() && other.exists());
    }
}
