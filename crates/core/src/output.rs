//! Where results leave the process: text to a stdout that may be closed (EPIPE is not an
//! error), notes to stderr that never panic, and files written atomically without following a
//! symlink someone planted.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a file type is, in words, for messages ("a FIFO", "a directory" ...).
pub(crate) fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Writes `text` to stdout and flushes. A reader that went away (EPIPE, e.g. `| head -1` or
/// `| true`) is not an error: the result was already saved.
pub fn stdout(text: &str) -> std::io::Result<()> {
    to(&mut std::io::stdout().lock(), text)
}

/// Writes `text` to `o` (stdout, or a test's writer) and flushes; a reader that went away
/// (EPIPE) is not an error.
pub fn to(o: &mut dyn Write, text: &str) -> std::io::Result<()> {
    match o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// True for characters a terminal or a page would act on rather than show: C0 controls but
/// newline and tab (ANSI/OSC escapes start with ESC), DEL, C1 controls, and the bidirectional
/// and invisible format characters that reorder or hide text (U+202E and friends).
pub fn is_hidden_control(c: char) -> bool {
    let u = c as u32;
    (u < 0x20 && c != '\n' && c != '\t')
        || (0x7f..=0x9f).contains(&u)
        || matches!(u, 0x061c | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2069 | 0xfeff)
}

/// `text` safe to print on a terminal: every [`is_hidden_control`] character shown as an
/// escape (`\u{1b}`), so a task or tag named with ANSI/OSC sequences cannot move the cursor,
/// retitle the terminal or reorder the line.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_hidden_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut o = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden_control(c) {
            o.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            o.push(c);
        }
    }
    std::borrow::Cow::Owned(o)
}

/// Longest error message printed whole (bytes).
pub(crate) const MAX_MESSAGE: usize = 4096;

/// `text` cut to [`MAX_MESSAGE`] bytes (at a character boundary) with how much was left out:
/// a parser's message quotes the input it refused, which can be a 20 MB string.
pub fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_MESSAGE {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}… ({} more bytes of this message not shown)",
        &text[..end],
        text.len() - end
    ))
}

/// `text` on one line: a line break or tab in it (a task named `a\nb` by `prctl`, a host or
/// tag named so) is shown as an escape, so it cannot start a line or a row of its own in a
/// table ([`printable`], applied to whole tables, keeps line breaks).
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r', '\t']) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(
        text.replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t"),
    )
}

/// Writes `text` to stderr, ignoring every error (a closed stderr must not stop a run).
pub fn stderr(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.flush();
}

/// Prints a line to stderr through [`stderr`] (never panics, unlike `eprintln!`).
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::output::stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// The directory a file at `path` lives in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks, before any time is spent measuring, that a file can later be written at `path`
/// atomically: the directory exists and takes a new file, and `path` is not a directory or a
/// FIFO (writing into a FIFO waits for a reader that may never come). A device (`/dev/null`)
/// is written in place and must open for writing.
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    check_output(path, true)
}

/// [`check_writable`], with devices refused unless `devices`: a file latlab names others
/// after (`--trace-save X` also writes `X-spike-N.dat` beside it) must be a real file.
pub fn check_output(path: &Path, devices: bool) -> std::io::Result<()> {
    let refuse = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}, not a file latlab writes"),
        )
    };
    if path.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if let Ok(m) = std::fs::metadata(path) {
        let t = m.file_type();
        if t.is_fifo() || t.is_socket() {
            return Err(refuse(kind_of(&t)));
        }
        if let Some(why) = not_output(path, &t) {
            return Err(refuse(&why));
        }
        if !t.is_file() {
            if !devices {
                return Err(refuse(kind_of(&t)));
            }
            // A device is written in place: it must open for writing (without waiting).
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(path)?;
            return Ok(());
        }
    }
    let dir = parent_of(path);
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no directory {}", dir.display()),
        ));
    }
    let t = tempfile::Builder::new()
        .prefix(".latlab-")
        .tempfile_in(&dir)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {}", dir.display(), e.kind()),
            )
        })?;
    drop(t);
    Ok(())
}

/// Why an existing `path` (of type `t`) must never be written as output: a block device (its
/// disk), or a file of the kernel's settings and interfaces (what is under /proc and /sys,
/// where the path leads: latlab changes settings only through its plans, journaled and
/// restored). None for a file, a character device (`/dev/null`, a terminal) and the rest.
fn not_output(path: &Path, t: &std::fs::FileType) -> Option<String> {
    if t.is_block_device() {
        return Some("a block device (writing would overwrite what it holds)".into());
    }
    let real = std::fs::canonicalize(path).ok()?;
    let fs = if real.starts_with("/proc") {
        "proc"
    } else if real.starts_with("/sys") {
        // sysfs, and what is mounted under it: tracefs, debugfs, cgroup, configfs, bpf...
        "sysfs"
    } else {
        return None;
    };
    Some(format!("a file of the kernel's {fs} (its settings and interfaces are changed only by plans, journaled and restored)"))
}

