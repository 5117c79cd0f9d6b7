//! Experiment plans (`latlab run PLAN.toml`): a measurement with its options, factors with
//! levels, repeats and order. Errors name the file, line and column.

use super::knobs;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Measurements a plan may run.
pub const COMMANDS: &[&str] = &[
    "cyclic", "noise", "ctxsw", "clocks", "tcp", "contend", "migrate",
];

/// The measurement of a plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measure {
    /// A latlab measurement: cyclic, noise, ctxsw, clocks, tcp, contend, migrate.
    pub command: String,
    /// Its options, as on the command line.
    #[serde(default)]
    pub args: Vec<String>,
}

/// Order of the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
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
pub struct Design {
    /// Runs per level combination.
    #[serde(default = "one")]
    pub repeats: u32,
    /// Order of runs.
    #[serde(default = "random")]
    pub order: Order,
    /// Seed of the random order (default: from the clock, printed).
    pub seed: Option<u64>,
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
pub struct Analysis {
    /// latency (whole distributions; tcp: the throughput figures), min, max, mean, p50, p99,
    /// p99.9 (one figure per run). Default: p99, or latency for tcp.
    pub metric: Option<String>,
    /// Larger is better (default: true for tcp, else false).
    pub higher_is_better: Option<bool>,
}

/// A factor: what varies, and its levels (the first is the baseline).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Factor {
    /// Name (used in tags and tables).
    pub name: String,
    /// Level names; for knob factors, also the value written.
    pub levels: Vec<String>,
    /// A sysfs/procfs file the level is written to.
    pub knob: Option<String>,
    /// A sysctl (dotted name) the level is written to.
    pub sysctl: Option<String>,
    /// When true, the level is written to every CPU's cpufreq scaling_governor.
    #[serde(default)]
    pub governor: bool,
    /// latlab options added per level.
    #[serde(default)]
    pub options: BTreeMap<String, Vec<String>>,
    /// Shell command run before each run at a level.
    #[serde(default)]
    pub pre: BTreeMap<String, String>,
    /// Shell command run after each run at a level.
    #[serde(default)]
    pub post: BTreeMap<String, String>,
    /// Why a factor of the original experiment cannot be varied here (informational).
    pub note: Option<String>,
}

/// A whole plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// What the plan is about.
    pub description: Option<String>,
    /// The measurement.
    pub measure: Measure,
    /// Repeats and order.
    #[serde(default)]
    pub design: Design,
    /// What is compared.
    #[serde(default)]
    pub analysis: Analysis,
    /// Factors.
    #[serde(default, rename = "factor")]
    pub factors: Vec<Factor>,
}

impl Factor {
    /// The files this factor writes (empty for option-only factors).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut v = Vec::new();
        if let Some(k) = &self.knob {
            v.push(PathBuf::from(k));
        }
        if let Some(s) = &self.sysctl {
            v.push(knobs::sysctl_path(s));
        }
        if self.governor {
            if let Ok(d) = std::fs::read_dir("/sys/devices/system/cpu") {
                let mut g: Vec<PathBuf> = d
                    .flatten()
                    .map(|e| e.path().join("cpufreq/scaling_governor"))
                    .filter(|p| p.exists())
                    .collect();
                g.sort();
                v.extend(g);
            }
        }
        v
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

impl Plan {
    /// Reads and validates a plan file.
    pub fn load(path: &Path) -> Result<Plan> {
        let name = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
        let plan: Plan = toml::from_str(&text).map_err(|e| {
            let (l, c) = e.span().map_or((0, 0), |s| line_col(&text, s.start));
            Error::Usage(format!("{name}:{l}:{c}: {}", e.message()))
        })?;
        plan.validate(&name)?;
        Ok(plan)
    }

