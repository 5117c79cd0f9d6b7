//! A plan's boot factor: levels that are kernels (with a command line), each run of a level a
//! fresh boot of its kernel in a guest, because boot-to-boot variation (memory layout, IRQ
//! placement, which CPU got which timer) is part of what a kernel comparison must replicate.

use super::{Factor, Plan};
use serde::Deserialize;
use std::path::Path;

/// How a boot factor's kernels are booted (`[guest]`): QEMU with the host's root shared
/// read-only (scripts/guest.sh, built into latlab).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Guest {
    /// vCPUs of each guest.
    #[serde(default = "two")]
    pub(crate) cpus: u32,
    /// Memory of each guest (`512M`, `2G`).
    #[serde(default = "two_gib")]
    pub(crate) memory: String,
    /// Seconds one boot may take, measurement included, before it is ended and its repeat
    /// marked failed.
    #[serde(default = "ten_minutes")]
    pub(crate) timeout: u64,
    /// `auto` (KVM when a probe boot works, else TCG), `kvm` or `tcg`.
    #[serde(default = "auto")]
    pub(crate) accel: String,
}

fn two() -> u32 {
    2
}
fn two_gib() -> String {
    "2G".into()
}
fn ten_minutes() -> u64 {
    600
}
fn auto() -> String {
    "auto".into()
}

impl Default for Guest {
    fn default() -> Self {
        Guest {
            cpus: two(),
            memory: two_gib(),
            timeout: ten_minutes(),
            accel: auto(),
        }
    }
}

/// Booting the levels' kernels on this machine by kexec (`[kexec]`): the plan's state kept
/// across the boots, the plan resumed in each (`latlab run PLAN --resume-or-start`, by hand or
/// by contrib/latlab-kexec.service), this machine's own kernel booted again at the end.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Kexec {
    /// Seconds from the kexec to the plan resuming in the booted kernel: a boot that comes
    /// back later (or in another kernel) marks its repeat failed.
    #[serde(default = "ten_minutes")]
    pub(crate) timeout: u64,
    /// Where the plan's state lives across boots (relative: to the plan file's directory).
    #[serde(default = "state_dir")]
    pub(crate) state: std::path::PathBuf,
}

fn state_dir() -> std::path::PathBuf {
    "/var/lib/latlab/kexec".into()
}

/// The level kernel that is this machine's own: its runs are made here, without a boot.
pub(crate) const RUNNING: &str = "running";

/// What one run of a boot level boots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Boot {
    /// `rt`, `generic`, a `linux-image-*` package or an image's path (never `running`).
    pub(crate) kernel: String,
    /// Its command line (may be empty).
    pub(crate) cmdline: String,
}

impl Factor {
    /// The kernel a level boots: its entry in `kernel`, else its name.
    pub(crate) fn kernel_of<'a>(&'a self, level: &'a str) -> &'a str {
        self.kernel.get(level).map_or(level, String::as_str)
    }

