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

    /// The state in `dir`, if a plan is under way there.
    pub(super) fn load(dir: &Path) -> Result<Option<State>> {
        let p = dir.join(FILE);
        let text = match latlab_core::io::read_text_limited(&p, 16 << 20, "kexec state") {
            Ok(t) => t,
            Err(_) if !p.exists() => return Ok(None),
            Err(e) => return Err(e),
        };
        let st: State = serde_json::from_str(&text).map_err(|e| {
            Error::Usage(format!(
                "{}: not a latlab kexec plan's state ({e}); remove it to abandon that plan",
                p.display()
            ))
        })?;
        if st.version != VERSION || st.next > st.order.len() {
            return Err(Error::Usage(format!(
                "{}: a state this latlab cannot continue (version {}); remove it to abandon \
                 that plan",
                p.display(),
                st.version
            )));
        }
        Ok(Some(st))
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
        .custom_flags(libc::O_NOFOLLOW)
        .open(&p)
        .map_err(|e| Error::Env(format!("{}: {e}", p.display())))?;
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
        assert!(State::load(d.path()).unwrap().is_none());
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
        let back = State::load(d.path()).unwrap().unwrap();
        assert_eq!(
            (back.next, back.order.clone(), back.seed),
            (1, st.order.clone(), 7)
        );
        st.finish(d.path(), "report\n").unwrap();
        assert!(State::load(d.path()).unwrap().is_none());
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
        let e = State::load(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .contains("state.json: not a latlab kexec plan"),
            "{e}"
        );
    }

    #[test]
    fn one_latlab_drives_a_state_directory() {
        let d = tempfile::tempdir().unwrap();
        let _held = lock(d.path()).unwrap();
        let e = lock(d.path()).unwrap_err().to_string();
        assert!(e.contains("another latlab drives the kexec plan"), "{e}");
    }
}
