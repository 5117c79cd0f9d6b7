//! The kernel's clocksources: which it offers and which is in use (read only; switching one,
//! journaled and restored, is `settings::clocksource`).

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
