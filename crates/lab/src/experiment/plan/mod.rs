//! Experiment plans (`latlab run PLAN.toml`): a measurement with its options, factors with
//! levels, repeats and order. Errors name the file, line and column.

use crate::settings as knobs;
use latlab_core::error::{Error, Result};
use latlab_core::io::read_text_limited;
use serde::Deserialize;

pub(crate) mod boot;
mod checker;
mod set;
mod shell;

use checker::CHECKER;
pub use checker::{
    measurements, set_checker, set_measurements, Checker, Planned, RUNNER_FLAGS, RUNNER_TAGS,
};
use set::apply_set;
pub(crate) use shell::{shell_join, shell_quote};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The measurement of a plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Measure {
    /// A latlab measurement a plan may run (the table of measurements says which).
    pub(crate) command: String,
    /// Its options, as on the command line.
    #[serde(default)]
    pub(crate) args: Vec<String>,
}

/// Order of the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Order {
    /// Every repeat visits the level combinations in a fresh random order (seed printed).
    Random,
    /// Every repeat visits the combinations in plan order.
    Interleaved,
    /// All repeats of one combination, then the next (drift shows up as an effect: avoid).
    Sequential,
}

/// Repeats and order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Design {
    /// Runs per level combination.
    #[serde(default = "one")]
    pub(crate) repeats: u32,
    /// Order of runs.
    #[serde(default = "random")]
    pub(crate) order: Order,
    /// Seed of the random order (default: from the clock, printed).
    pub(crate) seed: Option<u64>,
}

fn one() -> u32 {
    1
}
fn random() -> Order {
    Order::Random
}

impl Default for Design {
    fn default() -> Self {
        Design {
            repeats: 1,
            order: Order::Random,
            seed: None,
        }
    }
}

/// What is compared at the end.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Analysis {
    /// latency (whole distributions; tcp: the throughput figures), min, max, mean, p50, p99,
    /// p99.9 (one figure per run). Default: p99, or latency for tcp.
    pub(crate) metric: Option<String>,
    /// Larger is better (default: true for tcp, else false).
    pub(crate) higher_is_better: Option<bool>,
}

/// A factor: what varies, and its levels (the first is the baseline).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Factor {
    /// Name (used in tags and tables).
    pub(crate) name: String,
    /// Level names; for knob factors, also the value written.
    pub(crate) levels: Vec<String>,
    /// A sysfs/procfs file the level is written to.
    pub(crate) knob: Option<String>,
    /// A sysctl (dotted name) the level is written to.
    pub(crate) sysctl: Option<String>,
    /// When true, the level is written to every CPU's cpufreq scaling_governor.
    #[serde(default)]
    pub(crate) governor: bool,
    /// latlab options added per level.
    #[serde(default)]
    pub(crate) options: BTreeMap<String, Vec<String>>,
    /// Shell command run before each run at a level.
    #[serde(default)]
    pub(crate) pre: BTreeMap<String, String>,
    /// Shell command run after each run at a level.
    #[serde(default)]
    pub(crate) post: BTreeMap<String, String>,
    /// Why a factor of the original experiment cannot be varied here (informational).
    pub(crate) note: Option<String>,
    /// When true, each level is a kernel and each run of it a fresh boot (`boot`).
    #[serde(default)]
    pub(crate) boot: bool,
    /// The kernel of a level whose name is not one (level -> `rt`, `generic`, a
    /// `linux-image-*` package, an image's path or `running`).
    #[serde(default)]
    pub(crate) kernel: BTreeMap<String, String>,
    /// The kernel command line of a level (`preempt=full`).
    #[serde(default)]
    pub(crate) cmdline: BTreeMap<String, String>,
}

/// A whole plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// What the plan is about (for its reader: accepted, never used).
    #[allow(dead_code)]
    pub(crate) description: Option<String>,
    /// The measurement.
    pub(crate) measure: Measure,
    /// Repeats and order.
    #[serde(default)]
    pub(crate) design: Design,
    /// What is compared.
    #[serde(default)]
    pub(crate) analysis: Analysis,
    /// Factors.
    #[serde(default, rename = "factor")]
    pub(crate) factors: Vec<Factor>,
    /// How a boot factor's kernels are booted: in guests, unless `[kexec]` boots them here.
    #[serde(default)]
    pub(crate) guest: boot::Guest,
    /// Booting each run's kernel on this machine itself, by kexec (`[kexec]`).
    pub(crate) kexec: Option<boot::Kexec>,
    /// The resolved files each factor writes (filled by validation).
    #[serde(skip)]
    pub(crate) knob_files: Vec<Vec<PathBuf>>,
    /// Expected length of the whole plan (filled by validation).
    #[serde(skip)]
    pub(crate) estimate: Estimate,
    /// What each level combination's runs are planned to be, in `combinations()` order
    /// (filled by validation).
    #[serde(skip)]
    pub(crate) planned: Vec<Planned>,
}

