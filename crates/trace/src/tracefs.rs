//! tracefs as latlab uses it: found (or mounted) under an injectable root, one private
//! instance `instances/latlab-<pid>` per run with its own buffer, CPU mask, clock and events,
//! removed on drop and journaled on disk first so `latlab restore` removes it after a SIGKILL.
//! The top-level buffer, which other tools may be using, is never touched.

use super::event::Decoder;
pub(super) use super::files::{poke, remove_instance};
use super::format::{parse_format, parse_header_page, PageHeader};
use super::lifecycle;
use latlab_core::error::{Error, Result};
use std::path::{Path, PathBuf};

/// A failure at tracefs file `p`, named with what asked for the tracing.
fn at(p: &Path, e: impl std::fmt::Display) -> Error {
    Error::Env(format!("{}: {}: {e}", crate::who(), p.display()))
}

/// Events attribution needs; each must exist (exit 3 naming the one missing).
pub(crate) const REQUIRED: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("timer", "hrtimer_expire_entry"),
    ("timer", "hrtimer_expire_exit"),
];

/// Events that name the culprits' commands, traced on every CPU in a second instance
/// (`latlab-<pid>-procs`) when the kernel has them (exits: to forget tasks long gone).
pub(crate) const PROC_EVENTS: &[&str] = &[
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
];

/// Suffix of the process-events instance.
pub(crate) const PROCS_SUFFIX: &str = "-procs";

/// Suffix of `latlab timerlat`'s instance (the kernel's timerlat tracer runs in it).
pub const TIMERLAT_SUFFIX: &str = "-timerlat";

/// Suffix of `latlab noise --engine osnoise|hwnoise`'s instance.
pub const OSNOISE_SUFFIX: &str = "-osnoise";

/// An instance name without the suffix of a second instance of one process, if it has one.
pub(super) fn without_suffix(name: &str) -> &str {
    [PROCS_SUFFIX, TIMERLAT_SUFFIX, OSNOISE_SUFFIX]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name)
}

/// Where tracefs is mounted in the real system when latlab mounts it.
pub(crate) const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// A tracefs tree (the real one, or a fake one in tests).
#[derive(Debug, Clone)]
pub struct TraceFs {
    /// Its root directory.
    pub root: PathBuf,
}

