//! `latlab bisect PLAN.toml`: which kernel of an ordered list made things worse. The plan's one
//! boot factor lists the kernels in order (the first known good, the last known bad); each
//! step boots a kernel between the last good and the first bad, and decides it against both
//! ends by the A/B statistics over boots, adding boots until it is decided (a cap: skipped).
//! Every boot is stored as a run of one experiment, so `latlab compare exp:ID` shows them all.
//! `--candidate KERNEL` decides one kernel against the ends instead, speaking `git bisect
//! run`'s exit codes (0 good, 1 bad, 125 skip).

mod decide;

use super::plan::Plan;
use super::runner::{one_run, plan_name, Place};
use crate::settings::Knobs;
use decide::{decide, ends_differ, next, Decision};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::rt::Control;
use latlab_core::stats::dist::Dist;
use std::path::Path;

/// How a bisection runs besides its plan.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    /// The store the boots' runs go to.
    pub store: Option<&'a str>,
    /// `--set KEY=VALUE` overrides of the plan.
    pub sets: &'a [String],
    /// Boots of one kernel before a step is skipped (at least 2).
    pub max_boots: u32,
    /// Confidence of each decision (0.95).
    pub confidence: f64,
    /// `--candidate`: the one kernel to decide, and its command line.
    pub candidate: Option<(String, String)>,
}

/// What a bisection ends with: its report and exit code.
#[derive(Debug, Clone)]
pub struct Ended {
    /// What was found, step by step.
    pub report: String,
    /// 0 found (a candidate: good), 1 a candidate is bad, 4 undecided (125 for a candidate).
    pub code: i32,
}

/// Boots every kernel gets before it is judged.
const MIN_BOOTS: usize = 2;

/// The figure a bisection decides on, from a run: the mean, the maximum, the minimum exactly
/// (from the series summaries), percentiles from the merged histograms.
fn figure(run: &Run, metric: &str) -> Option<f64> {
    let live: Vec<_> = run
        .series
        .iter()
        .filter(|s| s.unit == "ns" && s.summary.count > 0)
        .collect();
    if live.is_empty() {
        return None;
    }
    let q = match metric {
        "mean" => {
            let n: u64 = live.iter().map(|s| s.summary.count).sum();
            let sum: f64 = live
                .iter()
                .map(|s| s.summary.mean_ns * s.summary.count as f64)
                .sum();
            return Some(sum / n as f64);
        }
        "max" => {
            return live
                .iter()
                .map(|s| s.summary.max_ns as f64)
                .reduce(f64::max)
        }
        "min" => {
            return live
                .iter()
                .map(|s| s.summary.min_ns as f64)
                .reduce(f64::min)
        }
        "p50" => 0.5,
        "p99.9" => 0.999,
        _ => 0.99,
    };
    let parts: Vec<Dist> = live
        .iter()
        .map(|s| {
            let (lo, hi) = (s.summary.min_ns.min(s.summary.max_ns), s.summary.max_ns);
            let b = s.histogram.buckets.iter();
            Dist::from_counts(b.map(|&[v, c]| (v.clamp(lo, hi) as f64, c)), 1.0)
        })
        .collect();
    let d = Dist::merge(&parts);
    (d.n() > 0).then(|| d.quantile(q))
}

/// A bisection under way: the plan, its levels' figures (one per boot) and the machine.
struct Bisection<'a> {
    plan: Plan,
    at: Place<'a>,
    knobs: &'a mut Knobs,
    control: &'a Control,
    metric: String,
    higher: bool,
    confidence: f64,
    max_boots: usize,
    /// Per level: one figure per boot made.
    figures: Vec<Vec<f64>>,
    /// Boots whose result came back without the figure (said).
    lines: Vec<String>,
}

