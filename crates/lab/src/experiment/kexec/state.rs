//! A kexec plan's state across boots: what it is (the plan, its order, this machine's own
//! kernel), how far it got, the boot it waits for, and every run it kept, in one directory
//! that survives a reboot (`[kexec] state`, /var/lib/latlab/kexec by default).

use super::kernel::Target;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The state file's version.
const VERSION: u32 = 1;
/// The state of the plan that is under way, in the state directory.
pub(super) const FILE: &str = "state.json";

/// Where a kexec plan stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct State {
    pub(super) version: u32,
    /// The plan file (absolute) and a hash of its text and `--set`s at the start: a resume
    /// runs the same plan.
    pub(super) plan_file: PathBuf,
    pub(super) plan_sha: String,
    pub(super) sets: Vec<String>,
    /// The store the runs go to, as it was named (its password hidden): a resume must name
    /// the same one.
    pub(super) store: Option<String>,
    pub(super) exp: String,
    pub(super) seed: u64,
    /// The runs, in the order they are made: (combination, repeat from 1).
    pub(super) order: Vec<(usize, u32)>,
    /// The next step of `order` to boot for.
    pub(super) next: usize,
    /// This machine's own kernel, booted again at the end.
    pub(super) original: Target,
    /// The boot asked for and not yet seen.
    pub(super) pending: Option<Pending>,
    /// What became of every step done.
    pub(super) done: Vec<Outcome>,
}

/// A kexec that was asked for: the step it boots for (None: the original kernel, at the end),
/// the boot it left, when, and what it should come back as.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pending {
    pub(super) step: Option<usize>,
    pub(super) left_boot: String,
    pub(super) at_unix: u64,
    pub(super) want: Target,
    /// The words of the command line a boot must show (the level's own; the original's whole).
    pub(super) words: String,
}

/// One step's end.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Outcome {
    pub(super) step: usize,
    /// `stored`, `failed` (the boot did not come back as asked) or `not kept` (interrupted).
    pub(super) what: String,
    pub(super) run: Option<String>,
    pub(super) why: Option<String>,
    pub(super) boot_id: Option<String>,
}

impl State {
    /// A new state for the plan: nothing done yet.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        plan_file: PathBuf,
        plan_sha: String,
        sets: &[String],
        store: Option<String>,
        exp: String,
        seed: u64,
        order: Vec<(usize, u32)>,
        original: Target,
    ) -> State {
        State {
            version: VERSION,
            plan_file,
            plan_sha,
            sets: sets.to_vec(),
            store,
            exp,
            seed,
            order,
            next: 0,
            original,
            pending: None,
            done: Vec::new(),
        }
    }

    /// The state in `dir`, if a plan is under way there, checked against a plan of `combos`
    /// level combinations.
    pub(super) fn load(dir: &Path, combos: usize) -> Result<Option<State>> {
        let p = dir.join(FILE);
        // Absent only when there is nothing there at all (a dangling link is refused below).
        if p.symlink_metadata().is_err() {
            return Ok(None);
        }
        let text = latlab_core::io::read_text_limited(&p, 16 << 20, "kexec state")?;
        let st: State = serde_json::from_str(&text).map_err(|e| {
            Error::Usage(format!(
                "{}: not a latlab kexec plan's state ({e}); remove it to abandon that plan",
                p.display()
            ))
        })?;
        if st.version != VERSION {
            return Err(Error::Usage(format!(
                "{}: a state this latlab cannot continue (version {}); remove it to abandon \
                 that plan",
                p.display(),
                st.version
            )));
        }
        st.check(combos).map_err(|why| {
            Error::Usage(format!(
                "{}: {why}: not a state of this plan; remove it to abandon that plan",
                p.display()
            ))
        })?;
        Ok(Some(st))
    }

    /// Whether the state can be a plan's of `combos` combinations: every step, combination
    /// and experiment id in range (an id names files under the state directory).
    fn check(&self, combos: usize) -> std::result::Result<(), String> {
        let n = self.order.len();
        if n == 0 {
            return Err("no runs in its order".into());
        }
        if self.next > n {
            return Err(format!(
                "its next step {} is beyond its {n} runs",
                self.next
            ));
        }
        if let Some(&(c, r)) = self.order.iter().find(|(c, r)| *c >= combos || *r == 0) {
            return Err(format!(
                "its order holds run ({c}, {r}) of {combos} combinations"
            ));
        }
        let steps = self.done.iter().map(|o| o.step);
        if let Some(s) = steps
            .chain(self.pending.iter().filter_map(|p| p.step))
            .find(|&s| s >= n)
        {
            return Err(format!("it names step {s} of {n}"));
        }
        let id = self.exp.strip_prefix("exp-").unwrap_or_default();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!(
                "experiment id {:?} is not one latlab makes",
                self.exp
            ));
        }
        Ok(())
    }

    /// Writes the state (atomically, then synced: a kexec may follow at once).
    pub(super) fn save(&self, dir: &Path) -> Result<()> {
        let p = dir.join(FILE);
        let text = serde_json::to_vec_pretty(self).expect("a state serializes");
        latlab_core::output::write_atomic(&p, &text)
            .map_err(|e| Error::io(p.display().to_string(), e))?;
        latlab_core::sys::mount::sync_all();
        Ok(())
    }

    /// Ends the plan: its report kept beside the state, the state renamed for the record.
    pub(super) fn finish(&self, dir: &Path, report: &str) -> Result<()> {
        let r = dir.join(format!("report-{}.txt", self.exp));
        latlab_core::output::write_atomic(&r, report.as_bytes())
            .map_err(|e| Error::io(r.display().to_string(), e))?;
        let to = dir.join(format!("finished-{}.json", self.exp));
        std::fs::rename(dir.join(FILE), &to).map_err(|e| Error::io(to.display().to_string(), e))?;
        latlab_core::sys::mount::sync_all();
        Ok(())
    }
}