impl Factor {
    /// The factor's own checks: its name (it becomes a tag), its levels (each one line of
    /// text, a tag's value, distinct), one kind of setting, options only for its levels.
    fn check(&self) -> std::result::Result<(), String> {
        let f = self;
        if f.name.is_empty()
            || !f
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(format!(
                "factor name '{}': use letters, digits, '_', '-' and '.' (it becomes a tag)",
                f.name
            ));
        }
        if f.name.len() > MAX_NAME {
            return Err(format!(
                "factor name '{}…' is {} characters long; at most {MAX_NAME} (it becomes a tag)",
                &f.name[..32],
                f.name.len()
            ));
        }
        if RUNNER_TAGS.contains(&f.name.as_str()) {
            return Err(format!(
                "factor name '{}' is a tag latlab sets itself",
                f.name
            ));
        }
        if f.levels.is_empty() {
            return Err(format!("factor '{}' has no levels", f.name));
        }
        let mut lv = std::collections::HashSet::new();
        for l in &f.levels {
            if l.len() > MAX_LEVEL {
                return Err(format!(
                    "factor '{}': a level is {} bytes long; at most {MAX_LEVEL}",
                    f.name,
                    l.len()
                ));
            }
            // One line of plain text: a level is a label in progress lines, tables and
            // tags, and a value written to a setting (a newline there would start a new
            // line on the terminal and a second value in the file).
            if l.chars().any(char::is_control) {
                return Err(format!(
                    "factor '{}': level {l:?} holds a control character (a newline, a tab, \
                     an escape); a level is one line of text",
                    f.name
                ));
            }
            // It becomes the tag NAME=LEVEL of every run, which is never empty.
            if l.is_empty() {
                return Err(format!(
                    "factor '{}': a level is empty (it is the tag {}=LEVEL of its runs)",
                    f.name, f.name
                ));
            }
            if !lv.insert(l) {
                return Err(format!("factor '{}': level '{l}' appears twice", f.name));
            }
        }
        let kinds = [f.knob.is_some(), f.sysctl.is_some(), f.governor]
            .iter()
            .filter(|x| **x)
            .count();
        if kinds > 1 {
            return Err(format!(
                "factor '{}': use one of knob, sysctl or governor",
                f.name
            ));
        }
        let levels_keyed = f.options.keys().chain(f.pre.keys()).chain(f.post.keys());
        for key in levels_keyed.chain(f.kernel.keys()).chain(f.cmdline.keys()) {
            if !f.levels.contains(key) {
                return Err(format!(
                    "factor '{}': '{key}' is not one of its levels {:?}",
                    f.name, f.levels
                ));
            }
        }
        Ok(())
    }

    /// The files this factor writes (empty for option-only factors), each resolved and checked
    /// to be a knob latlab may write (under /sys or /proc/sys, no `..`, no symlink out).
    pub(crate) fn files(&self) -> std::result::Result<Vec<PathBuf>, knobs::KnobError> {
        let mut v = Vec::new();
        if let Some(k) = &self.knob {
            v.push(knobs::resolve(Path::new(k))?);
        }
        if let Some(s) = &self.sysctl {
            let p = knobs::sysctl_path(s).map_err(knobs::KnobError::Outside)?;
            v.push(knobs::resolve(&p)?);
        }
        if self.governor {
            if let Ok(d) = std::fs::read_dir(
                latlab_core::sys::roots::Roots::host().sys_path("devices/system/cpu"),
            ) {
                let mut g: Vec<PathBuf> = d
                    .flatten()
                    .map(|e| e.path().join("cpufreq/scaling_governor"))
                    .filter(|p| p.exists())
                    .collect();
                g.sort();
                for p in g {
                    v.push(knobs::resolve(&p)?);
                }
            }
        }
        Ok(v)
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, col)
}