    fn validate(&self, name: &str) -> Result<()> {
        let bad = |why: String| Error::Usage(format!("{name}: {why}"));
        if !COMMANDS.contains(&self.measure.command.as_str()) {
            return Err(bad(format!(
                "measure.command '{}' is not a measurement (use {})",
                self.measure.command,
                COMMANDS.join(", ")
            )));
        }
        if self.design.repeats == 0 || self.design.repeats > 10_000 {
            return Err(bad(format!(
                "design.repeats {} is not 1 to 10000",
                self.design.repeats
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for f in &self.factors {
            if !seen.insert(&f.name) {
                return Err(bad(format!("factor '{}' appears twice", f.name)));
            }
            if f.levels.is_empty() {
                return Err(bad(format!("factor '{}' has no levels", f.name)));
            }
            let kinds = [f.knob.is_some(), f.sysctl.is_some(), f.governor]
                .iter()
                .filter(|x| **x)
                .count();
            if kinds > 1 {
                return Err(bad(format!(
                    "factor '{}': use one of knob, sysctl or governor",
                    f.name
                )));
            }
            for key in f.options.keys().chain(f.pre.keys()).chain(f.post.keys()) {
                if !f.levels.contains(key) {
                    return Err(bad(format!(
                        "factor '{}': '{key}' is not one of its levels {:?}",
                        f.name, f.levels
                    )));
                }
            }
            if f.governor && f.files().is_empty() {
                return Err(Error::Env(format!(
                    "{name}: factor '{}': this machine has no cpufreq governors",
                    f.name
                )));
            }
            // Unknown or unwritable knobs are refused before anything changes.
            for file in f.files() {
                knobs::check_writable(&file)
                    .map_err(|e| Error::Env(format!("{name}: factor '{}': knob {e}", f.name)))?;
            }
        }
        if let Some(m) = &self.analysis.metric {
            if !["latency", "min", "max", "mean", "p50", "p99", "p99.9"].contains(&m.as_str()) {
                return Err(bad(format!(
                    "analysis.metric '{m}' (use latency, min, max, mean, p50, p99 or p99.9)"
                )));
            }
        }
        // Every combination's command line must parse.
        for combo in self.combinations() {
            let args = self.args_for(&combo);
            let mut argv = vec!["latlab".to_string(), self.measure.command.clone()];
            argv.extend(args);
            if let Err(e) = <crate::cli::Cli as clap::Parser>::try_parse_from(&argv) {
                let msg = e.to_string();
                return Err(bad(format!(
                    "the measurement options do not parse ({}): {}",
                    argv[1..].join(" "),
                    msg.lines()
                        .next()
                        .unwrap_or("")
                        .trim_start_matches("error: ")
                )));
            }
        }
        Ok(())
    }

    /// Every level combination, as level indices per factor; the first is the baseline.
    pub fn combinations(&self) -> Vec<Vec<usize>> {
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
    pub fn args_for(&self, combo: &[usize]) -> Vec<String> {
        let mut a = self.measure.args.clone();
        for (f, &l) in self.factors.iter().zip(combo) {
            if let Some(o) = f.options.get(&f.levels[l]) {
                a.extend(o.iter().cloned());
            }
        }
        a
    }

    /// `factor=level,...` label of a combination.
    pub fn label(&self, combo: &[usize]) -> String {
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

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("plan.toml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn parses_and_crosses_factors() {
        let (_d, p) = write(
            "[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"1s\"]\n[design]\nrepeats = 3\n\
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
    fn errors_name_line_and_column() {
        let (_d, p) = write("[measure]\ncommand = \"tcp\"\n\n[design]\nrepeats = \"many\"\n");
        let e = Plan::load(&p).unwrap_err().to_string();
        assert!(e.contains("plan.toml:5:11"), "{e}");
        let (_d, p) = write("[measure]\ncommand = \"tcp\"\nargz = []\n");
        assert!(Plan::load(&p).unwrap_err().to_string().contains(":3:1"));
        let (_d, p) = write("[measure]\ncommand = \"tcp\"\nargs = [\"--warp-speed\"]\n");
        assert!(Plan::load(&p)
            .unwrap_err()
            .to_string()
            .contains("--warp-speed"));
        let (_d, p) = write("[measure]\ncommand = \"tcp\"\n[[factor]]\nname = \"k\"\nknob = \"/proc/version\"\nlevels = [\"a\"]\n");
        let e = Plan::load(&p).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("/proc/version"));
    }
}