/// Reads a tracefs text file with large reads: `events/header_page` answers a short first
/// read and then nothing, so std's small probe read would cut it.
pub fn read(p: &Path) -> Result<String> {
    use std::io::Read;
    let err = |e: std::io::Error| at(p, e);
    let mut f = std::fs::File::open(p).map_err(err)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = f.read(&mut buf).map_err(err)?;
        if n == 0 || out.len() > (1 << 20) {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(out).map_err(|_| at(p, "not text"))
}

fn write(p: &Path, v: &str) -> Result<()> {
    std::fs::write(p, v).map_err(|e| {
        Error::Env(format!(
            "{}: {}: write '{v}': {e}",
            crate::who(),
            p.display()
        ))
    })
}

/// The hex `tracing_cpumask` text for `cpus` (32-bit groups, comma-separated, highest first).
pub(crate) fn cpumask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c / 32] |= 1 << (c % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl TraceFs {
    /// The system's tracefs: where /proc/mounts says it is, else mounted at
    /// [`DEFAULT_MOUNT`] (and left mounted: see `lifecycle`). Mount decisions are serialised
    /// by a lock in state directory `dir`.
    pub fn system(dir: &Path) -> Result<TraceFs> {
        let root = lifecycle::acquire(
            dir,
            Path::new(DEFAULT_MOUNT),
            latlab_core::sys::mount::mount_tracefs,
            lifecycle::mounted_tracefs,
        )?;
        Ok(TraceFs { root })
    }

    /// The page layout and a decoder for every event latlab enables; a missing required
    /// event is exit 3 naming it. Returns the `system/event` names found.
    pub(crate) fn layouts(&self) -> Result<(PageHeader, Decoder, Vec<String>)> {
        let ev = self.root.join("events");
        let hp = ev.join("header_page");
        let header = parse_header_page(&read(&hp)?).map_err(|e| at(&hp, e))?;
        let mut dec = Decoder::default();
        let mut names = Vec::new();
        let mut learn = |sys: &str, name: &str, dec: &mut Decoder| -> Result<()> {
            let p = ev.join(sys).join(name).join("format");
            let f = parse_format(&read(&p)?).map_err(|e| at(&p, e))?;
            dec.learn(sys, &f).map_err(|e| at(&p, e))?;
            names.push(format!("{sys}/{name}"));
            Ok(())
        };
        for (sys, name) in REQUIRED {
            if !ev.join(sys).join(name).is_dir() {
                return Err(Error::Env(format!(
                    "{}: the kernel has no {sys}:{name} tracepoint ({} is missing)",
                    crate::who(),
                    ev.join(sys).join(name).display()
                )));
            }
            learn(sys, name, &mut dec)?;
        }
        // Interrupt vectors (x86): every *_entry that has its *_exit.
        if let Ok(rd) = std::fs::read_dir(ev.join("irq_vectors")) {
            let mut v: Vec<String> = rd
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with("_entry"))
                .collect();
            v.sort();
            for n in v {
                let exit = format!("{}_exit", n.trim_end_matches("_entry"));
                if ev.join("irq_vectors").join(&exit).is_dir() {
                    learn("irq_vectors", &n, &mut dec)?;
                    learn("irq_vectors", &exit, &mut dec)?;
                }
            }
        }
        // NMIs (x86), counted per spike where the kernel has the event.
        if ev.join("nmi/nmi_handler").is_dir() {
            learn("nmi", "nmi_handler", &mut dec)?;
        }
        Ok((header, dec, names))
    }

    /// Learns the process events ([`PROC_EVENTS`]) into `dec`
    /// where the kernel has them; returns the ones found, for [`TraceFs::create_instance`].
    pub(crate) fn proc_events(&self, dec: &mut Decoder) -> Result<Vec<String>> {
        self.optional_events(dec, "sched", PROC_EVENTS)
    }

    /// Learns the events `system/names` into `dec` where the kernel has them (a missing one
    /// is skipped); returns the `system/name`s found.
    pub(crate) fn optional_events(
        &self,
        dec: &mut Decoder,
        system: &str,
        names: &[&str],
    ) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for name in names {
            let p = self
                .root
                .join("events")
                .join(system)
                .join(name)
                .join("format");
            if !p.exists() {
                continue;
            }
            let f = parse_format(&read(&p)?).map_err(|e| at(&p, e))?;
            dec.learn(system, &f).map_err(|e| at(&p, e))?;
            out.push(format!("{system}/{name}"));
        }
        Ok(out)
    }

    /// Learns `ftrace/kernel_stack` (what a `stacktrace` trigger records) into `dec`.
    pub(crate) fn stack_event(&self, dec: &mut Decoder) -> Result<()> {
        let p = self.root.join("events/ftrace/kernel_stack/format");
        let f = parse_format(&read(&p)?)
            .map_err(|e| Error::Env(format!("--trace-stacks: {}: {e}", p.display())))?;
        dec.learn("ftrace", &f)
            .map_err(|e| Error::Env(format!("--trace-stacks: {}: {e}", p.display())))
    }

    /// Makes `inst` record a kernel stack whenever a task named one of `comms` is woken.
    pub(crate) fn stack_trigger(&self, inst: &Instance, comms: &[String]) -> Result<()> {
        let filter: Vec<String> = comms.iter().map(|c| format!("comm == \"{c}\"")).collect();
        let t = inst.dir.join("events/sched/sched_waking/trigger");
        write(&t, &format!("stacktrace if {}", filter.join(" || "))).map_err(|e| {
            Error::Env(format!(
                "--trace-stacks: {e} (needs the kernel's event triggers)"
            ))
        })
    }

    /// Creates the private instance `latlab-<pid><suffix>` for `cpus` (every CPU when empty)
    /// with `events` enabled and tracing on. The instance is journaled before it exists, and
    /// registered for [`lifecycle::cleanup_on_exit`].
    pub fn create_instance(
        &self,
        suffix: &str,
        cpus: &[usize],
        events: &[String],
        buffer_kb: u64,
        journal: Option<PathBuf>,
    ) -> Result<Instance> {
        let dir = self.root.join("instances").join(instance_name(suffix));
        if let Some(j) = &journal {
            write_journal(j, &dir)?;
        }
        if let Err(e) = std::fs::create_dir(&dir) {
            if let Some(j) = &journal {
                let _ = std::fs::remove_file(j);
            }
            return Err(Error::Env(format!(
                "{}: cannot create the instance {}: {e}",
                crate::who(),
                dir.display()
            )));
        }
        let reach = super::files::Reach::new(dir.clone());
        let inst = Instance {
            dir: dir.clone(),
            id: lifecycle::register(reach.clone(), journal),
            reach,
        };
        write(&dir.join("tracing_on"), "0")?;
        write(&dir.join("trace_clock"), "mono")?;
        write(&dir.join("buffer_size_kb"), &buffer_kb.to_string())?;
        if !cpus.is_empty() {
            write(&dir.join("tracing_cpumask"), &cpumask(cpus))?;
        }
        for e in events {
            write(&dir.join("events").join(e).join("enable"), "1")?;
        }
        write(&dir.join("tracing_on"), "1")?;
        Ok(inst)
    }
}