/// Writes `bytes` to `path` atomically: a new file (O_EXCL, so never through a planted
/// symlink) in the same directory, synced, then renamed over `path` (a symlink at `path` is
/// replaced, not followed). Readers see the old content or the new, never a truncated file.
///
/// A path that names something other than a regular file or a symlink (`/dev/null`, a FIFO,
/// a terminal) is written in place, never replaced: renaming over `/dev/full` as root would
/// turn a device node into a file. So is a symlink that names a stream or a device
/// (`/dev/stdout`, see [`through_link`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(written) = through_link(path, bytes) {
        return written;
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let t = m.file_type();
        // (A symlink is replaced, never written through.)
        if let Some(why) = (!t.is_symlink()).then(|| not_output(path, &t)).flatten() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{why}, not a file latlab writes"),
            ));
        }
        if !t.is_file() && !t.is_symlink() {
            if t.is_dir() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a directory",
                ));
            }
            if t.is_fifo() || t.is_socket() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{}, not a file latlab writes", kind_of(&t)),
                ));
            }
            let mut f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(path)?;
            return f.write_all(bytes).and_then(|_| f.flush());
        }
    }
    let mut t = tempfile::Builder::new()
        .prefix(".latlab-")
        .tempfile_in(parent_of(path))?;
    t.write_all(bytes)?;
    t.as_file().sync_data()?;
    use std::os::unix::fs::PermissionsExt;
    t.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    t.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `bytes` through `path` when it is a symlink that is a system's name for a stream or
/// a device rather than a file of the user's: one in /dev (`/dev/stdout`, `/dev/stderr`,
/// `/dev/fd/N`), one into /proc (`/proc/self/fd/1`), or one to anything but a regular file.
/// Replacing such a link would break it for every program (as root, `/dev/stdout` would
/// become a file) and write nothing where it leads. A character device or a terminal is
/// written in place; a regular file (an output redirected with `>` or `>>`) is appended to;
/// a FIFO, socket, directory, block device or kernel file is refused. None: not such a link.
fn through_link(path: &Path, bytes: &[u8]) -> Option<std::io::Result<()>> {
    let link = std::fs::read_link(path).ok()?;
    let target = std::fs::metadata(path);
    let in_dev = std::fs::canonicalize(parent_of(path)).is_ok_and(|d| d.starts_with("/dev"));
    let into_proc = link.starts_with("/proc/");
    let regular = target.as_ref().is_ok_and(|m| m.is_file());
    if regular && !in_dev && !into_proc {
        return None;
    }
    let refuse = |what: String| {
        Some(Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}, not a file latlab writes"),
        )))
    };
    let t = match target {
        Ok(m) => m.file_type(),
        // A dangling link of the system's is not replaced by a file either.
        Err(e) if in_dev || into_proc => return Some(Err(e)),
        Err(_) => return None,
    };
    if t.is_dir() {
        return Some(Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    if t.is_fifo() || t.is_socket() {
        return refuse(format!("{} (through {})", kind_of(&t), link.display()));
    }
    if let Some(why) = not_output(path, &t) {
        return refuse(why);
    }
    let mut o = OpenOptions::new();
    o.write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NONBLOCK);
    if t.is_file() {
        o.append(true);
    }
    Some(
        o.open(path)
            .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush())),
    )
}

/// As [`write_atomic`] for a new regular file, written in 1 MiB pieces and cut short once
/// `stop()` says so (a trace window being written when the run ends): returns how many bytes
/// the file holds.
pub fn write_atomic_until(
    path: &Path,
    bytes: &[u8],
    stop: &dyn Fn() -> bool,
) -> std::io::Result<usize> {
    let mut t = tempfile::Builder::new()
        .prefix(".latlab-")
        .tempfile_in(parent_of(path))?;
    let mut written = 0;
    for piece in bytes.chunks(1 << 20) {
        if stop() {
            break;
        }
        t.write_all(piece)?;
        written += piece.len();
    }
    t.as_file().sync_data()?;
    use std::os::unix::fs::PermissionsExt;
    t.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    t.persist(path).map_err(|e| e.error)?;
    Ok(written)
}