    /// A boot factor's own checks: kernels that can be had, one-line command lines, and no
    /// setting written on this machine (it would not be in force in the booted kernel).
    fn check_boot(&self, kexec: bool) -> std::result::Result<(), String> {
        let f = self;
        if !f.boot {
            if !f.kernel.is_empty() || !f.cmdline.is_empty() {
                return Err(format!(
                    "factor '{}': kernel and cmdline need boot = true (each run a fresh boot)",
                    f.name
                ));
            }
            return Ok(());
        }
        if f.knob.is_some() || f.sysctl.is_some() || f.governor {
            return Err(format!(
                "factor '{}': a boot factor's levels are kernels, not values of a setting",
                f.name
            ));
        }
        for l in &f.levels {
            let k = f.kernel_of(l);
            let known = matches!(k, "rt" | "generic" | RUNNING)
                || (k.starts_with("linux-image-")
                    && k[12..]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".+-".contains(c)));
            // An image is named by an absolute path, or one beside the plan (made absolute
            // when the plan was read), never by one relative to wherever latlab runs.
            let image = Path::new(k).is_absolute() && Path::new(k).is_file();
            if !known && !image {
                return Err(format!(
                    "factor '{}', level '{l}': kernel '{k}' is not rt, generic, a linux-image-* \
                     package, running or a kernel image file (a relative path: beside the plan)",
                    f.name
                ));
            }
            if let Some(c) = f.cmdline.get(l) {
                if c.len() >= 2048 {
                    return Err(format!(
                        "factor '{}', level '{l}': its cmdline is {} bytes; a kernel takes at \
                         most 2047",
                        f.name,
                        c.len()
                    ));
                }
                if c.chars().any(char::is_control) {
                    return Err(format!(
                        "factor '{}', level '{l}': its cmdline is one line of text",
                        f.name
                    ));
                }
                if k == RUNNING && !c.trim().is_empty() && !kexec {
                    return Err(format!(
                        "factor '{}', level '{l}': the running kernel's command line cannot be \
                         changed without a boot; give the level a kernel to boot (or boot \
                         it again by kexec: [kexec])",
                        f.name
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Plan {
    /// Makes the plan's paths (boot levels' kernel images, `kexec.state`) relative to `dir`,
    /// the plan file's directory, as a plan is read from wherever it is run.
    pub(super) fn resolve_paths(&mut self, dir: &Path) {
        for f in self.factors.iter_mut().filter(|f| f.boot) {
            for l in f.levels.clone() {
                let k = f.kernel_of(&l);
                let named =
                    matches!(k, "rt" | "generic" | RUNNING) || k.starts_with("linux-image-");
                let beside = dir.join(k);
                if !named && !k.is_empty() && Path::new(k).is_relative() && beside.is_file() {
                    f.kernel.insert(l, beside.display().to_string());
                }
            }
        }
        if let Some(k) = &mut self.kexec {
            if k.state.is_relative() {
                k.state = dir.join(&k.state);
            }
        }
    }

    /// The index of the plan's boot factor, if it has one.
    pub(crate) fn boot_factor(&self) -> Option<usize> {
        self.factors.iter().position(|f| f.boot)
    }

    /// What a run of `combo` boots in a guest; None when the plan has no boot factor, boots
    /// by kexec, or the level is the running kernel.
    pub(crate) fn boot_for(&self, combo: &[usize]) -> Option<Boot> {
        if self.kexec.is_some() {
            return None;
        }
        self.level_boot(combo).filter(|b| b.kernel != RUNNING)
    }

    /// The kernel and command line of `combo`'s boot level (`running` included: a kexec plan
    /// boots it afresh too); None without a boot factor.
    pub(crate) fn level_boot(&self, combo: &[usize]) -> Option<Boot> {
        let i = self.boot_factor()?;
        let f = &self.factors[i];
        let level = &f.levels[combo[i]];
        Some(Boot {
            kernel: f.kernel_of(level).to_string(),
            cmdline: f.cmdline.get(level).cloned().unwrap_or_default(),
        })
    }

    /// At most one boot factor, sound levels, a sound `[guest]`, and no factor writing a
    /// setting of this machine beside it.
    pub(super) fn check_boots(&self) -> std::result::Result<(), String> {
        for f in &self.factors {
            f.check_boot(self.kexec.is_some())?;
        }
        let boots: Vec<&str> = self
            .factors
            .iter()
            .filter(|f| f.boot)
            .map(|f| f.name.as_str())
            .collect();
        if boots.len() > 1 {
            return Err(format!(
                "factors {} are all boot factors: a run boots one kernel",
                boots.join(", ")
            ));
        }
        if boots.is_empty() {
            if self.kexec.is_some() {
                return Err(
                    "[kexec] boots the levels of a boot factor; the plan has none \
                            (a factor with boot = true)"
                        .into(),
                );
            }
            return Ok(());
        }
        if let Some(k) = &self.kexec {
            self.check_kexec(k)?;
        }
        if let Some(f) = self
            .factors
            .iter()
            .find(|f| f.knob.is_some() || f.sysctl.is_some() || f.governor)
        {
            return Err(format!(
                "factor '{}' writes a setting of this machine, which a booted kernel would not \
                 have: give it on the boot factor's cmdline, or as a pre command",
                f.name
            ));
        }
        let g = &self.guest;
        if g.cpus == 0 || g.cpus > 256 {
            return Err(format!("guest.cpus {}: 1 to 256", g.cpus));
        }
        let mem_ok = g.memory.len() > 1
            && g.memory.ends_with(['M', 'G'])
            && g.memory[..g.memory.len() - 1]
                .chars()
                .all(|c| c.is_ascii_digit())
            && !g.memory.starts_with('0');
        if !mem_ok {
            return Err(format!(
                "guest.memory '{}': a size such as 512M or 2G",
                g.memory
            ));
        }
        if g.timeout == 0 || g.timeout > 24 * 3600 {
            return Err(format!("guest.timeout {}: seconds, 1 to 86400", g.timeout));
        }
        if !["auto", "kvm", "tcg"].contains(&g.accel.as_str()) {
            return Err(format!("guest.accel '{}': auto, kvm or tcg", g.accel));
        }
        Ok(())
    }

    /// A kexec plan's kernels are this machine's: `running`, an installed `linux-image-*`
    /// package or an image file (Debian's `rt` and `generic` are packages to fetch, which
    /// only a guest boots).
    fn check_kexec(&self, k: &Kexec) -> std::result::Result<(), String> {
        if k.timeout == 0 || k.timeout > 24 * 3600 {
            return Err(format!("kexec.timeout {}: seconds, 1 to 86400", k.timeout));
        }
        if k.state.as_os_str().is_empty() || k.state.as_os_str().as_encoded_bytes().contains(&0) {
            return Err("kexec.state: a directory's path".into());
        }
        let f = &self.factors[self.boot_factor().expect("checked by the caller")];
        for l in &f.levels {
            let kernel = f.kernel_of(l);
            if matches!(kernel, "rt" | "generic") {
                return Err(format!(
                    "factor '{}', level '{l}': kernel '{kernel}' is a Debian package a guest \
                     fetches; a [kexec] plan boots this machine's kernels: running, an \
                     installed linux-image-RELEASE or an image file",
                    f.name
                ));
            }
        }
        Ok(())
    }
}