/// A live tracefs instance; dropping it stops tracing, removes the directory, releases this
/// run's share of a mount latlab made, and deletes the journal entry.
#[derive(Debug)]
pub struct Instance {
    /// The instance directory.
    pub dir: PathBuf,
    /// Its entry in [`lifecycle`]'s registry.
    pub(crate) id: u64,
    /// The directory reached through a descriptor, for what is done after it starts.
    pub reach: super::files::Reach,
}

impl Instance {
    /// `per_cpu/cpuN/trace_pipe_raw` of this instance.
    pub fn pipe(&self, cpu: usize) -> PathBuf {
        self.dir
            .join("per_cpu")
            .join(format!("cpu{cpu}"))
            .join("trace_pipe_raw")
    }

    /// `trace_pipe_raw` of every CPU this instance has.
    pub(crate) fn all_pipes(&self) -> Vec<PathBuf> {
        let mut v: Vec<(usize, PathBuf)> = std::fs::read_dir(self.dir.join("per_cpu"))
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let e = e.ok()?;
                let n: usize = e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok()?;
                Some((n, e.path().join("trace_pipe_raw")))
            })
            .collect();
        v.sort();
        v.into_iter().map(|x| x.1).collect()
    }

    /// Stops recording (the buffer stays readable).
    pub fn stop(&self) {
        let _ = poke(&self.reach.at("tracing_on"), "0");
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        lifecycle::end(self.id);
    }
}

/// The journal file for this process's instance `latlab-<pid><suffix>`, beside the knob
/// journal.
pub fn journal_file(suffix: &str) -> PathBuf {
    latlab_core::io::journal_path()
        .with_file_name(format!("trace-{}{suffix}.json", std::process::id()))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    pid: u32,
    instance: PathBuf,
    /// Written by latlab before 0.2 (the mount it shared); read and ignored.
    #[serde(default, skip_serializing)]
    #[allow(dead_code)]
    umount: Option<PathBuf>,
}

fn write_journal(j: &Path, dir: &Path) -> Result<()> {
    if let Some(d) = j.parent() {
        std::fs::create_dir_all(d).map_err(|e| Error::Env(format!("{}: {e}", d.display())))?;
    }
    let e = Entry {
        pid: std::process::id(),
        instance: dir.to_path_buf(),
        umount: None,
    };
    let text = serde_json::to_string(&e).map_err(|e| Error::Env(e.to_string()))?;
    latlab_core::output::write_atomic(j, text.as_bytes())
        .map_err(|e| Error::Env(format!("{}: journal {}: {e}", crate::who(), j.display())))
}

/// This process's instance name: `latlab-<pid><suffix>`, or `latlab-<pid>-ns<inode><suffix>`
/// in a PID namespace other than the machine's (a container): there a pid says nothing about
/// the process to the host (nor the host's to it), and two namespaces' pids collide.
fn instance_name(suffix: &str) -> String {
    let ns = latlab_core::sys::process::other_pid_namespace()
        .map_or(String::new(), |n| format!("-ns{n}"));
    format!("latlab-{}{ns}{suffix}", std::process::id())
}

