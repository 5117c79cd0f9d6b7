//! The kernels a kexec plan boots: this machine's own (booted again at the end), each level's
//! image, initrd and command line, the check that a boot is the one asked for, and the kexec.

use crate::experiment::plan::boot::{Boot, RUNNING};
use latlab_core::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A kernel to boot: its image, its initrd (if it has one), its whole command line, and the
/// release it says it is (what `uname -r` prints once it runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Target {
    pub(super) image: PathBuf,
    pub(super) initrd: Option<PathBuf>,
    pub(super) cmdline: String,
    pub(super) release: String,
}

/// x86's COMMAND_LINE_SIZE: the kernel keeps at most this many bytes, its NUL included.
const MAX_CMDLINE: usize = 2048;

/// What this boot is: its kernel's release and command line, and its boot id.
#[derive(Debug, Clone)]
pub(super) struct Now {
    pub(super) release: String,
    pub(super) cmdline: String,
    pub(super) boot_id: String,
}

fn read(path: &str) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| Error::io(path, e))
}

/// The boot this process runs in.
pub(super) fn now() -> Result<Now> {
    Ok(Now {
        release: read("/proc/sys/kernel/osrelease")?,
        cmdline: own_words(&read("/proc/cmdline")?),
        boot_id: read("/proc/sys/kernel/random/boot_id")?,
    })
}

/// A command line without what a boot loader adds for itself (which a kexec must not pass on).
fn own_words(cmdline: &str) -> String {
    cmdline
        .split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// This machine's own kernel, as it runs now: booted again at the end of the plan, and the
/// base of every level's command line (its root, console and the rest).
pub(super) fn original(now: &Now) -> Result<Target> {
    let image = PathBuf::from(format!("/boot/vmlinuz-{}", now.release));
    if !image.is_file() {
        return Err(Error::Env(format!(
            "a [kexec] plan boots this machine's kernel again at its end, and its image {} is \
             not there (install the kernel's package, or run the plan in guests: remove [kexec])",
            image.display()
        )));
    }
    Ok(Target {
        initrd: initrd_of(&now.release),
        image,
        cmdline: now.cmdline.clone(),
        release: now.release.clone(),
    })
}

/// The initrd an installed kernel of `release` has, Debian's way.
fn initrd_of(release: &str) -> Option<PathBuf> {
    Some(PathBuf::from(format!("/boot/initrd.img-{release}"))).filter(|p| p.is_file())
}

/// What a level boots: its kernel (the running one, an installed package's, an image) with the
/// original command line and the level's own words after it (later words win).
pub(super) fn for_level(b: &Boot, original: &Target) -> Result<Target> {
    let cmdline = [original.cmdline.as_str(), b.cmdline.trim()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    if cmdline.len() >= MAX_CMDLINE {
        return Err(Error::Usage(format!(
            "kernel '{}': its command line would be {} bytes (this machine's own and the \
             level's words); an x86 kernel takes at most {} and would cut the rest",
            b.kernel,
            cmdline.len(),
            MAX_CMDLINE - 1
        )));
    }
    if b.kernel == RUNNING {
        return Ok(Target {
            cmdline,
            ..original.clone()
        });
    }
    let (image, release) = match b.kernel.strip_prefix("linux-image-") {
        Some(rel) => {
            let image = PathBuf::from(format!("/boot/vmlinuz-{rel}"));
            if !image.is_file() {
                return Err(Error::Env(format!(
                    "kernel '{}': {} is not installed here (apt-get install {})",
                    b.kernel,
                    image.display(),
                    b.kernel
                )));
            }
            (image, rel.to_string())
        }
        None => {
            let image = PathBuf::from(&b.kernel);
            let release = release_of(&image)?;
            (image, release)
        }
    };
    Ok(Target {
        initrd: initrd_of(&release),
        image,
        cmdline,
        release,
    })
}

/// The release a bzImage says it is: its setup header points at the version string
/// (`kernel_version` at 0x20e, the string 0x200 past the value).
pub(super) fn release_of(image: &Path) -> Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    let bad = || {
        Error::Usage(format!(
            "kernel '{}': not a bzImage (no version string in its header)",
            image.display()
        ))
    };
    let mut f =
        std::fs::File::open(image).map_err(|e| Error::io(image.display().to_string(), e))?;
    let mut at = [0u8; 2];
    f.seek(SeekFrom::Start(0x20e))
        .and_then(|_| f.read_exact(&mut at))
        .map_err(|_| bad())?;
    let off = u64::from(u16::from_le_bytes(at));
    if off == 0 {
        return Err(bad());
    }
    let mut s = [0u8; 128];
    f.seek(SeekFrom::Start(off + 0x200)).map_err(|_| bad())?;
    let n = f.read(&mut s).map_err(|_| bad())?;
    let text = String::from_utf8_lossy(&s[..n]);
    let release = text.split(['\0', ' ']).next().unwrap_or_default();
    if release.is_empty() || !release.chars().all(|c| c.is_ascii_graphic()) {
        return Err(bad());
    }
    Ok(release.to_string())
}

/// Whether this boot is the one `want` asked for: its release, and every word of `words` (the
/// level's own command line; for the original kernel, the whole of it) on its command line.
pub(super) fn arrived(want: &Target, words: &str, now: &Now) -> std::result::Result<(), String> {
    if now.release != want.release {
        return Err(format!(
            "this boot runs kernel {}, not {} (did the level's kernel fail, and the firmware \
             boot its default?)",
            now.release, want.release
        ));
    }
    let have: Vec<&str> = now.cmdline.split_whitespace().collect();
    let missing: Vec<&str> = words
        .split_whitespace()
        .filter(|w| !have.contains(w))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "this boot's command line lacks '{}' (did the level's boot fail, and the firmware \
             boot its default?)",
            missing.join(" ")
        ));
    }
    Ok(())
}

