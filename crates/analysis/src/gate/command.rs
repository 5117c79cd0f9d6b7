//! The `latlab gate` command: reads runs (latlab JSON results or stored runs), counts each
//! run's events from its HDR histograms (bounded by the exact maximum), judges, prints, and
//! returns the exit code's error: violated is exit 1, undecided exit 4.

use super::args::GateArgs;
use super::bounds::quantile_ranks;
use super::count::count;
use super::extrapolate::{extrapolate, Extrapolation};
use super::judge::{judge, samples_to_decide, text, Judgement, Outcome, RunCount};
use super::junit;
use super::requirement::{Event, Requirement};
use latlab_core::error::{Error, Result};
use latlab_core::stats::cfmt::g;
use latlab_core::stats::dist::Dist;

impl crate::command::Command for GateArgs {
    fn run(self, _: &crate::command::Lab) -> Result<()> {
        run(&self)
    }
}

/// Runs `latlab gate`; the report goes to stdout whatever the outcome. With `--bisect` the
/// exit code is `git bisect run`'s: 0 met, 1 violated, 125 undecided or an environment that
/// cannot measure, 128 (abort) for bad usage; the message is printed first.
fn run(a: &GateArgs) -> Result<()> {
    let r = judge_all(a);
    if !a.bisect {
        return r;
    }
    let code = match &r {
        Ok(()) => return Ok(()),
        Err(Error::CheckFailed(_)) => 1,
        Err(Error::Undecided(_)) => 125,
        Err(Error::Usage(_)) => 128,
        Err(e) => {
            if e.exit_code() == 3 {
                125
            } else {
                e.exit_code()
            }
        }
    };
    if let Err(e) = &r {
        latlab_core::output::stderr(&format!("latlab: {e}\n"));
    }
    Err(Error::Passed(code))
}

fn judge_all(a: &GateArgs) -> Result<()> {
    if !(a.confidence > 0.5 && a.confidence < 1.0) {
        return Err(Error::flag(
            "--confidence",
            a.confidence,
            "must be between 0.5 and 1 (exclusive), e.g. 0.95",
        ));
    }
    if let Some(p) = &a.plan_for {
        let out = plan(p, a.rate, a.confidence)?;
        return latlab_core::output::stdout(&out).map_err(|e| Error::io("stdout", e));
    }
    let Some(req_text) = &a.requirement else {
        return Err(Error::Usage(
            "gate needs a REQUIREMENT (p99.9<100us, max<10ms, rate(>200us)<1e-6) or --plan-for"
                .into(),
        ));
    };
    let reqs = super::requirement::parse_list(req_text)
        .map_err(|e| Error::flag("REQUIREMENT", req_text, e))?;
    if a.inputs.is_empty() {
        return Err(Error::Usage(
            "gate needs at least one run: a latlab JSON result or a stored run id".into(),
        ));
    }
    if let Some(j) = &a.junit {
        latlab_core::output::check_writable(j)
            .map_err(|e| Error::flag("--junit", j.display(), format!("cannot be written: {e}")))?;
    }
    let items = crate::dataset::select::parse(&a.inputs)?;
    // The run is the unit of replication: the same run given twice is refused.
    let runs = crate::dataset::select::Resolver::new(a.store.as_deref())
        .include_disturbed(a.include_disturbed)
        .all(&items)?;
    let mut results = Vec::new();
    for req in &reqs {
        let mut counts = Vec::new();
        let mut dists = Vec::new();
        let mut max_ns = 0u64;
        for r in &runs {
            let (c, d, m) = count(&r.run, &r.name, req, a.series.as_deref())?;
            counts.push(c);
            dists.extend(d);
            max_ns = max_ns.max(m);
        }
        let j = judge(req, &counts, a.confidence, a.assume_independent_samples);
        let mut text = render(req, &counts, &j, &Dist::merge(&dists), max_ns, a);
        // --extrapolate: a rate the counts cannot decide, decided from the fitted tail.
        let ext = if a.extrapolate
            && j.outcome == Outcome::Undecided
            && !matches!(req.event, Event::Max(_))
        {
            let refs: Vec<(&latlab_core::result::Run, &str)> =
                runs.iter().map(|r| (&r.run, r.name.as_str())).collect();
            Some(extrapolate(&refs, req, a.confidence, a.series.as_deref())?)
        } else {
            None
        };
        let verdict = match &ext {
            Some(e) if j.single_run.is_none() => e.outcome,
            _ => j.verdict(),
        };
        if let Some(e) = &ext {
            text.push_str(&render_extrapolation(e, &j, verdict));
        }
        results.push((req, counts, j, text, verdict, ext));
    }
    let out = if a.json {
        let v: Vec<_> = results
            .iter()
            .map(|(req, counts, j, _, verdict, ext)| {
                let mut v = serde_json::json!({
                    "requirement": req.text,
                    "confidence": a.confidence,
                    "runs": counts.iter().map(|c| &c.name).collect::<Vec<_>>(),
                    "verdict": verdict,
                    "judgement": j,
                });
                if let Some(e) = ext {
                    v["extrapolation"] = serde_json::to_value(e).unwrap_or_default();
                }
                v
            })
            .collect();
        let v = if v.len() == 1 {
            v.into_iter().next().unwrap_or_default()
        } else {
            serde_json::Value::Array(v)
        };
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    } else {
        results
            .iter()
            .map(|r| r.3.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // The JUnit file first: a CI job reads it even when the job's log was cut.
    if let Some(path) = &a.junit {
        let cases: Vec<junit::Case> = results
            .iter()
            .map(|(req, counts, _, text, verdict, _)| junit::Case {
                name: req.text.clone(),
                outcome: *verdict,
                message: verdict_line(text),
                detail: text.clone(),
                seconds: counts.iter().map(|c| c.duration_s).sum(),
            })
            .collect();
        latlab_core::output::write_atomic(path, junit::xml(&cases).as_bytes())
            .map_err(|e| Error::io(path.display().to_string(), e))?;
    }
    latlab_core::output::stdout(&out).map_err(|e| Error::io("stdout", e))?;
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.4 == Outcome::Violated)
        .map(|r| r.0.text.as_str())
        .collect();
    let open: Vec<&str> = results
        .iter()
        .filter(|r| r.4 == Outcome::Undecided)
        .map(|r| r.0.text.as_str())
        .collect();
    if !failed.is_empty() {
        Err(Error::CheckFailed(format!(
            "requirement {} violated",
            failed.join(", ")
        )))
    } else if !open.is_empty() {
        Err(Error::Undecided(format!(
            "requirement {} undecided",
            open.join(", ")
        )))
    } else {
        Ok(())
    }
}

/// The `verdict: ...` line of a requirement's report (the JUnit message): the extrapolated
/// one where there is one.
fn verdict_line(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("verdict with extrapolation:"))
        .or_else(|| text.lines().find(|l| l.starts_with("verdict:")))
        .unwrap_or("")
        .to_string()
}