fn digits(d: &str) -> bool {
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

/// True for a path latlab may remove:
/// `<...>/instances/latlab-<digits>[-ns<digits>][-procs|-timerlat|-osnoise]`.
pub(super) fn is_latlab_instance(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = p
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str());
    let name = without_suffix(name);
    let ours = name
        .strip_prefix("latlab-")
        .is_some_and(|rest| match rest.split_once("-ns") {
            Some((pid, ns)) => digits(pid) && digits(ns),
            None => digits(rest),
        });
    parent == Some("instances") && ours
}

/// Tracing instances and mounts of dead latlab processes, for `latlab restore`.
pub const RESTORER: latlab_core::io::Restorer = latlab_core::io::Restorer {
    name: "tracing instances",
    run: |dir| Ok(restore_in(dir)),
};

/// `latlab restore`'s part for tracing: removes the instances (and mounts) that dead latlab
/// processes journaled in `dir`; entries of live processes are left alone. One line each.
pub(crate) fn restore_in(dir: &Path) -> Vec<String> {
    restore_with(
        dir,
        |d| TraceFs::system(d).ok().map(|fs| fs.root),
        latlab_core::sys::mount::on_tracefs,
    )
}

/// The pid an instance's name carries (`latlab-<pid>`, `-procs`, `-ns<inode>` after it).
pub(super) fn named_pid(p: &Path) -> Option<u32> {
    let name = without_suffix(p.file_name()?.to_str()?);
    let rest = name.strip_prefix("latlab-")?;
    rest.split_once("-ns")
        .map_or(rest, |(pid, _)| pid)
        .parse()
        .ok()
}

/// [`restore_in`] with the tracefs root found (or mounted) by `tracefs`, and `is_tracefs`
/// telling whether a directory lies on one.
fn restore_with(
    dir: &Path,
    tracefs: impl Fn(&Path) -> Option<PathBuf>,
    is_tracefs: impl Fn(&Path) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for f in rd.filter_map(|e| e.ok()).map(|e| e.path()) {
        out.extend(restore_entry(&f, dir, &tracefs, &is_tracefs));
    }
    // What an older latlab kept to share its mounts: mounts now stay, so it goes.
    for f in ["tracefs-mount.json", "debugfs-mount.json"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    out
}

/// What `latlab restore` does with file `f` of the journal directory `dir`: the instance a
/// dead process journaled in it removed (then the entry), or forgotten if it is gone, or left
/// with the reason; the line saying so. None: not a journal entry, or its owner is alive.
fn restore_entry(
    f: &Path,
    dir: &Path,
    tracefs: &impl Fn(&Path) -> Option<PathBuf>,
    is_tracefs: &impl Fn(&Path) -> bool,
) -> Option<String> {
    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !(name.starts_with("trace-") && name.ends_with(".json")) {
        return None;
    }
    let text = std::fs::read_to_string(f).ok()?;
    let Ok(e) = serde_json::from_str::<Entry>(&text) else {
        return Some(format!(
            "skipped {}: not a latlab trace journal",
            f.display()
        ));
    };
    if Path::new(&format!("/proc/{}", e.pid)).exists() && e.pid != std::process::id() {
        return None; // its owner is alive and removes it itself
    }
    if let Some(why) = not_its_own(&e) {
        return Some(format!("skipped {}: {why}", f.display()));
    }
    // The instance lives under a tracefs mount: mounted (in latlab's own namespace) if it
    // is not, and looked for under whichever tracefs is mounted (every mount shows the
    // same instances: one under /sys/kernel/debug/tracing only will do). One that is gone
    // (a reboot since) leaves only its journal entry.
    let mut instance = e.instance;
    if !instance.exists() {
        if let (Some(root), Some(name)) = (tracefs(dir), instance.file_name()) {
            instance = root.join("instances").join(name);
        }
    }
    if !instance.exists() {
        return Some(forget_gone(f, &instance));
    }
    // A directory on tracefs itself, not a link to one elsewhere nor any other file system.
    let real_dir = instance
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_dir());
    if !real_dir || !is_tracefs(&instance) {
        return Some(format!(
            "skipped {}: {} is not a directory on tracefs",
            f.display(),
            instance.display()
        ));
    }
    let _ = poke(&instance.join("tracing_on"), "0");
    Some(match remove_instance(&instance) {
        Ok(()) => {
            let _ = std::fs::remove_file(f);
            format!("removed tracefs instance {}", instance.display())
        }
        Err(err) => format!("could not remove {}: {err}", instance.display()),
    })
}