/// What booting by kexec needs, checked before a plan starts: root, the kexec tool, a kernel
/// that allows loading one.
pub(super) fn preflight() -> Result<()> {
    if latlab_core::sys::sched::euid() != 0 {
        return Err(Error::Env(
            "a [kexec] plan boots kernels on this machine: run it as root".into(),
        ));
    }
    if read("/proc/sys/kernel/kexec_load_disabled").is_ok_and(|v| v == "1") {
        return Err(Error::Env(
            "this kernel refuses to load another (kernel.kexec_load_disabled = 1, until the \
             next boot): run the plan in guests (remove [kexec])"
                .into(),
        ));
    }
    if which("kexec").is_none() {
        return Err(Error::Env(
            "a [kexec] plan needs the kexec tool (Debian: apt-get install kexec-tools; say no \
             to letting it handle reboots)"
                .into(),
        ));
    }
    Ok(())
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// How a kexec went when it returned.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Booting {
    /// systemd shuts the machine down and then boots the loaded kernel; this process ends.
    Queued,
}

/// Loads `t` and boots it: through systemd (an orderly shutdown first) where it is the init,
/// else at once (`kexec -e`, after a sync), which returns only when it failed.
pub(super) fn boot(t: &Target) -> Result<Booting> {
    let kexec = which("kexec").ok_or_else(|| Error::Env("kexec: not found".into()))?;
    let load = |file_syscall: bool| {
        let mut c = Command::new(&kexec);
        if file_syscall {
            c.arg("-s");
        }
        c.arg("-l").arg(&t.image);
        if let Some(i) = &t.initrd {
            c.arg(format!("--initrd={}", i.display()));
        }
        c.arg(format!("--command-line={}", t.cmdline));
        c.output()
    };
    // kexec_load first; kexec_file_load where a locked-down kernel allows only signed images.
    let out = load(false).map_err(|e| Error::Env(format!("kexec: {e}")))?;
    if !out.status.success() {
        let again = load(true).map_err(|e| Error::Env(format!("kexec: {e}")))?;
        if !again.status.success() {
            return Err(Error::Env(format!(
                "kexec -l {} failed: {}",
                t.image.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    latlab_core::sys::mount::sync_all();
    if Path::new("/run/systemd/system").is_dir() {
        let s = Command::new("systemctl")
            .args(["--no-block", "kexec"])
            .status()
            .map_err(|e| Error::Env(format!("systemctl kexec: {e}")))?;
        if s.success() {
            return Ok(Booting::Queued);
        }
        return Err(Error::Env(format!("systemctl kexec: {s}")));
    }
    let out = Command::new(&kexec)
        .arg("-e")
        .output()
        .map_err(|e| Error::Env(format!("kexec -e: {e}")))?;
    Err(Error::Env(format!(
        "kexec -e returned ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now(release: &str, cmdline: &str) -> Now {
        Now {
            release: release.into(),
            cmdline: cmdline.into(),
            boot_id: "b".into(),
        }
    }

    #[test]
    fn a_level_adds_its_words_after_the_machines_own() {
        let orig = Target {
            image: "/boot/vmlinuz-6.1.0-1-amd64".into(),
            initrd: Some("/boot/initrd.img-6.1.0-1-amd64".into()),
            cmdline: "root=/dev/vda1 ro quiet".into(),
            release: "6.1.0-1-amd64".into(),
        };
        let b = Boot {
            kernel: RUNNING.into(),
            cmdline: " preempt=full ".into(),
        };
        let t = for_level(&b, &orig).unwrap();
        assert_eq!(t.cmdline, "root=/dev/vda1 ro quiet preempt=full");
        assert_eq!(
            (t.image, t.initrd),
            (orig.image.clone(), orig.initrd.clone())
        );
        let missing = Boot {
            kernel: "linux-image-0.0.0-none".into(),
            cmdline: String::new(),
        };
        let e = for_level(&missing, &orig).unwrap_err().to_string();
        assert!(
            e.contains("/boot/vmlinuz-0.0.0-none is not installed"),
            "{e}"
        );
    }

    #[test]
    fn a_boot_is_the_one_asked_for_only_with_its_release_and_words() {
        let want = Target {
            image: "/i".into(),
            initrd: None,
            cmdline: "ro clocksource=acpi_pm".into(),
            release: "6.1.0-1-amd64".into(),
        };
        assert!(arrived(
            &want,
            "clocksource=acpi_pm",
            &now("6.1.0-1-amd64", "ro clocksource=acpi_pm")
        )
        .is_ok());
        let e = arrived(&want, "clocksource=acpi_pm", &now("6.1.0-1-amd64", "ro")).unwrap_err();
        assert!(e.contains("lacks 'clocksource=acpi_pm'"), "{e}");
        let e = arrived(&want, "", &now("6.18.0", "ro clocksource=acpi_pm")).unwrap_err();
        assert!(e.contains("runs kernel 6.18.0, not 6.1.0-1-amd64"), "{e}");
    }

    #[test]
    fn the_boot_loaders_words_are_not_passed_on() {
        assert_eq!(
            own_words("BOOT_IMAGE=/vmlinuz-6 root=/dev/sda1  initrd=/x ro"),
            "root=/dev/sda1 ro"
        );
    }

    #[test]
    fn a_release_is_read_from_a_bzimage_header() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bz");
        let mut img = vec![0u8; 0x400];
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        img[0x300..0x300 + 20].copy_from_slice(b"6.1.0-9-amd64 (debia");
        std::fs::write(&p, &img).unwrap();
        assert_eq!(release_of(&p).unwrap(), "6.1.0-9-amd64");
        std::fs::write(&p, b"not a kernel").unwrap();
        let e = release_of(&p).unwrap_err().to_string();
        assert!(e.contains("not a bzImage"), "{e}");
    }
}