/// Where step `step`'s run is kept for the report at the end.
fn run_path(dir: &Path, exp: &str, step: usize) -> PathBuf {
    dir.join(format!("runs-{exp}")).join(format!("{step}.json"))
}

/// Keeps step `step`'s run.
pub(super) fn keep_run(dir: &Path, exp: &str, step: usize, run: &Run) -> Result<()> {
    let p = run_path(dir, exp, step);
    let parent = p.parent().expect("a run's file has a directory");
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent.display().to_string(), e))?;
    let text = serde_json::to_vec(run).expect("a run serializes");
    latlab_core::output::write_atomic(&p, &text).map_err(|e| Error::io(p.display().to_string(), e))
}

/// Step `step`'s run, as kept.
pub(super) fn kept_run(dir: &Path, exp: &str, step: usize) -> Result<Run> {
    let p = run_path(dir, exp, step);
    let text = latlab_core::io::read_text_limited(&p, 256 << 20, "kept run")?;
    serde_json::from_str(&text).map_err(|e| Error::Usage(format!("{}: {e}", p.display())))
}

/// The state directory's lock: one latlab drives a kexec plan at a time.
pub(super) fn lock(dir: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join(".lock");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&p)
        .map_err(|e| Error::Env(format!("{}: {e}", p.display())))?;
    // A FIFO or a device there would block, or be written to.
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::Env(format!(
            "{}: not a regular file (the state directory's lock)",
            p.display()
        )));
    }
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Env(format!(
            "another latlab drives the kexec plan in {} ({} is locked): one at a time",
            dir.display(),
            p.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::Env(format!("{}: cannot lock: {e}", p.display())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            image: "/boot/vmlinuz-x".into(),
            initrd: None,
            cmdline: "ro".into(),
            release: "x".into(),
        }
    }

    #[test]
    fn a_state_survives_its_file_and_ends_renamed() {
        let d = tempfile::tempdir().unwrap();
        assert!(State::load(d.path(), 2).unwrap().is_none());
        let mut st = State::new(
            "/p.toml".into(),
            "abc".into(),
            &["repeats=2".into()],
            None,
            "exp-1".into(),
            7,
            vec![(0, 1), (1, 1)],
            target(),
        );
        st.next = 1;
        st.save(d.path()).unwrap();
        let back = State::load(d.path(), 2).unwrap().unwrap();
        assert_eq!(
            (back.next, back.order.clone(), back.seed),
            (1, st.order.clone(), 7)
        );
        // Read as a state of a plan with fewer combinations, it is refused.
        let e = State::load(d.path(), 1).unwrap_err().to_string();
        assert!(
            e.contains("its order holds run (1, 1) of 1 combinations"),
            "{e}"
        );
        st.finish(d.path(), "report\n").unwrap();
        assert!(State::load(d.path(), 2).unwrap().is_none());
        assert!(d.path().join("finished-exp-1.json").is_file());
        assert_eq!(
            std::fs::read_to_string(d.path().join("report-exp-1.txt")).unwrap(),
            "report\n"
        );
    }

    #[test]
    fn a_damaged_state_is_refused_naming_its_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(FILE), "{ not json").unwrap();
        let e = State::load(d.path(), 1).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("state.json: not a latlab kexec plan"),
            "{e}"
        );
        // An experiment id is a file name under the state directory: never a path.
        let mut st = State::new(
            "/p.toml".into(),
            "abc".into(),
            &[],
            None,
            "exp-x/../../esc".into(),
            1,
            vec![(0, 1)],
            target(),
        );
        std::fs::write(d.path().join(FILE), serde_json::to_vec(&st).unwrap()).unwrap();
        let e = State::load(d.path(), 1).unwrap_err().to_string();
        assert!(e.contains("is not one latlab makes"), "{e}");
        st.exp = "exp-1".into();
        st.pending = Some(Pending {
            step: Some(7),
            left_boot: "b".into(),
            at_unix: 0,
            want: target(),
            words: String::new(),
        });
        std::fs::write(d.path().join(FILE), serde_json::to_vec(&st).unwrap()).unwrap();
        let e = State::load(d.path(), 1).unwrap_err().to_string();
        assert!(e.contains("it names step 7 of 1"), "{e}");
        // A link that leads nowhere is not "no state".
        std::fs::remove_file(d.path().join(FILE)).unwrap();
        std::os::unix::fs::symlink("/nonexistent", d.path().join(FILE)).unwrap();
        assert!(State::load(d.path(), 1).is_err());
    }

    #[test]
    fn one_latlab_drives_a_state_directory() {
        let d = tempfile::tempdir().unwrap();
        let _held = lock(d.path()).unwrap();
        let e = lock(d.path()).unwrap_err().to_string();
        assert!(e.contains("another latlab drives the kexec plan"), "{e}");
        // A FIFO in the lock's place is refused, not waited on.
        let f = tempfile::tempdir().unwrap();
        let fifo = f.path().join(".lock");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // (opening it without a reader fails at once: ENXIO)
        let e = lock(f.path()).unwrap_err();
        assert_eq!(e.exit_code(), 3, "{e}");
    }
}