/// Why the journal entry `e` may not have its instance removed: it names no latlab instance,
/// or not its own process's. An entry names its own process's instance only: never a live
/// run's (which would have its tracing turned off).
fn not_its_own(e: &Entry) -> Option<String> {
    if !is_latlab_instance(&e.instance) {
        return Some(format!("{} is not a latlab instance", e.instance.display()));
    }
    if named_pid(&e.instance) != Some(e.pid) {
        return Some(format!(
            "{} is not the instance of process {}",
            e.instance.display(),
            e.pid
        ));
    }
    None
}

/// Forgets the journal entry `f` of an instance that no longer exists, once that can be
/// told: only if its `instances` directory can be read (a user who cannot see tracefs, not
/// root, cannot tell, and the entry stays for root's restore). The line saying what was done.
fn forget_gone(f: &Path, instance: &Path) -> String {
    let visible = instance
        .parent()
        .is_some_and(|p| std::fs::read_dir(p).is_ok());
    if !visible {
        return format!(
            "skipped {}: tracefs instance {} cannot be seen from here (as root: `sudo latlab restore`)",
            f.display(),
            instance.display()
        );
    }
    match std::fs::remove_file(f) {
        Ok(()) => format!(
            "forgot {}: tracefs instance {} no longer exists",
            f.display(),
            instance.display()
        ),
        Err(err) => format!(
            "could not forget {}: {err} (tracefs instance {} no longer exists)",
            f.display(),
            instance.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tracefs: the recorded kernel's event formats, plus `instances/`.
    fn fake() -> (tempfile::TempDir, TraceFs) {
        let d = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/trace/events");
        copy_tree(&src, &d.path().join("events"));
        std::fs::create_dir(d.path().join("instances")).unwrap();
        let root = d.path().to_path_buf();
        (d, TraceFs { root })
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    #[test]
    fn mask_text() {
        assert_eq!(cpumask(&[1]), "00000002");
        assert_eq!(cpumask(&[0, 1]), "00000003");
        assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
    }

    #[test]
    fn layouts_from_a_fake_tree() {
        let (_d, fs) = fake();
        let (h, _dec, names) = fs.layouts().unwrap();
        assert_eq!(h.page_size, 4096);
        assert!(names.contains(&"sched/sched_switch".to_string()));
        assert!(names.contains(&"irq_vectors/local_timer_entry".to_string()));
    }

    #[test]
    fn a_missing_event_is_named() {
        let (d, fs) = fake();
        std::fs::remove_dir_all(d.path().join("events/irq/softirq_exit")).unwrap();
        let e = fs.layouts().unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("irq:softirq_exit"), "{e}");
    }

    #[test]
    fn instance_is_journaled_configured_and_left_to_restore_when_it_cannot_go() {
        let (d, fs) = fake();
        let j = d.path().join("state/trace-1.json");
        // A real tracefs fills a new instance with its control files; the fake one cannot,
        // so enabling an event fails and the error names the file.
        let err = fs
            .create_instance(
                "",
                &[1],
                &["sched/sched_switch".into()],
                1024,
                Some(j.clone()),
            )
            .unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(
            err.to_string().contains("events/sched/sched_switch/enable"),
            "{err}"
        );
        let inst = fs
            .root
            .join(format!("instances/latlab-{}", std::process::id()));
        let rd = |f: &str| std::fs::read_to_string(inst.join(f)).unwrap();
        assert_eq!(rd("trace_clock"), "mono");
        assert_eq!(rd("tracing_cpumask"), "00000002");
        assert_eq!(rd("buffer_size_kb"), "1024");
        // The fake directory (full of files) could not be removed: the journal stays for
        // `latlab restore`, which finishes the job once it can.
        assert!(j.exists(), "journal gone with the instance still there");
        for e in std::fs::read_dir(&inst).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        let out = restore_with(j.parent().unwrap(), |_| None, |_| true);
        assert!(out.iter().any(|l| l.starts_with("removed")), "{out:?}");
        assert!(!inst.exists() && !j.exists());
    }

    #[test]
    fn latlab_instances_by_name() {
        let yes = |n: &str| is_latlab_instance(&Path::new("/t/instances").join(n));
        for n in [
            "latlab-12",
            "latlab-12-procs",
            "latlab-12-ns4026532001",
            "latlab-1-ns2-procs",
            "latlab-12-timerlat",
            "latlab-12-osnoise",
        ] {
            assert!(yes(n), "{n}");
        }
        for n in [
            "latlab-",
            "latlab-x",
            "latlab-12-ns",
            "latlab--ns3",
            "latlab-1-nsx",
            "latlab-12-timerlat-procs",
            "timerlat_hist",
            "perf-1",
        ] {
            assert!(!yes(n), "{n}");
        }
        assert!(!is_latlab_instance(Path::new("/t/other/latlab-12")));
        // In the machine's PID namespace (where the tests run) the name is the plain one.
        if latlab_core::sys::process::other_pid_namespace().is_none() {
            assert_eq!(instance_name(""), format!("latlab-{}", std::process::id()));
        }
    }

    #[test]
    fn restore_removes_a_dead_process_instance_only() {
        let (d, fs) = fake();
        let jdir = d.path().join("state");
        std::fs::create_dir_all(&jdir).unwrap();
        let dead = fs.root.join("instances/latlab-999999999");
        std::fs::create_dir(&dead).unwrap();
        let live = fs.root.join("instances/latlab-1");
        std::fs::create_dir(&live).unwrap();
        // One journal entry: process `pid` and the instance it names.
        let journal = |pid: u32, instance: &Path| {
            let e = Entry {
                pid,
                instance: instance.to_path_buf(),
                umount: None,
            };
            std::fs::write(
                jdir.join(format!("trace-{pid}.json")),
                serde_json::to_string(&e).unwrap(),
            )
            .unwrap();
        };
        journal(999_999_999, &dead);
        journal(1, &live);
        // A journal naming a directory that is not a latlab instance is refused.
        journal(999_999_998, &d.path().join("events"));
        // An entry of a dead process naming a live run's instance (latlab-1), one naming a
        // link to an instance, and one (is_tracefs says) off tracefs: all left alone.
        let link = fs.root.join("instances/latlab-999999995");
        std::os::unix::fs::symlink(&live, &link).unwrap();
        let off = fs.root.join("instances/latlab-999999994");
        std::fs::create_dir(&off).unwrap();
        journal(999_999_996, &live);
        journal(999_999_995, &link);
        journal(999_999_994, &off);
        // One journaled under a mount since gone, its instance seen under another (tracefs
        // mounted only at /sys/kernel/debug/tracing): found there and removed.
        let moved = fs.root.join("instances/latlab-999999997");
        std::fs::create_dir(&moved).unwrap();
        journal(
            999_999_997,
            &d.path().join("unmounted/instances/latlab-999999997"),
        );
        let out = restore_with(
            &jdir,
            |_| Some(fs.root.clone()),
            |p| !p.ends_with("latlab-999999994"),
        );
        assert!(
            out.iter()
                .any(|l| l.contains("is not the instance of process 999999996")),
            "{out:?}"
        );
        assert!(
            out.iter()
                .filter(|l| l.contains("not a directory on tracefs"))
                .count()
                == 2,
            "{out:?}"
        );
        assert!(link.symlink_metadata().is_ok() && off.exists());
        assert!(!moved.exists(), "{out:?}");
        assert!(!jdir.join("trace-999999997.json").exists(), "{out:?}");
        assert!(!dead.exists());
        assert!(live.exists(), "a live process's instance was removed");
        assert!(d.path().join("events").exists());
        assert!(out.iter().any(|l| l.starts_with("removed")), "{out:?}");
        assert!(
            out.iter().any(|l| l.contains("not a latlab instance")),
            "{out:?}"
        );
        assert!(!jdir.join("trace-999999999.json").exists());
        assert!(jdir.join("trace-1.json").exists());
    }
}
