//! Switching the kernel clocksource and always putting the original back: on drop, so on
//! normal ends, errors and (through the stop flag) Ctrl-C; journaled like a plan's knobs, so
//! after SIGKILL `latlab restore` puts it back. Nothing is journaled unless the switch can be
//! made: without the right to write the setting, it is refused before the journal is touched.

use crate::error::{Error, Result};
use crate::sys::clocksource::{current, dir};
use std::path::{Path, PathBuf};

/// While alive, the clocksource may be switched; on drop the original is written back.
pub struct ClocksourceGuard {
    path: PathBuf,
    /// The clocksource found at the start.
    pub original: String,
    knob: super::KnobGuard,
}

impl ClocksourceGuard {
    /// Takes the settings lock and journals the current clocksource before any change; refuses
    /// (exit 3, nothing journaled) when the setting cannot be written.
    pub fn new(sys_root: &Path) -> Result<ClocksourceGuard> {
        let path = dir(sys_root).join("current_clocksource");
        // Opening for writing changes nothing (sysfs acts on a write), but tells whether one
        // would be allowed, before a journal entry exists that only root could clear.
        if let Err(e) = std::fs::OpenOptions::new().write(true).open(&path) {
            return Err(Error::Env(format!(
                "--clocksource: cannot switch the clocksource: {}: {e} (needs root)",
                path.display()
            )));
        }
        Ok(ClocksourceGuard {
            knob: super::KnobGuard::acquire(&path)?,
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
