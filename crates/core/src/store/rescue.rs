//! Where a run goes that its store refused: a bundle of that one run, written beside the
//! default store or in a directory of the user's own, so a measurement is never lost to a
//! store that could not take it.

use super::spec::default_path;
use super::{Bundle, BundleEntry, BUNDLE_FORMAT};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// [`rescue`] of a run already made JSON (`run`, whose id is `id`).
pub fn rescue_value(
    id: &str,
    run: &serde_json::Value,
    tags: &BTreeMap<String, String>,
    first: Option<PathBuf>,
) -> std::result::Result<PathBuf, String> {
    let b = Bundle {
        format: BUNDLE_FORMAT.into(),
        runs: vec![BundleEntry {
            run: run.clone(),
            tags: tags.clone(),
        }],
    };
    let text = serde_json::to_string_pretty(&b).map_err(|e| e.to_string())? + "\n";
    let name: String = id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    let name = format!("{}.json", name.trim_start_matches('.'));
    let uid = crate::sys::sched::euid();
    let own = |base: PathBuf| base.join(format!("latlab-unstored-{uid}"));
    // The store's own place, beside the default store, then a directory of this user's own
    // under the temporary directory, and under /tmp whatever TMPDIR says.
    let mut places: Vec<(PathBuf, bool)> = first.map(|d| (d, false)).into_iter().collect();
    places.push((default_path().with_file_name("unstored"), false));
    places.push((own(std::env::temp_dir()), true));
    places.push((own(PathBuf::from("/tmp")), true));
    places.dedup();
    let mut tried = Vec::new();
    for (dir, private) in places {
        // Only an absolute place: a relative one would be the current directory's.
        if !dir.is_absolute() {
            tried.push(format!("{}: not an absolute path", dir.display()));
            continue;
        }
        let made = if private {
            private_dir(&dir, uid)
        } else {
            std::fs::create_dir_all(&dir)
        };
        let path = dir.join(&name);
        match made.and_then(|()| crate::output::write_atomic(&path, text.as_bytes())) {
            Ok(()) => return Ok(path),
            Err(e) => tried.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(tried.join("; "))
}

/// A directory only `uid` can write (created 0700; one already there must be a directory of
/// its own, not a link another user planted in a shared directory).
fn private_dir(dir: &std::path::Path, uid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let m = std::fs::symlink_metadata(dir)?;
    if !m.is_dir() || m.uid() != uid || m.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(
            "not a directory of this user's own that only it can write",
        ));
    }
    Ok(())
}
