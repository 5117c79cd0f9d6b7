//! Switching the kernel clocksource as a held setting: journaled before the first switch (so
//! after SIGKILL `latlab restore` puts it back), read back after each, and put back with the
//! run's other settings when the run ends. Nothing is journaled unless the switch can be made:
//! without the right to write the setting, it is refused before the journal is touched.

use super::Knobs;
use latlab_core::error::{Error, Result};
use latlab_core::sys::clocksource::dir;
use std::path::{Path, PathBuf};

/// The clocksource setting under `sys_root`, checked writable before anything is journaled
/// (exit 3 when it is not: switching needs root).
pub(crate) fn writable(sys_root: &Path) -> Result<PathBuf> {
    let path = dir(sys_root).join("current_clocksource");
    // Opening for writing changes nothing (sysfs acts on a write), but tells whether one
    // would be allowed, before a journal entry exists that only root could clear.
    if let Err(e) = std::fs::OpenOptions::new().write(true).open(&path) {
        return Err(Error::Env(format!(
            "--clocksource: cannot switch the clocksource: {}: {e} (needs root)",
            path.display()
        )));
    }
    Ok(path)
}

/// Switches the clocksource at `path` to `name` through `held` (exit 3 with the path when
/// the kernel refuses, or keeps another).
pub(crate) fn switch(held: &mut Knobs, path: &Path, name: &str) -> Result<()> {
    held.set(path, name).map_err(|e| {
        Error::Env(format!(
            "cannot switch the clocksource to {name}: {}: {e} (needs root)",
            path.display()
        ))
    })?;
    let now = std::fs::read_to_string(path).unwrap_or_default();
    if now.trim() != name {
        return Err(Error::Env(format!(
            "the kernel kept clocksource '{}' instead of {name}",
            now.trim()
        )));
    }
    Ok(())
}