impl Bisection<'_> {
    /// One more boot of level `i`; false when interrupted.
    fn boot(&mut self, i: usize) -> Result<bool> {
        if self.control.was_interrupted() {
            return Ok(false);
        }
        let r = self.figures[i].len() as u32 + 1;
        let progress = format!("[{}] boot {r}", self.plan.label(&[i]));
        match one_run(
            &self.plan,
            &self.at,
            self.knobs,
            self.control,
            (i, r),
            &progress,
        )? {
            Some(run) => match figure(&run, &self.metric) {
                Some(f) => self.figures[i].push(f),
                None => {
                    return Err(Error::Env(format!(
                        "{progress}: its run has no latency to take a {} from",
                        self.metric
                    )))
                }
            },
            None if self.control.was_interrupted() => return Ok(false),
            // A failed boot counts against the cap: a kernel that does not boot is skipped.
            None => self.figures[i].push(f64::NAN),
        }
        Ok(true)
    }

    /// The figures of level `i` that came from boots that worked.
    fn of(&self, i: usize) -> Vec<f64> {
        self.figures[i]
            .iter()
            .copied()
            .filter(|f| f.is_finite())
            .collect()
    }

    /// Boots both ends until the bad one is proven worse (or the cap): the p-value, or None.
    fn ends(&mut self, good: usize, bad: usize) -> Result<Option<f64>> {
        loop {
            for i in [good, bad] {
                while self.of(i).len() < MIN_BOOTS && self.figures[i].len() < self.max_boots {
                    if !self.boot(i)? {
                        return Ok(None);
                    }
                }
            }
            let (proven, p) =
                ends_differ(&self.of(good), &self.of(bad), self.confidence, self.higher);
            if proven {
                return Ok(Some(p));
            }
            if self.figures[good].len() >= self.max_boots
                && self.figures[bad].len() >= self.max_boots
            {
                self.lines.push(format!(
                    "the known-bad {} is not proven worse than the known-good {} after {} boots each (p = {})",
                    self.plan.label(&[bad]),
                    self.plan.label(&[good]),
                    self.max_boots,
                    latlab_core::stats::cfmt::g(p, 2)
                ));
                return Ok(None);
            }
            for i in [good, bad] {
                if !self.boot(i)? {
                    return Ok(None);
                }
            }
        }
    }

    /// Boots level `i` until it is decided against the ends (or the cap).
    fn step(&mut self, i: usize, good: usize, bad: usize) -> Result<Decision> {
        loop {
            let s = decide(
                &self.of(good),
                &self.of(bad),
                &self.of(i),
                self.confidence,
                self.higher,
            );
            if s.decision != Decision::Open || self.figures[i].len() >= self.max_boots {
                let n = self.figures[i].len();
                let failed = n - self.of(i).len();
                self.lines.push(format!(
                    "{}: {} after {n} boot(s){} ({} {}; p = {} against the good end, {} against the bad)",
                    self.plan.label(&[i]),
                    match s.decision {
                        Decision::Good => "good",
                        Decision::Bad => "bad",
                        Decision::Open => "undecided: skipped",
                    },
                    if failed > 0 { format!(", {failed} failed") } else { String::new() },
                    self.metric,
                    said(&self.of(i)),
                    latlab_core::stats::cfmt::g(s.p_good, 2),
                    latlab_core::stats::cfmt::g(s.p_bad, 2),
                ));
                return Ok(s.decision);
            }
            if !self.boot(i)? {
                return Ok(Decision::Open);
            }
        }
    }
}

/// Figures in µs, for the report.
fn said(v: &[f64]) -> String {
    let us: Vec<String> = v
        .iter()
        .map(|x| latlab_core::stats::cfmt::g(x / 1e3, 3))
        .collect();
    format!("{} µs", us.join(", "))
}

/// Reads the plan and checks it is one a bisection can walk: one factor, a boot factor, at
/// least two kernels (with `--candidate`: the ends and the candidate).
fn load(path: &Path, o: &Options<'_>) -> Result<Plan> {
    let mut plan = Plan::load_with(path, o.sets)?;
    let name = path.display();
    if plan.kexec.is_some() {
        // Each step decided in this one process, which a kexec would end.
        return Err(Error::Usage(format!(
            "{name}: a bisection boots its kernels in guests; this plan boots them here by \
             kexec ([kexec]): remove it, or compare the kernels with latlab run"
        )));
    }
    let f = match plan.factors.as_slice() {
        [f] if f.boot => f,
        _ => {
            return Err(Error::Usage(format!(
                "{name}: a bisection walks one boot factor (boot = true) whose levels are the kernels in order, first good, last bad; this plan has {} factor(s){}",
                plan.factors.len(),
                if plan.boot_factor().is_none() { ", none a boot factor" } else { "" }
            )))
        }
    };
    if f.levels.len() < 2 {
        return Err(Error::Usage(format!(
            "{name}: factor '{}' lists {} kernel(s): a bisection needs the good and the bad end",
            f.name,
            f.levels.len()
        )));
    }
    if !(2..=100).contains(&o.max_boots) {
        return Err(Error::flag(
            "--max-boots",
            o.max_boots.to_string(),
            "2 to 100 boots",
        ));
    }
    if let Some((kernel, cmdline)) = &o.candidate {
        let f = &mut plan.factors[0];
        if !Path::new(kernel).is_file()
            && !matches!(kernel.as_str(), "rt" | "generic")
            && !kernel.starts_with("linux-image-")
        {
            return Err(Error::flag(
                "--candidate",
                kernel,
                "not a kernel image file, rt, generic or a linux-image-* package",
            ));
        }
        if cmdline.chars().any(char::is_control) {
            return Err(Error::flag("--cmdline", cmdline, "one line of text"));
        }
        let level = "candidate".to_string();
        if f.levels.contains(&level) {
            return Err(Error::Usage(format!(
                "{name}: a level is named 'candidate', the name --candidate takes"
            )));
        }
        f.kernel.insert(level.clone(), kernel.clone());
        f.cmdline.insert(level.clone(), cmdline.clone());
        f.levels.push(level);
    }
    Ok(plan)
}