/// Largest plan file read.
pub(crate) const MAX_PLAN_BYTES: u64 = 1 << 20;
/// Most runs a plan may make (level combinations x repeats).
pub(crate) const MAX_RUNS: u64 = 10_000;
/// Most factors in a plan.
pub(crate) const MAX_FACTORS: usize = 64;
/// Longest factor name (it becomes a tag on every run and a column of every comparison).
pub(crate) const MAX_NAME: usize = 64;
/// Longest level (a tag, a command-line argument of each run, a setting's text).
pub(crate) const MAX_LEVEL: usize = 4096;

/// What a plan's runs are expected to take, from the measurement options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Estimate {
    /// Sum of the runs whose length is known (ns).
    pub(crate) known_ns: u64,
    /// Runs whose length depends on their work (loops, iterations).
    pub(crate) unknown_runs: u64,
}

impl Plan {
    /// Reads and validates a plan file.
    #[cfg(test)]
    pub(crate) fn load(path: &Path) -> Result<Plan> {
        Plan::load_with(path, &[])
    }

    /// Reads a plan, applies `--set KEY=VALUE` overrides, and validates the result as the run
    /// would: nothing is changed on the machine.
    pub fn load_with(path: &Path, sets: &[String]) -> Result<Plan> {
        let name = path.display().to_string();
        let text = read_text_limited(path, MAX_PLAN_BYTES, "plan")?;
        let span_err = |e: toml::de::Error| {
            let (l, c) = e.span().map_or((0, 0), |s| line_col(&text, s.start));
            Error::Usage(format!("{name}:{l}:{c}: {}", e.message().trim_end()))
        };
        // The file as written first, so its errors name a line and column.
        let mut plan: Plan = toml::from_str(&text).map_err(span_err)?;
        if !sets.is_empty() {
            let mut table: toml::Table = toml::from_str(&text).map_err(span_err)?;
            for s in sets {
                apply_set(&mut table, s).map_err(|e| Error::flag("--set", s, e))?;
            }
            plan = Plan::deserialize(table).map_err(|e| {
                Error::Usage(format!(
                    "--set {}: {}",
                    sets.join(" --set "),
                    e.message().trim_end()
                ))
            })?;
        }
        let dir = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        plan.resolve_paths(&dir);
        plan.validate(&name)?;
        Ok(plan)
    }

    fn validate(&mut self, name: &str) -> Result<()> {
        let bad = |why: String| Error::Usage(format!("{name}: {why}"));
        self.check_size().map_err(bad)?;
        let mut seen = std::collections::HashSet::new();
        for f in &self.factors {
            if !seen.insert(&f.name) {
                return Err(bad(format!("factor '{}' appears twice", f.name)));
            }
            f.check().map_err(bad)?;
        }
        if let Some(m) = &self.analysis.metric {
            if !["latency", "min", "max", "mean", "p50", "p99", "p99.9"].contains(&m.as_str()) {
                return Err(bad(format!(
                    "analysis.metric '{m}' (use latency, min, max, mean, p50, p99 or p99.9)"
                )));
            }
        }
        self.check_boots().map_err(bad)?;
        self.check_combinations(name)?;
        self.check_knobs(name)
    }

    /// The measurement is one, and the design's size is bounded before anything is allocated
    /// for it.
    fn check_size(&self) -> std::result::Result<(), String> {
        let known = measurements();
        if !known.contains(&self.measure.command.as_str()) {
            return Err(format!(
                "measure.command '{}' is not a measurement (use {})",
                self.measure.command,
                known.join(", ")
            ));
        }
        if self.design.repeats == 0 || u64::from(self.design.repeats) > MAX_RUNS {
            return Err(format!(
                "design.repeats {} is not 1 to {MAX_RUNS}",
                self.design.repeats
            ));
        }
        if self.factors.len() > MAX_FACTORS {
            return Err(format!(
                "{} factors; a plan has at most {MAX_FACTORS}",
                self.factors.len()
            ));
        }
        let mut runs = u64::from(self.design.repeats);
        for f in &self.factors {
            runs = runs.saturating_mul(f.levels.len() as u64);
        }
        if runs > MAX_RUNS {
            return Err(format!(
                "{} level combination(s) x {} repeat(s) is more than {MAX_RUNS} runs; split the plan",
                self.factors
                    .iter()
                    .map(|f| f.levels.len().to_string())
                    .collect::<Vec<_>>()
                    .join(" x "),
                self.design.repeats
            ));
        }
        Ok(())
    }

