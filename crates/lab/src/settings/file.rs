//! Reading and writing one knob file byte for byte: opened without following a final symlink,
//! its opened path checked against the roots again, and the original written back exactly.

use super::path::{default_roots, roots_text, under};
use latlab_core::error::{Error, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Opens a resolved knob without following a final symlink, and checks that the file opened
/// is really under the roots (a link swapped in between cannot redirect the write).
/// Largest knob file read (sysfs files hold at most a page; procfs sysctls a few).
pub(super) const MAX_KNOB_BYTES: u64 = 1 << 20;
pub(super) fn open_knob(real: &Path, write: bool, roots: &[PathBuf]) -> std::io::Result<File> {
    open_knob_as(real, write, false, roots)
}

pub(super) fn open_knob_as(
    real: &Path,
    write: bool,
    truncate: bool,
    roots: &[PathBuf],
) -> std::io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .truncate(truncate)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(real)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    use std::os::fd::AsRawFd;
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    if !under(&opened, roots) {
        return Err(std::io::Error::other(format!(
            "opened {}, outside {}",
            opened.display(),
            roots_text(roots)
        )));
    }
    Ok(f)
}

/// Checks that `file` (already resolved) exists and can be written, without changing it. A file
/// with no write permission bit at all is refused even for root (sysfs and procfs files mark
/// their writability that way; root could otherwise open them).
pub(crate) fn check_writable(file: &Path) -> std::result::Result<(), String> {
    check_writable_in(file, &default_roots())
}

pub(super) fn check_writable_in(file: &Path, roots: &[PathBuf]) -> std::result::Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a file", file.display()));
    }
    if meta.permissions().mode() & 0o222 == 0 {
        return Err(format!("{}: read-only", file.display()));
    }
    open_knob(file, true, roots)
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", file.display()))
}

/// Files that act when written instead of holding a value (their read-back is a menu of
/// actions, or nothing): a level written there cannot be put back.
const TRIGGERS: &[&str] = &[
    "/sys/power/state",
    "/sys/power/mem_sleep",
    "/sys/power/wakeup_count",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/vm/compact_memory",
    "/proc/sys/vm/stat_refresh",
];

/// Refuses a knob whose value could not be put back: write-only (a trigger such as
/// `vm.drop_caches`), unreadable, or a known trigger (`/sys/power/state` would suspend the
/// machine and reads back as its menu).
pub(crate) fn check_restorable(file: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let shown = file.display();
    let real = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    if TRIGGERS.iter().any(|t| real == Path::new(t)) {
        return Err(format!(
            "{shown}: a trigger (writing it acts at once), not a setting latlab could put back"
        ));
    }
    let meta = std::fs::metadata(file).map_err(|e| format!("{shown}: {e}"))?;
    if meta.permissions().mode() & 0o444 == 0 {
        return Err(format!(
            "{shown}: write-only (a trigger, not a setting): its value cannot be read to be put back"
        ));
    }
    read_knob(file, &default_roots())
        .map(|_| ())
        .map_err(|e| format!("cannot be read to be put back afterwards: {e}"))
}

pub(super) fn read_knob(real: &Path, roots: &[PathBuf]) -> Result<Vec<u8>> {
    let err = |e: std::io::Error| Error::Env(format!("{}: {e}", real.display()));
    let mut f = open_knob(real, false, roots).map_err(err)?;
    // Reads of a page at a time: some tracefs files (osnoise/cpus) refuse a read shorter than
    // their whole text with EINVAL, which std's small probe reads would meet.
    let mut v = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match f.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(err(e)),
        };
        if n == 0 || v.len() as u64 > MAX_KNOB_BYTES {
            break;
        }
        v.extend_from_slice(&buf[..n]);
    }
    if v.len() as u64 > MAX_KNOB_BYTES {
        return Err(Error::Env(format!(
            "{}: larger than {MAX_KNOB_BYTES} bytes; not a setting latlab can restore",
            real.display()
        )));
    }
    Ok(v)
}

pub(super) fn write_knob(real: &Path, value: &[u8], roots: &[PathBuf]) -> std::io::Result<()> {
    // Truncated as `echo value > file` does (sysfs and procfs ignore it; a plain file in a
    // test tree needs it).
    let mut f = open_knob_as(real, true, true, roots)?;
    // One write: sysfs and procfs take a value in a single write call.
    let n = f.write(value)?;
    if n != value.len() {
        return Err(std::io::Error::other(format!(
            "short write ({n} of {} bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// What has to be written back for a file read as `orig`: the bytes as they were, except a
/// one-line bracketed choice list (`always [madvise] never`), whose chosen entry is written.
pub(crate) fn restore_value(orig: &[u8]) -> Vec<u8> {
    if let Ok(s) = std::str::from_utf8(orig) {
        let line = s.strip_suffix('\n').unwrap_or(s);
        if !line.contains('\n') {
            if let (Some(a), Some(b)) = (line.find('['), line.find(']')) {
                if b > a && line.matches('[').count() == 1 {
                    return line.as_bytes()[a + 1..b].to_vec();
                }
            }
        }
    }
    orig.to_vec()
}

pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}