/// Runs the bisection the plan at `path` describes.
pub fn run(path: &Path, o: &Options<'_>, control: &Control) -> Result<Ended> {
    let plan = load(path, o)?;
    // Booted kernels only: nothing of this machine is set, so no settings lock is taken.
    let mut knobs = Knobs::idle();
    let started = std::time::SystemTime::now();
    let exp = format!("exp-{}", latlab_core::result::new_run_id(started));
    let plan_file = plan_name(path);
    let n = plan.factors[0].levels.len();
    let metric = match plan.analysis.metric.as_deref() {
        None | Some("latency") => "p99".to_string(),
        Some(m) => m.to_string(),
    };
    latlab_core::note!(
        "latlab bisect {}: experiment {exp}, {} kernel(s), deciding on each boot's {metric}, up to {} boots a kernel",
        path.display(),
        if o.candidate.is_some() { n - 1 } else { n },
        o.max_boots
    );
    let mut b = Bisection {
        higher: plan.analysis.higher_is_better.unwrap_or(false),
        plan,
        at: Place {
            exp: &exp,
            plan_file: &plan_file,
            store: o.store,
        },
        knobs: &mut knobs,
        control,
        metric,
        confidence: o.confidence,
        max_boots: o.max_boots as usize,
        figures: vec![Vec::new(); n],
        lines: Vec::new(),
    };
    let ended = walk(&mut b, o.candidate.is_some());
    let failed = knobs.restore();
    if !failed.is_empty() {
        return Err(Error::Env(format!(
            "could not restore: {}; the journal is kept for 'latlab restore'",
            failed.join("; ")
        )));
    }
    let (mut report, code) = ended?;
    report.insert_str(0, &format!("experiment {exp}\n"));
    if control.was_interrupted() {
        report.push_str("interrupted: undecided\n");
    }
    Ok(Ended { report, code })
}

/// The search itself: the ends, then halving (or the one candidate).
fn walk(b: &mut Bisection<'_>, candidate: bool) -> Result<(String, i32)> {
    let n = b.figures.len();
    let (good, bad) = (0, if candidate { n - 2 } else { n - 1 });
    let undecided = if candidate { 125 } else { 4 };
    let Some(p_ends) = b.ends(good, bad)? else {
        return Ok((b.lines.join("\n") + "\nundecided\n", undecided));
    };
    b.lines.push(format!(
        "ends: {} good ({}), {} bad ({}): proven worse, p = {}",
        b.plan.label(&[good]),
        said(&b.of(good)),
        b.plan.label(&[bad]),
        said(&b.of(bad)),
        latlab_core::stats::cfmt::g(p_ends, 2)
    ));
    if candidate {
        let d = b.step(n - 1, good, bad)?;
        let code = match d {
            Decision::Good => 0,
            Decision::Bad => 1,
            Decision::Open => 125,
        };
        return Ok((b.lines.join("\n") + "\n", code));
    }
    let (mut lo, mut hi) = (good, bad);
    let mut skipped = Vec::new();
    let mut decisions = 1usize;
    while let Some(i) = next(lo, hi, &skipped) {
        if b.control.was_interrupted() {
            break;
        }
        match b.step(i, good, bad)? {
            Decision::Good => lo = i,
            Decision::Bad => hi = i,
            Decision::Open => skipped.push(i),
        }
        decisions += 1;
    }
    let alpha = 1.0 - b.confidence;
    let mut text = b.lines.join("\n") + "\n";
    if hi == lo + 1 && !b.control.was_interrupted() {
        let f = &b.plan.factors[0];
        let level = &f.levels[hi];
        text.push_str(&format!(
            "first bad: {}={level} (kernel {}{}), after {}={}; {decisions} decision(s) at {:.0} % each: wrong with probability at most {:.0} %\n",
            f.name,
            f.kernel_of(level),
            f.cmdline
                .get(level)
                .filter(|c| !c.is_empty())
                .map_or(String::new(), |c| format!(" booted '{c}'")),
            f.name,
            f.levels[lo],
            b.confidence * 100.0,
            (decisions as f64 * alpha * 100.0).min(100.0)
        ));
        return Ok((text, 0));
    }
    let f = &b.plan.factors[0];
    let between: Vec<&str> = (lo + 1..=hi).map(|i| f.levels[i].as_str()).collect();
    text.push_str(&format!(
        "undecided: the first bad kernel is one of {} (skipped levels could not be decided)\n",
        between.join(", ")
    ));
    Ok((text, 4))
}
