//! Which files a knob may name: a regular file under `/sys` or `/proc/sys`, named without `..`,
//! whose resolved path (every symlink followed) stays under those roots.

use latlab_core::error::Error;
use std::path::{Component, Path, PathBuf};

/// The only trees a knob may live in.
pub(crate) const KNOB_ROOTS: &[&str] = &["/sys", "/proc/sys"];

/// For tests: a directory standing in for debugfs (`cyclic --hrtick` then changes
/// `$LATLAB_DEBUGFS_ROOT/sched/features`, and that `sched/` directory joins the knob roots so a
/// run and `latlab restore` may write it). Never set it outside tests.
pub(crate) const DEBUGFS_ROOT_ENV: &str = "LATLAB_DEBUGFS_ROOT";

/// The injected debugfs root, resolved (None: unset, empty or missing).
pub(crate) fn debugfs_root_override() -> Option<PathBuf> {
    let v = std::env::var_os(DEBUGFS_ROOT_ENV).filter(|v| !v.is_empty())?;
    std::fs::canonicalize(v).ok()
}

pub(super) fn default_roots() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = KNOB_ROOTS.iter().map(PathBuf::from).collect();
    if let Some(d) = debugfs_root_override() {
        v.push(d.join("sched"));
    }
    v
}

/// The sysctl file for a dotted (`kernel.sched_rt_runtime_us`) or slashed name, always under
/// `/proc/sys`: an absolute name, an empty segment or `..` is refused.
pub(crate) fn sysctl_path(name: &str) -> std::result::Result<PathBuf, String> {
    let bad = |why: &str| Err(format!("sysctl '{name}': {why}"));
    if name.is_empty() {
        return bad("empty name");
    }
    if name.starts_with('/') {
        return bad("a sysctl is a name like kernel.sched_rt_runtime_us, not a path (use knob = \"/proc/sys/...\")");
    }
    let rel = name.replace('.', "/");
    if rel.split('/').any(|s| s.is_empty() || s == "..") {
        return bad("empty or '..' segment");
    }
    if !rel
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-/:+@".contains(c))
    {
        return bad("unexpected character");
    }
    Ok(Path::new("/proc/sys").join(rel))
}

/// Resolves a knob path: absolute, without `..`, and (every symlink followed) under `/sys` or
/// `/proc/sys`. Returns the real path. An error is bad input (a path outside) or the
/// environment's (a knob this machine lacks): see [`KnobError`].
pub(crate) fn resolve(raw: &Path) -> std::result::Result<PathBuf, KnobError> {
    resolve_in(raw, &default_roots())
}

/// Why a knob path was refused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KnobError {
    /// Not a path latlab may write: outside the roots, `..`, relative (exit 2).
    Outside(String),
    /// Allowed, but missing or unusable on this machine (exit 3).
    Unusable(String),
}

impl std::fmt::Display for KnobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KnobError::Outside(s) | KnobError::Unusable(s) => f.write_str(s),
        }
    }
}

impl KnobError {
    /// As latlab's error, with `context` in front.
    pub(crate) fn into_error(self, context: &str) -> Error {
        match self {
            KnobError::Outside(s) => Error::Usage(format!("{context}{s}")),
            KnobError::Unusable(s) => Error::Env(format!("{context}{s}")),
        }
    }
}

pub(super) fn roots_text(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

pub(super) fn under(p: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| p.starts_with(r) && p != r)
}

/// [`resolve`] against chosen roots (tests use a temporary tree).
pub(crate) fn resolve_in(raw: &Path, roots: &[PathBuf]) -> std::result::Result<PathBuf, KnobError> {
    let shown = raw.display();
    let outside = |why: String| KnobError::Outside(format!("knob '{shown}': {why}"));
    if !raw.is_absolute() {
        return Err(outside(format!(
            "not an absolute path under {}",
            roots_text(roots)
        )));
    }
    if raw.components().any(|c| c == Component::ParentDir) {
        return Err(outside("'..' is not allowed in a knob path".into()));
    }
    if !under(raw, roots) {
        return Err(outside(format!(
            "latlab only writes files under {}",
            roots_text(roots)
        )));
    }
    let real = std::fs::canonicalize(raw)
        .map_err(|e| KnobError::Unusable(format!("knob '{shown}': {e}")))?;
    if !under(&real, roots) {
        return Err(outside(format!(
            "resolves to {}, outside {}",
            real.display(),
            roots_text(roots)
        )));
    }
    if real.to_str().is_none() {
        return Err(outside("not a UTF-8 path".into()));
    }
    Ok(real)
}