/// `max<T`'s report: each run's exact maximum against T.
fn render_max(req: &Requirement, runs: &[RunCount], j: &Judgement) -> String {
    let t = req.threshold_ns();
    let us = |ns: u64| crate::compare::verdict::sig(ns as f64 / 1e3);
    let mut s = format!(
        "requirement: {} (every run's exact maximum below {} us)\n",
        req.text,
        us(t)
    );
    s.push_str(&format!(
        "runs: {}; samples: {}; maxima: {}\n",
        runs.len(),
        j.n,
        runs.iter()
            .map(|r| format!("{} {} us", r.name, us(r.max_ns)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let over: Vec<String> = runs
        .iter()
        .filter(|r| r.max_ns >= t)
        .map(|r| format!("{} ({} us)", r.name, us(r.max_ns)))
        .collect();
    s.push_str(&format!("verdict: {}", text(j.verdict()).to_uppercase()));
    match j.outcome {
        Outcome::Met => s.push_str(&format!(" (every maximum below {} us)", us(t))),
        _ => s.push_str(&format!(
            " ({} of {} run(s) at or above {} us: {})",
            over.len(),
            runs.len(),
            us(t),
            over.join(", ")
        )),
    }
    s.push('\n');
    if let Some(w) = &j.single_run {
        s.push_str(&format!("  {w}\n"));
    } else if runs.len() == 1 {
        s.push_str("  ASSUMING this run stands for the others (--assume-independent-samples)\n");
    }
    if let Some(m) = &j.to_decide {
        s.push_str(&format!("  to decide: {m}\n"));
    }
    s
}

fn render(
    req: &Requirement,
    runs: &[RunCount],
    j: &Judgement,
    d: &Dist,
    max_ns: u64,
    a: &GateArgs,
) -> String {
    if matches!(req.event, Event::Max(_)) {
        return render_max(req, runs, j);
    }
    let conf = g(a.confidence * 100.0, 6);
    let t = g(req.threshold_ns() as f64 / 1e3, 6);
    let secs: f64 = runs.iter().map(|r| r.duration_s).sum();
    let mut s = format!(
        "requirement: {} ({} of samples {} {t} us below {}), {conf}% confidence\n",
        req.text,
        "rate",
        if req.quantile.is_some() { ">=" } else { ">" },
        g(req.limit, 6)
    );
    s.push_str(&format!(
        "runs: {} ({}); samples: {} over {} s\n",
        runs.len(),
        runs.iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        j.n,
        g(secs, 4)
    ));
    let counted = if j.m.0 == j.m.1 {
        j.m.0.to_string()
    } else {
        format!("{} to {} (histogram resolution)", j.m.0, j.m.1)
    };
    s.push_str(&format!(
        "events: {counted}; rate bounds (one-sided {conf}% each): pooled samples [{}, {}] (exact binomial, Clopper-Pearson)",
        g(j.pooled.0, 4),
        g(j.pooled.1, 4)
    ));
    if let Some((l, h)) = j.across_runs {
        s.push_str(&format!(
            ", across runs [{}, {}] (t over the runs' rates)",
            g(l, 4),
            g(h, 4)
        ));
    }
    s.push('\n');
    if let Some(q) = req.quantile {
        let max_us = max_ns as f64 / 1e3;
        let (lo, up) = quantile_ranks(q, d.n(), a.confidence);
        let (lo_v, up_v) = (
            lo.map(|k| d.at_rank(k).min(max_us)),
            up.map(|k| d.at_rank(k).min(max_us)),
        );
        // Rounded to what the bounds support (two significant digits of their width).
        let ci = lo_v.zip(up_v);
        let shown = |v: f64| crate::compare::verdict::fig(v.min(max_us), ci);
        s.push_str(&format!(
            "p{}: {} us observed; bounds (order statistics) [{}, {}] us; exact max {} us\n",
            g(q * 100.0, 8),
            shown(d.quantile(q)),
            lo_v.map_or("-".into(), shown),
            up_v.map_or("none: too few samples".into(), shown),
            crate::compare::verdict::sig(max_us)
        ));
    }
    s.push_str(&format!("verdict: {}", text(j.verdict()).to_uppercase()));
    match j.outcome {
        Outcome::Met => s.push_str(&format!(
            " (rate upper bound {} < {})",
            g(j.bounds.1, 4),
            g(req.limit, 6)
        )),
        Outcome::Violated => s.push_str(&format!(
            " (rate lower bound {} > {})",
            g(j.bounds.0, 4),
            g(req.limit, 6)
        )),
        Outcome::Undecided => {}
    }
    s.push('\n');
    if let Some(w) = &j.single_run {
        s.push_str(&format!("  {w}\n"));
    } else if runs.len() == 1 {
        s.push_str("  ASSUMING independent samples (--assume-independent-samples): bursts and run-to-run variation are ignored\n");
    }
    if let Some(m) = &j.to_decide {
        s.push_str(&format!("  to decide: {m}\n"));
    }
    s
}

/// What `--extrapolate` adds to the text.
fn render_extrapolation(e: &Extrapolation, j: &Judgement, verdict: Outcome) -> String {
    let mut s = String::new();
    if let Some(f) = &e.refusal {
        s.push_str(&format!(
            "extrapolation: none, the tail cannot be modelled: {}\n  what would help: {}\n",
            f.reason, f.help
        ));
        return s;
    }
    if let (Some((r, lo, hi)), Some(f)) = (e.rate, &e.fit) {
        s.push_str(&format!(
            "extrapolation (generalized Pareto tail above {} us, shape {}, {} clusters; Anderson-Darling p = {}): rate {} with bounds [{}, {}] -> {}\n",
            g(f.threshold / 1e3, 4),
            g(f.xi, 3),
            f.clusters,
            g(f.gof_p, 2),
            g(r, 3),
            g(lo, 3),
            g(hi, 3),
            text(e.outcome)
        ));
    }
    if j.single_run.is_some() && e.outcome != Outcome::Undecided {
        s.push_str("  one run: the fit's outcome is not a verdict either (the run is the unit of replication)\n");
    }
    s.push_str(&format!(
        "verdict with extrapolation: {}\n",
        text(verdict).to_uppercase()
    ));
    s
}

/// `--plan-for`: how long a run must be before the requirement can be decided.
fn plan(req_text: &str, rate: Option<f64>, conf: f64) -> Result<String> {
    let req = Requirement::parse(req_text).map_err(|e| Error::flag("--plan-for", req_text, e))?;
    let rate =
        rate.ok_or_else(|| Error::Usage("--plan-for needs --rate HZ: samples per second".into()))?;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(Error::flag(
            "--rate",
            rate,
            "must be a positive number of samples per second",
        ));
    }
    let time = |n: u64| {
        let secs = n as f64 / rate;
        humantime::format_duration(std::time::Duration::from_secs(secs.ceil() as u64)).to_string()
    };
    let best = samples_to_decide(0.0, req.limit, conf).unwrap_or(u64::MAX);
    let half = samples_to_decide(req.limit / 2.0, req.limit, conf).unwrap_or(u64::MAX);
    let twice = samples_to_decide(req.limit * 2.0, req.limit, conf).unwrap_or(u64::MAX);
    let conf = g(conf * 100.0, 6);
    Ok(format!(
        "requirement {} at {} samples/s, {conf}% confidence (exact binomial bounds):\n\
         to show it met:      at least {best} samples ({}) with no sample past {} us;\n\
         \x20                    {half} samples ({}) if the true rate is half the limit\n\
         to show it violated: {twice} samples ({}) if the true rate is twice the limit\n\
         Spread them over two or more runs: the run is the unit of replication, and `latlab gate`\n\
         gives no verdict on one run unless --assume-independent-samples.\n",
        req.text,
        g(rate, 6),
        time(best),
        g(req.threshold_ns() as f64 / 1e3, 6),
        time(half),
        time(twice),
    ))
}