    /// Every combination's command line is one the measurement accepts, as the run would
    /// check it, before any knob is looked at; the runs' expected length is summed.
    fn check_combinations(&mut self, name: &str) -> Result<()> {
        let check = *CHECKER
            .get()
            .ok_or_else(|| Error::Env("internal: no measurement checker registered".into()))?;
        let mut estimate = Estimate::default();
        self.planned.clear();
        for combo in self.combinations() {
            let args = self.args_for(&combo);
            let one = check(&self.measure.command, &args).map_err(|e| {
                let mut shown = vec![self.measure.command.clone()];
                shown.extend(args.iter().cloned());
                Error::Usage(format!(
                    "{name}: {}: the measurement refuses its options ({}): {e}",
                    self.label(&combo),
                    shell_join(&shown)
                ))
            })?;
            let r = u64::from(self.design.repeats);
            self.planned.push(one);
            match one.ns {
                Some(ns) => {
                    estimate.known_ns = estimate.known_ns.saturating_add(ns.saturating_mul(r))
                }
                None => estimate.unknown_runs += r,
            }
        }
        self.estimate = estimate;
        Ok(())
    }

    /// Knobs: only files latlab may write, present and writable here, every level one the
    /// kernel takes, and no file set by two factors.
    fn check_knobs(&mut self, name: &str) -> Result<()> {
        let bad = |why: String| Error::Usage(format!("{name}: {why}"));
        let mut files = Vec::with_capacity(self.factors.len());
        for f in &self.factors {
            let ctx = format!("{name}: factor '{}': ", f.name);
            let v = f.files().map_err(|e| e.into_error(&ctx))?;
            if f.governor && v.is_empty() {
                return Err(Error::Env(format!(
                    "{ctx}this machine has no cpufreq governors"
                )));
            }
            for file in &v {
                knobs::check_writable(file).map_err(|e| Error::Env(format!("{ctx}knob {e}")))?;
                knobs::check_restorable(file)
                    .map_err(|e| Error::Usage(format!("{ctx}knob {e}")))?;
                // Every level the kernel would refuse is refused now, before any run.
                for level in &f.levels {
                    knobs::check_level(file, level).map_err(|e| match e {
                        knobs::LevelRefused::NotOffered(t) => Error::Env(format!("{ctx}level {t}")),
                        // (`bad` names the plan itself; `ctx` does too.)
                        knobs::LevelRefused::Invalid(t) => Error::Usage(format!("{ctx}level {t}")),
                    })?;
                }
            }
            // Two factors writing one file: only the last write would be in force, and the
            // other factor's levels would label runs that never had them.
            for file in &v {
                let same = |g: &PathBuf| {
                    g == file || std::fs::canonicalize(g).ok() == std::fs::canonicalize(file).ok()
                };
                if let Some(j) = files.iter().position(|w: &Vec<PathBuf>| w.iter().any(same)) {
                    return Err(bad(format!(
                        "factors '{}' and '{}' both set {}: one setting, one factor",
                        self.factors[j].name,
                        f.name,
                        file.display()
                    )));
                }
            }
            files.push(v);
        }
        self.knob_files = files;
        Ok(())
    }

