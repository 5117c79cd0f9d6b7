//! Switching the kernel clocksource and always putting the original back: on drop, so on
//! normal ends, errors and (through the stop flag) Ctrl-C; journaled like a plan's knobs, so
//! after SIGKILL `latlab restore` puts it back.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The clocksource directory under a sysfs root.
pub fn dir(sys_root: &Path) -> PathBuf {
    sys_root.join("devices/system/clocksource/clocksource0")
}

/// The clocksources the kernel offers.
pub fn available(sys_root: &Path) -> Result<Vec<String>> {
    let p = dir(sys_root).join("available_clocksource");
    let text =
        std::fs::read_to_string(&p).map_err(|e| Error::Env(format!("{}: {e}", p.display())))?;
    Ok(text.split_whitespace().map(String::from).collect())
}

/// The clocksource in use.
pub fn current(sys_root: &Path) -> Result<String> {
    let p = dir(sys_root).join("current_clocksource");
    let text =
        std::fs::read_to_string(&p).map_err(|e| Error::Env(format!("{}: {e}", p.display())))?;
    Ok(text.trim().to_string())
}

/// While alive, the clocksource may be switched; on drop the original is written back.
pub struct ClocksourceGuard {
    path: PathBuf,
    /// The clocksource found at the start.
    pub original: String,
    knob: crate::experiment::knobs::KnobGuard,
}

impl ClocksourceGuard {
    /// Takes the settings lock and journals the current clocksource before any change.
    pub fn new(sys_root: &Path) -> Result<ClocksourceGuard> {
        let path = dir(sys_root).join("current_clocksource");
        Ok(ClocksourceGuard {
            knob: crate::experiment::knobs::KnobGuard::acquire(&path)?,
            original: current(sys_root)?,
            path,
        })
    }

    /// Switches to `name` (exit 3 with the path when the kernel refuses).
    pub fn switch(&self, name: &str) -> Result<()> {
        self.knob.set(name).map_err(|e| {
            Error::Env(format!(
                "cannot switch the clocksource to {name}: {}: {e} (needs root)",
                self.path.display()
            ))
        })?;
        let now = std::fs::read_to_string(&self.path).unwrap_or_default();
        if now.trim() != name {
            return Err(Error::Env(format!(
                "the kernel kept clocksource '{}' instead of {name}",
                now.trim()
            )));
        }
        Ok(())
    }
}

// Dropping the guard drops its journaled knob, which writes the original back.
