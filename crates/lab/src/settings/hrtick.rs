//! `cyclic --hrtick`: the scheduler's high-resolution tick turned on for one run through
//! debugfs `sched/features`, and always turned back off. Without it the kernel enforces a
//! SCHED_DEADLINE runtime only at the next scheduler tick, so runtimes shorter than a few ticks
//! overrun by up to a tick before they are throttled (rt-tests' cyclicdeadline refuses runtimes
//! under 2 ms without it). Since Linux 5.11 deadline tasks have their own flag, `HRTICK_DL`
//! (`HRTICK` is the fair class's); older kernels have `HRTICK` alone: the one that exists is
//! used.
//!
//! The change is a setting the driver holds for the run (`driver::Ctx::settings`): journaled
//! (the write that undoes it, `NO_<FEATURE>`) before it is made, read back, undone on every
//! exit path (end, error, Ctrl-C, a second Ctrl-C through an exit hook) and by `latlab restore`
//! after SIGKILL. debugfs is found in /proc/mounts or mounted at /sys/kernel/debug (and left
//! mounted, like `--trace`'s tracefs: see `trace::lifecycle`). `LATLAB_DEBUGFS_ROOT` points it
//! at a fake tree, for tests.

use super::Knobs;
use latlab_core::error::{Error, Result};
use latlab_trace::lifecycle::{self, DEBUGFS};
use std::path::{Path, PathBuf};

/// Where debugfs is mounted when latlab mounts it.
pub(crate) const DEFAULT_MOUNT: &str = "/sys/kernel/debug";

/// HRTICK turned on for a run, through the run's held settings (which put it back when the
/// driver releases them, on every way out).
#[derive(Debug)]
pub(crate) struct Hrtick {
    /// The feature turned on (`HRTICK_DL` or `HRTICK`).
    pub(crate) feature: String,
    /// The features file.
    pub(crate) file: PathBuf,
    /// False when the feature was on already (then nothing was changed or journaled).
    pub(crate) changed: bool,
}

impl Hrtick {
    /// Turns the high-resolution tick for deadline tasks on, journaled in `held` (the run's
    /// settings, taken from the driver). Exit 3 when debugfs cannot be mounted, the kernel has
    /// no features file or no HRTICK feature, or refuses access to it (this VM: Operation not
    /// permitted).
    pub(crate) fn enable(held: &mut Knobs) -> Result<Hrtick> {
        let root = match super::debugfs_root_override() {
            Some(r) => r,
            None => lifecycle::acquire_fs(
                DEBUGFS,
                &latlab_core::io::state_dir(),
                Path::new(DEFAULT_MOUNT),
                latlab_core::sys::mount::mount_debugfs,
                || lifecycle::mounted("debugfs"),
            )?,
        };
        let file = features_file(&root)?;
        let text = read_features(&file)?;
        let feature = pick_feature(&text).ok_or_else(|| {
            Error::Env(format!(
                "--hrtick: {}: the kernel has neither HRTICK_DL nor HRTICK (it lists: {})",
                file.display(),
                text.trim()
            ))
        })?;
        let changed = held
            .enable_feature(&file, feature)
            .map_err(|e| Error::Env(format!("--hrtick: {e}")))?;
        Ok(Hrtick {
            feature: feature.to_string(),
            file,
            changed,
        })
    }

    /// The warning the run records: what was turned on and why.
    pub(crate) fn warning(&self) -> String {
        if self.changed {
            format!(
                "--hrtick: {} turned on in {} for the run and off again after it: without \
                 the high-resolution tick the kernel throttles a deadline task only at the next \
                 scheduler tick, so short runtimes overrun by up to a tick",
                self.feature,
                self.file.display()
            )
        } else {
            format!(
                "--hrtick: {} was already on in {}; left as it was",
                self.feature,
                self.file.display()
            )
        }
    }
}

/// The scheduler features file under debugfs `root`: `sched/features` (Linux 5.13 on), else
/// the older `sched_features`.
fn features_file(root: &Path) -> Result<PathBuf> {
    let new = root.join("sched/features");
    let old = root.join("sched_features");
    if new.exists() {
        Ok(new)
    } else if old.exists() {
        Ok(old)
    } else if let Some(e) = [root.to_path_buf(), root.join("sched")]
        .iter()
        .find_map(|d| std::fs::read_dir(d).err())
        .filter(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    {
        // debugfs is root's alone (mode 0700): a user cannot even see whether the file is there.
        Err(Error::Env(format!(
            "--hrtick: {} cannot be read ({e}): the scheduler's features are root's; run as \
             root, or without --hrtick",
            root.display()
        )))
    } else {
        Err(Error::Env(format!(
            "--hrtick: neither {} nor {} exists: this kernel does not expose its scheduler \
             features (CONFIG_SCHED_DEBUG off?), so HRTICK cannot be turned on; run without \
             --hrtick",
            new.display(),
            old.display()
        )))
    }
}

fn read_features(file: &Path) -> Result<String> {
    std::fs::read_to_string(file).map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::EPERM) {
            "the kernel refuses access to its scheduler debugfs files even to root (a restricted \
             or locked-down debugfs), so HRTICK cannot be turned on here; run without --hrtick \
             (short runtimes are then enforced at the scheduler tick)"
        } else if e.raw_os_error() == Some(libc::EACCES) {
            "needs root"
        } else {
            "cannot read the scheduler features"
        };
        Error::Env(format!("--hrtick: {}: {e}: {why}", file.display()))
    })
}

/// The feature that gives deadline tasks the high-resolution tick: `HRTICK_DL` where the
/// kernel has it, else `HRTICK`.
fn pick_feature(list: &str) -> Option<&'static str> {
    let has = |w: &str| list.split_whitespace().any(|x| x == w);
    if has("HRTICK_DL") || has("NO_HRTICK_DL") {
        Some("HRTICK_DL")
    } else if has("HRTICK") || has("NO_HRTICK") {
        Some("HRTICK")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_flag_is_preferred() {
        assert_eq!(
            pick_feature("A NO_HRTICK NO_HRTICK_DL B"),
            Some("HRTICK_DL")
        );
        assert_eq!(pick_feature("A HRTICK_DL NO_HRTICK"), Some("HRTICK_DL"));
        assert_eq!(pick_feature("A NO_HRTICK B"), Some("HRTICK"));
        assert_eq!(pick_feature("A NO_HRTICKX"), None);
    }

    #[test]
    fn the_features_file_is_found_old_or_new_or_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = features_file(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("--hrtick"), "{e}");
        std::fs::write(d.path().join("sched_features"), "NO_HRTICK").unwrap();
        assert_eq!(
            features_file(d.path()).unwrap(),
            d.path().join("sched_features")
        );
        std::fs::create_dir(d.path().join("sched")).unwrap();
        std::fs::write(d.path().join("sched/features"), "NO_HRTICK").unwrap();
        assert_eq!(
            features_file(d.path()).unwrap(),
            d.path().join("sched/features")
        );
    }
}
