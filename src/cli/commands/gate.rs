//! The `latlab gate` command: reads runs (latlab JSON results or stored runs), counts each
//! run's events from its HDR histograms (bounded by the exact maximum), judges, prints, and
//! returns the exit code's error: violated is exit 1, undecided exit 4.

use super::extrapolate::{extrapolate, Extrapolation};
use crate::cli::GateArgs;
use crate::error::{Error, Result};
use crate::gate::bounds::quantile_ranks;
use crate::gate::judge::{judge, samples_to_decide, text, Judgement, Outcome, RunCount};
use crate::gate::requirement::{Event, Requirement};
use crate::result::Run;
use crate::stats::cfmt::g;
use crate::stats::dist::Dist;

/// Runs `latlab gate`; the report goes to stdout whatever the outcome.
pub fn run(a: &GateArgs) -> Result<()> {
    if !(a.confidence > 0.5 && a.confidence < 1.0) {
        return Err(Error::flag(
            "--confidence",
            a.confidence,
            "must be between 0.5 and 1 (exclusive), e.g. 0.95",
        ));
    }
    if let Some(p) = &a.plan_for {
        let out = plan(p, a.rate, a.confidence)?;
        return crate::output::stdout(&out).map_err(|e| Error::io("stdout", e));
    }
    let Some(req_text) = &a.requirement else {
        return Err(Error::Usage(
            "gate needs a REQUIREMENT (p99.9<100us, rate(>200us)<1e-6) or --plan-for".into(),
        ));
    };
    let req = Requirement::parse(req_text).map_err(|e| Error::flag("REQUIREMENT", req_text, e))?;
    if a.inputs.is_empty() {
        return Err(Error::Usage(
            "gate needs at least one run: a latlab JSON result or a stored run id".into(),
        ));
    }
    let items = crate::compare::select::parse(&a.inputs)?;
    // The run is the unit of replication: the same run given twice is refused.
    let runs = crate::compare::select::Resolver::new(a.store.as_deref()).all(&items)?;
    let mut counts = Vec::new();
    let mut dists = Vec::new();
    let mut max_ns = 0u64;
    for r in &runs {
        let (c, d, m) = count(&r.run, &r.name, &req, a.series.as_deref())?;
        counts.push(c);
        dists.push(d);
        max_ns = max_ns.max(m);
    }
    let j = judge(&req, &counts, a.confidence, a.assume_independent_samples);
    let ext = if a.extrapolate && j.outcome == Outcome::Undecided {
        let refs: Vec<(&Run, &str)> = runs.iter().map(|r| (&r.run, r.name.as_str())).collect();
        Some(extrapolate(&refs, &req, a.confidence, a.series.as_deref())?)
    } else {
        None
    };
    let verdict = match &ext {
        Some(e) if j.single_run.is_none() => e.outcome,
        _ => j.verdict(),
    };
    let out = if a.json {
        let mut v = serde_json::json!({
            "requirement": req.text,
            "confidence": a.confidence,
            "runs": counts.iter().map(|c| &c.name).collect::<Vec<_>>(),
            "verdict": verdict,
            "judgement": j,
        });
        if let Some(e) = &ext {
            v["extrapolation"] = serde_json::to_value(e).unwrap_or_default();
        }
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    } else {
        let mut s = render(&req, &counts, &j, &Dist::merge(&dists), max_ns, a);
        if let Some(e) = &ext {
            s.push_str(&render_extrapolation(e, &j, verdict));
        }
        s
    };
    crate::output::stdout(&out).map_err(|e| Error::io("stdout", e))?;
    match verdict {
        Outcome::Met => Ok(()),
        Outcome::Violated => Err(Error::CheckFailed(format!(
            "requirement {} violated",
            req.text
        ))),
        Outcome::Undecided => Err(Error::Undecided(format!(
            "requirement {} undecided",
            req.text
        ))),
    }
}

/// Counts one run: (counts, its distribution in µs, its exact maximum in ns).
fn count(
    run: &Run,
    name: &str,
    req: &Requirement,
    series: Option<&str>,
) -> Result<(RunCount, Dist, u64)> {
    let chosen: Vec<_> = run
        .series
        .iter()
        .filter(|s| series.is_none_or(|n| n == s.name))
        .collect();
    if chosen.is_empty() {
        return Err(Error::Usage(format!(
            "{name}: no series {}",
            series.unwrap_or("at all")
        )));
    }
    if let Some(s) = chosen.iter().find(|s| s.unit != "ns") {
        return Err(Error::Usage(format!(
            "{name}: series {} holds {}, not latencies: gate judges latency requirements",
            s.name, s.unit
        )));
    }
    let (mut n, mut lo, mut hi, mut max) = (0u64, 0u64, 0u64, 0u64);
    let mut parts = Vec::new();
    for s in &chosen {
        let h = &s.histogram;
        let hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(
            h.lowest_ns.max(1),
            h.highest_ns.max(2 * h.lowest_ns.max(1)),
            h.significant_digits.clamp(1, 5),
        )
        .map_err(|e| Error::Usage(format!("{name}: series {}: bad histogram: {e}", s.name)))?;
        let smax = s.summary.max_ns;
        max = max.max(smax);
        for &[v, c] in &h.buckets {
            let bottom = hdr.lowest_equivalent(v);
            n = n.saturating_add(c);
            let (sure, maybe) = match req.event {
                Event::AtLeast(t) => (bottom >= t, v >= t && smax >= t),
                Event::Above(t) => (bottom > t, v > t && smax > t),
            };
            lo += if sure { c } else { 0 };
            hi += if maybe || sure { c } else { 0 };
        }
        // Imported runs: samples past the tool's histogram sit at the exact max, but all that
        // is known of them is that they exceed `above_ns`.
        if let Some(b) = s.extra.as_ref().map(|e| &e["beyond_histogram"]) {
            if let (Some(c), Some(above)) = (b["count"].as_u64(), b["above_ns"].as_u64()) {
                let bottom_of_max = hdr.lowest_equivalent(smax);
                let sure_at_max = match req.event {
                    Event::AtLeast(t) => bottom_of_max >= t,
                    Event::Above(t) => bottom_of_max > t,
                };
                let sure_past = match req.event {
                    Event::AtLeast(t) => above >= t,
                    Event::Above(t) => above > t,
                };
                if sure_at_max && !sure_past {
                    lo = lo.saturating_sub(c);
                }
            }
        }
        parts.push(Dist::from_histogram(h, 1e-3));
    }
    if n == 0 {
        return Err(Error::Usage(format!(
            "{name}: the selected series hold no samples"
        )));
    }
    let c = RunCount {
        name: name.to_string(),
        n,
        m_lo: lo,
        m_hi: hi.max(lo),
        duration_s: run.duration_s,
    };
    Ok((c, Dist::merge(&parts), max))
}

fn render(
    req: &Requirement,
    runs: &[RunCount],
    j: &Judgement,
    d: &Dist,
    max_ns: u64,
    a: &GateArgs,
) -> String {
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
