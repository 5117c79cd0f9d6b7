//! System settings a plan may change, and the on-disk journal that guarantees they are put
//! back: written (and synced) before the first change, removed only after every original is
//! restored; `latlab restore` replays it after a crash or SIGKILL.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the journal lives: `$LATLAB_JOURNAL`, else `$XDG_STATE_HOME/latlab/restore.json`
/// (`~/.local/state/...`).
pub fn journal_path() -> PathBuf {
    if let Some(p) = std::env::var_os("LATLAB_JOURNAL").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab/restore.json")
}

/// The journal: original contents of every file latlab changed, by path.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Journal {
    /// Process that wrote it.
    pub pid: u32,
    /// Original value of each changed file.
    pub originals: BTreeMap<String, String>,
}

/// Changes files and remembers how they were, on disk.
pub struct Knobs {
    path: PathBuf,
    journal: Journal,
}

/// The sysctl file for a dotted name (`kernel.sched_rt_runtime_us`).
pub fn sysctl_path(name: &str) -> PathBuf {
    Path::new("/proc/sys").join(name.replace('.', "/"))
}

/// Checks that `file` exists and can be written, without changing it. A file with no write
/// permission bit at all is refused even for root (sysfs and procfs files mark their
/// writability that way; root could otherwise open them).
pub fn check_writable(file: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a file", file.display()));
    }
    if meta.permissions().mode() & 0o222 == 0 {
        return Err(format!("{}: read-only", file.display()));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", file.display()))
}

fn read_value(file: &Path) -> Result<String> {
    let v = std::fs::read_to_string(file)
        .map_err(|e| Error::Env(format!("{}: {e}", file.display())))?;
    // sysfs lists like "[performance] powersave" or "a b c": keep the value as written back.
    Ok(v.trim_end_matches('\n').to_string())
}

impl Knobs {
    /// Starts a journal; refuses when an unrestored one exists.
    pub fn new() -> Result<Knobs> {
        let path = journal_path();
        if path.exists() {
            return Err(Error::Env(format!(
                "{}: a previous latlab plan did not restore its settings; run 'latlab restore' first",
                path.display()
            )));
        }
        Ok(Knobs {
            path,
            journal: Journal {
                pid: std::process::id(),
                originals: BTreeMap::new(),
            },
        })
    }

    fn persist(&self) -> Result<()> {
        if let Some(d) = self.path.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::Env(format!("{}: {e}", d.display())))?;
        }
        let tmp = self.path.with_extension("tmp");
        let text =
            serde_json::to_string_pretty(&self.journal).map_err(|e| Error::Env(e.to_string()))?;
        let mut f = std::fs::File::create(&tmp)
            .map_err(|e| Error::Env(format!("{}: {e}", tmp.display())))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::Env(format!("{}: {e}", tmp.display())))?;
        std::fs::rename(&tmp, &self.path)
            .map_err(|e| Error::Env(format!("{}: {e}", self.path.display())))
    }

    /// Writes `value` to `file`, journaling the original first.
    pub fn set(&mut self, file: &Path, value: &str) -> Result<()> {
        let key = file.display().to_string();
        if !self.journal.originals.contains_key(&key) {
            let orig = read_value(file)?;
            self.journal
                .originals
                .insert(key.clone(), current_choice(&orig));
            self.persist()?;
        }
        std::fs::write(file, value)
            .map_err(|e| Error::Env(format!("cannot set {} to '{value}': {e}", file.display())))
    }

    /// Writes every original back and removes the journal; returns what failed.
    pub fn restore(self) -> Vec<String> {
        let failed = restore_all(&self.journal);
        if failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        failed
    }
}

/// A file like cpufreq's `scaling_governor` reads back as written; a bracketed list
/// (`[a] b`) is reduced to the chosen entry, which is what has to be written back.
fn current_choice(v: &str) -> String {
    match (v.find('['), v.find(']')) {
        (Some(a), Some(b)) if b > a => v[a + 1..b].to_string(),
        _ => v.to_string(),
    }
}

fn restore_all(j: &Journal) -> Vec<String> {
    let mut failed = Vec::new();
    for (path, orig) in &j.originals {
        if let Err(e) = std::fs::write(path, orig) {
            failed.push(format!("{path} (to '{orig}'): {e}"));
        }
    }
    failed
}

/// `latlab restore`: replays a journal left by an interrupted plan.
pub fn restore_from_journal() -> Result<String> {
    let path = journal_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) => {
            return Ok(format!(
                "nothing to restore ({} does not exist)\n",
                path.display()
            ))
        }
    };
    let j: Journal =
        serde_json::from_str(&text).map_err(|e| Error::Env(format!("{}: {e}", path.display())))?;
    let failed = restore_all(&j);
    if !failed.is_empty() {
        return Err(Error::Env(format!(
            "could not restore: {}",
            failed.join("; ")
        )));
    }
    let _ = std::fs::remove_file(&path);
    let mut s = String::new();
    for (p, v) in &j.originals {
        s.push_str(&format!("restored {p} = {v}\n"));
    }
    Ok(s)
}

/// A line for stderr when an unrestored journal exists (checked at every start).
pub fn pending_notice() -> Option<String> {
    let path = journal_path();
    let text = std::fs::read_to_string(&path).ok()?;
    let j: Journal = serde_json::from_str(&text).ok()?;
    if j.pid != std::process::id() && std::path::Path::new(&format!("/proc/{}", j.pid)).exists() {
        return None; // a plan is running right now
    }
    let files: Vec<&String> = j.originals.keys().collect();
    Some(format!(
        "latlab: a previous plan was stopped before restoring {} setting(s) ({}); run 'latlab restore' to put them back",
        files.len(),
        files.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
    ))
}