/// Creates (or truncates) `path` for writing without following a symlink in its last
/// component (O_NOFOLLOW): for logs that must be readable at their final path while written.
/// The file is opened non-blocking: a FIFO without a reader fails within a second (ENXIO)
/// instead of holding latlab at `open`, and writes into a FIFO whose reader stalls return `WouldBlock`
/// (see [`write_patiently`]). A directory or a socket is refused.
pub(crate) fn create_nofollow(path: &Path) -> std::io::Result<File> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let t = m.file_type();
        if t.is_dir() || t.is_socket() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{}, not a file latlab writes", kind_of(&t)),
            ));
        }
        if let Some(why) = not_output(path, &t) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{why}, not a file latlab writes"),
            ));
        }
    }
    let open = || {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .mode(0o644)
            .open(path)
    };
    // A FIFO whose reader is about to open it is given a moment (at most a second).
    let t0 = std::time::Instant::now();
    loop {
        match open() {
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if t0.elapsed() >= std::time::Duration::from_secs(1) {
                    return Err(std::io::Error::new(
                        e.kind(),
                        "a FIFO nobody reads (open it for reading first)",
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// Writes all of `bytes` to a non-blocking `out`, waiting while it would block (a FIFO whose
/// reader is slow) but giving up with `TimedOut` once `give_up()` says so: a reader that
/// stopped reading cannot hold latlab past its end.
pub(crate) fn write_patiently(
    out: &mut impl Write,
    mut bytes: &[u8],
    give_up: &dyn Fn() -> bool,
) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match out.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if give_up() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "its reader stopped reading",
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Quotes a word for a POSIX shell, only when it needs it (a path in a command to copy).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%^".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_long_message_is_cut_at_a_character_and_says_how_much_is_left_out() {
        use super::{bounded, MAX_MESSAGE};
        assert_eq!(bounded("short"), "short");
        let long = format!("invalid type: string \"{}\"", "é".repeat(10_000));
        let b = bounded(&long);
        assert!(b.len() < MAX_MESSAGE + 64, "{}", b.len());
        assert!(b.ends_with(" more bytes of this message not shown)"), "{b}");
        assert!(b.starts_with("invalid type: string \"éé"));
    }

    #[test]
    fn a_link_that_names_a_stream_or_device_is_written_through_never_replaced() {
        use std::os::fd::AsRawFd;
        let d = tempfile::tempdir().unwrap();
        // `/dev/stdout` of a process whose output goes to a file: appended to, link kept.
        let out = d.path().join("out.txt");
        std::fs::write(&out, "before\n").unwrap();
        let f = OpenOptions::new().append(true).open(&out).unwrap();
        let so = d.path().join("so");
        std::os::unix::fs::symlink(format!("/proc/self/fd/{}", f.as_raw_fd()), &so).unwrap();
        write_atomic(&so, b"result\n").unwrap();
        assert!(std::fs::symlink_metadata(&so)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "before\nresult\n");
        // A link to a device: written in place.
        let null = d.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        write_atomic(&null, b"x").unwrap();
        assert!(std::fs::symlink_metadata(&null)
            .unwrap()
            .file_type()
            .is_symlink());
        // A link into /proc that leads nowhere is an error, not a new file.
        let gone = d.path().join("gone");
        std::os::unix::fs::symlink("/proc/self/fd/987654", &gone).unwrap();
        assert!(write_atomic(&gone, b"x").is_err());
        assert!(std::fs::symlink_metadata(&gone)
            .unwrap()
            .file_type()
            .is_symlink());
        // A user's link to a file of theirs is replaced, never followed (the file untouched).
        let theirs = d.path().join("theirs.txt");
        std::fs::write(&theirs, "keep").unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
    }

    #[test]
    fn block_devices_and_kernel_files_are_no_output() {
        let t = |p: &str| {
            let m = std::fs::metadata(p).unwrap();
            super::not_output(Path::new(p), &m.file_type())
        };
        assert!(t("/proc/sys/kernel/domainname")
            .unwrap()
            .contains("kernel's proc"));
        assert!(t("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap()
            .contains("kernel's sysfs"));
        assert_eq!(t("/dev/null"), None);
        let f = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(t(f.path().to_str().unwrap()), None);
        use std::os::unix::fs::FileTypeExt;
        if let Some(b) = std::fs::read_dir("/dev")
            .unwrap()
            .flatten()
            .find(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        {
            let p = b.path();
            assert!(t(p.to_str().unwrap()).unwrap().contains("block device"));
        }
        // Refused before anything is written, by every way output is written.
        let e = super::write_atomic(Path::new("/proc/sys/kernel/domainname"), b"x").unwrap_err();
        assert!(e.to_string().contains("kernel's proc"), "{e}");
        let e = super::create_nofollow(Path::new("/proc/sys/kernel/domainname")).unwrap_err();
        assert!(e.to_string().contains("kernel's proc"), "{e}");
    }
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(printable("a\tb\n"), "a\tb\n");
        assert_eq!(printable("x\x1b]0;pwn\x07y"), "x\\u{1b}]0;pwn\\u{7}y");
        assert_eq!(printable("host\u{202e}gpj"), "host\\u{202e}gpj");
    }

    #[test]
    fn atomic_write_replaces_a_planted_symlink_instead_of_following_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_atomic(&out, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
    }

    #[test]
    fn device_nodes_are_written_in_place_never_replaced() {
        let null = Path::new("/dev/null");
        check_writable(null).unwrap();
        write_atomic(null, b"x").unwrap();
        assert!(std::fs::metadata(null)
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn nofollow_create_refuses_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.path().join("log");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        assert!(create_nofollow(&out).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn check_writable_names_directories_and_missing_parents() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_writable(d.path()).is_err());
        assert!(check_writable(&d.path().join("no/such/x.json")).is_err());
        assert!(check_writable(&d.path().join("x.json")).is_ok());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