    /// Every level combination, as level indices per factor; the first is the baseline.
    pub(crate) fn combinations(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new()];
        for f in &self.factors {
            out = out
                .into_iter()
                .flat_map(|c| (0..f.levels.len()).map(move |l| [c.clone(), vec![l]].concat()))
                .collect();
        }
        out
    }

    /// The measurement's arguments for a combination (plan args plus level options).
    pub(crate) fn args_for(&self, combo: &[usize]) -> Vec<String> {
        let mut a = self.measure.args.clone();
        for (f, &l) in self.factors.iter().zip(combo) {
            if let Some(o) = f.options.get(&f.levels[l]) {
                a.extend(o.iter().cloned());
            }
        }
        a
    }

    /// `factor=level,...` label of a combination, levels as written in the plan.
    pub(crate) fn label(&self, combo: &[usize]) -> String {
        if self.factors.is_empty() {
            return "all".into();
        }
        self.factors
            .iter()
            .zip(combo)
            .map(|(f, &l)| format!("{}={}", f.name, f.levels[l]))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands in for the command line's checker (which `cli` registers; its real checks are
    /// tested end to end through `latlab run --dry-run` in tests/it/plan.rs): `fake` (a made-up measurement) with `-D`
    /// and `--nodelay`.
    fn fake_check(command: &str, args: &[String]) -> std::result::Result<Planned, String> {
        if command != "fake" {
            return Err(format!("'{command}' is not a measurement"));
        }
        let mut ns = Some(10_000_000_000);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "-D" => {
                    ns = Some(latlab_core::config::seconds(
                        it.next().ok_or("-D needs a value")?,
                    )?)
                }
                "--nodelay" => {}
                other => return Err(format!("unexpected argument '{other}'")),
            }
        }
        Ok(Planned { ns, rate: None })
    }

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        set_checker(fake_check);
        set_measurements(|| vec!["fake"]);
        write_plan(text)
    }

    fn write_plan(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("plan.toml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn parses_and_crosses_factors() {
        let (_d, p) = write(
            "[measure]\ncommand = \"fake\"\nargs = [\"-D\", \"1s\"]\n[design]\nrepeats = 3\n\
             [[factor]]\nname = \"a\"\nlevels = [\"x\", \"y\"]\noptions = { y = [\"--nodelay\"] }\n\
             [[factor]]\nname = \"b\"\nlevels = [\"1\", \"2\", \"3\"]\n",
        );
        let plan = Plan::load(&p).unwrap();
        let c = plan.combinations();
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec![0, 0]);
        assert_eq!(plan.label(&c[3]), "a=y,b=1");
        assert_eq!(plan.args_for(&c[3]), vec!["-D", "1s", "--nodelay"]);
    }

    #[test]
    fn a_boot_factor_boots_each_level_with_its_cmdline() {
        let head = "[measure]\ncommand = \"fake\"\n[[factor]]\nname = \"kernel\"\nboot = true\n";
        let (_d, p) = write(&format!(
            "{head}levels = [\"rt\", \"full\", \"here\"]\n\
             kernel = {{ full = \"generic\", here = \"running\" }}\n\
             cmdline = {{ full = \"preempt=full\" }}\n[guest]\ncpus = 4\n"
        ));
        let plan = Plan::load(&p).unwrap();
        let c = plan.combinations();
        let rt = plan.boot_for(&c[0]).unwrap();
        assert_eq!((rt.kernel.as_str(), rt.cmdline.as_str()), ("rt", ""));
        let full = plan.boot_for(&c[1]).unwrap();
        assert_eq!(
            (full.kernel.as_str(), full.cmdline.as_str()),
            ("generic", "preempt=full")
        );
        assert_eq!(
            plan.boot_for(&c[2]),
            None,
            "the running kernel is not booted"
        );
        assert_eq!(plan.guest.cpus, 4);
        for (body, why) in [
            ("levels = [\"nope\"]\n", "kernel 'nope' is not rt, generic"),
            (
                "levels = [\"running\"]\ncmdline = { running = \"quiet\" }\n",
                "cannot be changed without a boot",
            ),
            (
                "levels = [\"rt\"]\ncmdline = { other = \"x\" }\n",
                "'other' is not one",
            ),
            (
                "levels = [\"rt\"]\nknob = \"/proc/sys/kernel/sched_rt_runtime_us\"\n",
                "levels are kernels",
            ),
            (
                "levels = [\"rt\"]\n[guest]\nmemory = \"lots\"\n",
                "guest.memory 'lots'",
            ),
        ] {
            let (_d, p) = write(&format!("{head}{body}"));
            let e = Plan::load(&p).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
        // A setting of this machine beside a boot factor would not be in the booted kernel.
        let (_d, p) = write(&format!(
            "{head}levels = [\"rt\"]\n[[factor]]\nname = \"s\"\n\
             sysctl = \"kernel.sched_rt_runtime_us\"\nlevels = [\"950000\"]\n"
        ));
        let e = Plan::load(&p).unwrap_err().to_string();
        assert!(e.contains("writes a setting of this machine"), "{e}");
    }

    #[test]
    fn errors_name_line_and_column() {
        let (_d, p) = write("[measure]\ncommand = \"fake\"\n\n[design]\nrepeats = \"many\"\n");
        let e = Plan::load(&p).unwrap_err().to_string();
        assert!(e.contains("plan.toml:5:11"), "{e}");
        let (_d, p) = write("[measure]\ncommand = \"fake\"\nargz = []\n");
        assert!(Plan::load(&p).unwrap_err().to_string().contains(":3:1"));
        let (_d, p) = write("[measure]\ncommand = \"fake\"\nargs = [\"--warp-speed\"]\n");
        assert!(Plan::load(&p)
            .unwrap_err()
            .to_string()
            .contains("--warp-speed"));
        let (_d, p) = write("[measure]\ncommand = \"fake\"\n[[factor]]\nname = \"k\"\nknob = \"/proc/sys/kernel/osrelease\"\nlevels = [\"a\"]\n");
        let e = Plan::load(&p).unwrap_err();
        assert_eq!(e.exit_code(), 3, "{e}");
        assert!(e.to_string().contains("/proc/sys/kernel/osrelease"));
        // A level that is not one line of text.
        let (_d, p) = write(
            "[measure]\ncommand = \"fake\"\n[[factor]]\nname = \"k\"\nlevels = [\"a\\nb\"]\n",
        );
        let e = Plan::load(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(
            e.to_string()
                .contains("level \"a\\nb\" holds a control character"),
            "{e}"
        );
        // An empty level (it would be the tag k=).
        let (_d, p) = write(
            "[measure]\ncommand = \"fake\"\n[[factor]]\nname = \"k\"\nlevels = [\"a\", \"\"]\n",
        );
        let e = Plan::load(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("a level is empty"), "{e}");
        // Outside /sys and /proc/sys: bad input.
        let (_d, p) = write("[measure]\ncommand = \"fake\"\n[[factor]]\nname = \"k\"\nknob = \"/proc/version\"\nlevels = [\"a\"]\n");
        let e = Plan::load(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
    }

    #[test]
    fn knobs_outside_sys_and_proc_sys_are_refused_as_bad_input() {
        for (key, value) in [
            ("knob", "/sys/../tmp/latlab-escape"),
            ("knob", "/tmp/latlab-escape"),
            ("knob", "/proc/self/root/tmp/latlab-escape"),
            ("sysctl", "/tmp/latlab-escape"),
            ("sysctl", "../../tmp/latlab-escape"),
        ] {
            let (_d, p) = write(&format!(
                "[measure]\ncommand = \"fake\"\n[[factor]]\nname = \"k\"\n{key} = \"{value}\"\nlevels = [\"a\"]\n"
            ));
            let e = Plan::load(&p).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{key} = {value}: {e}");
            assert!(e.to_string().contains("factor 'k'"), "{e}");
        }
        assert!(!Path::new("/tmp/latlab-escape").exists());
    }

    #[test]
    fn oversized_designs_are_refused_before_allocating() {
        let mut t = String::from("[measure]\ncommand = \"fake\"\n");
        for i in 0..12 {
            t.push_str(&format!(
                "[[factor]]\nname = \"f{i}\"\nlevels = [{}]\n",
                (0..10)
                    .map(|l| format!("\"{l}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let (_d, p) = write(&t);
        let t0 = std::time::Instant::now();
        let e = Plan::load(&p).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("more than 10000 runs"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        let (_d, p) = write("[measure]\ncommand = \"fake\"\n[design]\nrepeats = 5001\n[[factor]]\nname = \"a\"\nlevels = [\"x\", \"y\"]\n");
        assert!(Plan::load(&p).is_err());
    }

    #[test]
    fn plan_files_are_read_with_a_limit() {
        let t0 = std::time::Instant::now();
        let e = Plan::load(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("/dev/zero"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn set_overrides_keys_and_duration() {
        let (_d, p) = write("[measure]\ncommand = \"fake\"\nargs = [\"-D\", \"5s\", \"--nodelay\"]\n[design]\nrepeats = 12\n");
        let plan = Plan::load_with(
            &p,
            &[
                "repeats=3".into(),
                "duration=2s".into(),
                "order=sequential".into(),
            ],
        )
        .unwrap();
        assert_eq!(plan.design.repeats, 3);
        assert_eq!(plan.design.order, Order::Sequential);
        assert_eq!(plan.measure.args, vec!["--nodelay", "-D", "2s"]);
        assert_eq!(plan.estimate.known_ns, 3 * 2_000_000_000);
        for (bad, want) in [
            ("repeats=many", "--set"),
            ("colour=blue", "colour"),
            ("noequals", "KEY=VALUE"),
            ("repeats=0", "repeats"),
        ] {
            let e = Plan::load_with(&p, &[bad.into()]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
            assert!(e.to_string().contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn shell_quoting_round_trips() {
        assert_eq!(shell_quote("-D"), "-D");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        let words: Vec<String> = ["latlab", "noise", "--disturb", "echo \"$HOME\" 'x'; true"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {}", shell_join(&words)))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            words.join("\n") + "\n"
        );
    }
}
