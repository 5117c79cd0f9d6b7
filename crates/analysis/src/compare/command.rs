//! `latlab compare` (tail-aware mode) from its arguments: flags checked, data sets loaded,
//! analysed and rendered by [`crate::compare`].

use super::args::CompareArgs;
use super::inputs::{load, ReadOpts};
use super::{analysis, render};
use crate::command::Lab;
use latlab_core::error::{Error, Result};

impl crate::command::Command for CompareArgs {
    fn run(self, lab: &Lab) -> Result<()> {
        let text = run(&self, lab)?;
        latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e))
    }
}

/// Runs `latlab compare` (tail-aware mode): the text to print.
fn run(a: &CompareArgs, lab: &Lab) -> Result<String> {
    if let Some(exp) = experiment_named(a)? {
        return experiment(a, &exp);
    }
    if a.sets.len() < 2 {
        return Err(Error::Usage(
            "compare needs at least two data sets: a baseline and one to compare".into(),
        ));
    }
    check(a)?;
    if let Some(p) = a.tail_at {
        crate::tail::check_probabilities("--tail-at", &[p])?;
    }
    let opts = ReadOpts {
        read: read_opts(a),
        metric: a.metric,
        scale: match a.unit {
            latlab_core::config::DisplayUnit::Ns => 1.0,
            latlab_core::config::DisplayUnit::Us => 1e-3,
        },
    };
    // A per-run figure of latlab runs: the runs are kept whole, so sets of repeated runs are
    // compared per metric over the runs (`--metric` leads the verdict sentence), never as a
    // percentile of the runs' percentiles.
    use super::inputs::Metric;
    let headline = match a.metric {
        Metric::P50 => Some("p50"),
        Metric::P99 => Some("p99"),
        Metric::P999 => Some("p99.9"),
        Metric::Max => Some("max"),
        Metric::Mean => Some("mean"),
        Metric::Latency | Metric::Min => None,
    };
    let mut opts = opts;
    if headline.is_some() {
        opts.metric = Metric::Latency;
    }
    let loaded = a
        .sets
        .iter()
        .map(|s| load(s.as_os_str(), &opts))
        .collect::<Result<Vec<_>>>();
    let mut sources = match loaded {
        // Runs without a histogram (imported pmqtest runs): their exact max, mean or min,
        // one figure per run.
        Err(e)
            if matches!(a.metric, Metric::Max | Metric::Mean | Metric::Min)
                && e.to_string()
                    .contains(super::inputs::NO_HISTOGRAM) =>
        {
            let mut o = opts.clone();
            o.metric = a.metric;
            let s = a
                .sets
                .iter()
                .map(|s| load(s.as_os_str(), &o))
                .collect::<Result<Vec<_>>>()?;
            let an = super::analyse(&s, &settings_of(a, &a.unit.to_string()));
            return Ok(render::render(&an, a.format));
        }
        r => r?,
    };
    let per_metric = headline.is_some()
        && !a.assume_independent_samples
        && sources.iter().all(|s| s.from_json && s.runs.len() >= 2);
    if headline.is_some() && !per_metric {
        // One figure per run, as ministat would see them.
        for s in sources.iter_mut().filter(|s| s.from_json) {
            *s = super::per_run::figures_of(s, a.metric)?;
        }
    }
    check_sets(&sources, lab)?;
    let unit = if sources.iter().any(|s| s.from_json) {
        a.unit.to_string()
    } else {
        String::new()
    };
    let settings = analysis::Settings {
        confidence: a.confidence / 100.0,
        replicates: a.bootstrap,
        seed: a.seed,
        higher_is_better: a.higher_is_better,
        unit,
        assume_independent: a.assume_independent_samples,
    };
    let mut an = super::analyse(&sources, &settings);
    if let Some(h) = headline.filter(|_| per_metric) {
        an.headline = h.to_string();
    }
    let Some(p) = a.tail_at else {
        return Ok(render::render(&an, a.format));
    };
    let sets = tail_sets(a, &sources);
    with_tail(&an, a, p, sets)
}

/// The experiment `compare` compares the levels of: `--experiment`, or one set that is
/// `exp:ID` alone.
fn experiment_named(a: &CompareArgs) -> Result<Option<String>> {
    let single_exp = match a.sets.as_slice() {
        [one] => match crate::dataset::select::parse(&[one])?.as_slice() {
            [crate::dataset::select::Item {
                sel: crate::dataset::select::Selector::Exp(e),
                ..
            }] => Some(e.clone()),
            _ => None,
        },
        _ => None,
    };
    if a.experiment.is_some() && !a.sets.is_empty() {
        return Err(Error::Usage(
            "compare --experiment takes no other sets: it compares the experiment's levels".into(),
        ));
    }
    Ok(a.experiment.clone().or(single_exp))
}

/// Refuses two sets with one label, and says when the sets hold different measurements or
/// share runs.
fn check_sets(sources: &[super::inputs::Source], lab: &Lab) -> Result<()> {
    let mut labels = std::collections::HashSet::new();
    for s in sources {
        if !labels.insert(s.label.as_str()) {
            return Err(Error::Usage(format!(
                "two sets are labelled '{}': name them with LABEL=PATH",
                s.label
            )));
        }
    }
    // Two of latlab's own measurements that are not the same one (a wake-up latency against
    // a clock's cost) compare as numbers, but they measure different things: said. A cyclic
    // run against a monitor's or a qualification's (the same threads), or against an imported
    // peer's (cyclictest: the point of comparing), is not.
    let family = |k: &str| match k {
        "monitor" | "qualify" => "cyclic".to_string(),
        k => k.to_string(),
    };
    let mut kinds: Vec<String> = sources
        .iter()
        .flat_map(|s| s.info.iter().map(|r| r.kind.as_str()))
        .filter(|k| lab.is_native(k))
        .map(family)
        .collect();
    kinds.sort();
    kinds.dedup();
    if kinds.len() > 1 {
        latlab_core::note!(
            "latlab: warning: the sets hold different measurements ({}): their figures are \
             compared as numbers, but they do not measure the same thing",
            latlab_core::output::printable(&kinds.join(", "))
        );
    }
    // A run in two sets makes them look more alike than they are (a run counts once in a set
    // already): said, not refused (comparing a set with a superset can be meant).
    for (i, x) in sources.iter().enumerate() {
        for y in &sources[i + 1..] {
            let shared: Vec<&str> = x
                .info
                .iter()
                .filter(|r| y.info.iter().any(|q| q.id == r.id))
                .map(|r| r.name.as_str())
                .collect();
            if !shared.is_empty() {
                latlab_core::note!(
                    "latlab: warning: {} in both '{}' and '{}': the sets share runs, so a \
                     difference between them is understated",
                    latlab_core::output::printable(&shared.join(", ")),
                    latlab_core::output::printable(&x.label),
                    latlab_core::output::printable(&y.label)
                );
            }
        }
    }
    Ok(())
}

/// How the sets' files and runs are read, as every analysis command reads them.
fn read_opts(a: &CompareArgs) -> crate::dataset::ReadOpts {
    crate::dataset::ReadOpts {
        column: a.column,
        delim: a.delimiter.as_bytes().to_vec(),
        series: a.series.clone(),
        store: a.store.clone(),
        include_disturbed: a.include_disturbed,
    }
}

/// Each set read again as `tail` reads data, labelled as the comparison labelled it.
fn tail_sets(
    a: &CompareArgs,
    sources: &[super::inputs::Source],
) -> Vec<(String, Result<crate::tail::Loaded>)> {
    let topts = crate::tail::ReadOpts {
        read: read_opts(a),
        no_decluster: false,
    };
    a.sets
        .iter()
        .zip(sources)
        .map(|(spec, src)| {
            let (_, rest) = super::inputs::split_label(spec);
            (
                src.label.clone(),
                crate::tail::inputs::load(&[rest.to_os_string()], &topts),
            )
        })
        .collect()
}

/// The comparison with each set's tail estimate at `p` (`--tail-at`) after it: a table in
/// text and Markdown, a `tail` member in JSON.
fn with_tail(
    an: &analysis::Analysis,
    a: &CompareArgs,
    p: f64,
    sets: Vec<(String, Result<crate::tail::Loaded>)>,
) -> Result<String> {
    let req = crate::tail::Request::per_sample(&[p]);
    let mut rows = Vec::new();
    for (label, data) in sets {
        let r = crate::tail::estimate(&data?, &req)?;
        rows.push((label, r));
    }
    if a.format == render::Format::Json {
        let mut v = serde_json::to_value(an).unwrap_or_default();
        v["tail"] = serde_json::json!(rows
            .iter()
            .map(|(l, r)| serde_json::json!({
                "set": l,
                "p": p,
                "unit": r.unit,
                "quantile": r.quantiles.first(),
                "fit": r.fit,
                "refusal": r.refusal,
            }))
            .collect::<Vec<_>>());
        return Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n");
    }
    let mut out = render::render(an, a.format);
    let f = |r: &crate::tail::Report, v: Option<f64>, none: &str| {
        v.map_or(none.to_string(), |x| {
            crate::tail::render::value(r, a.unit, x)
        })
    };
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|(l, r)| match (&r.refusal, r.quantiles.first()) {
            (Some(why), _) => vec![l.clone(), "refused".into(), why.reason.clone()],
            (None, Some(q)) => vec![
                l.clone(),
                f(r, q.value, "-"),
                format!("{} ... {}", f(r, q.low, "-"), f(r, q.high, "unbounded")),
            ],
            (None, None) => vec![l.clone(), "-".into(), String::new()],
        })
        .collect();
    let unit = if rows.iter().any(|(_, r)| r.unit == "ns") {
        format!(" ({})", a.unit)
    } else {
        String::new()
    };
    out.push_str(&format!(
        "\ntail: the latency exceeded with probability {} per sample{unit}, a generalized Pareto fit per set (latlab tail), 95 % profile-likelihood interval\n",
        latlab_core::stats::cfmt::g(p, 3)
    ));
    let head = ["set", "latency", "interval"];
    if a.format == render::Format::Markdown {
        out.push_str(&render::markdown_table(&head, &table));
    } else {
        out.push_str(&crate::export::columns::render_left(
            &head, &table,
        ));
    }
    Ok(out)
}

/// `compare --experiment EXP`: every level against the baseline, per metric over the runs.
fn experiment(a: &CompareArgs, exp: &str) -> Result<String> {
    check(a)?;
    let levels = crate::dataset::select::experiment_levels(
        exp,
        a.store.as_deref(),
        "--experiment",
        a.include_disturbed,
    )?;
    let levels: Vec<(String, Vec<(latlab_core::result::Run, String)>)> = levels
        .into_iter()
        .map(|(l, rs)| (l, rs.into_iter().map(|r| (r.run, r.name)).collect()))
        .collect();
    let settings = analysis::Settings {
        confidence: a.confidence / 100.0,
        replicates: a.bootstrap,
        seed: a.seed,
        higher_is_better: a.higher_is_better,
        unit: a.unit.to_string(),
        assume_independent: a.assume_independent_samples,
    };
    let scale = match a.unit {
        latlab_core::config::DisplayUnit::Ns => 1.0,
        latlab_core::config::DisplayUnit::Us => 1e-3,
    };
    use super::inputs::Metric;
    let headline = match a.metric {
        Metric::Latency | Metric::P99 | Metric::Min => "p99",
        Metric::P50 => "p50",
        Metric::P999 => "p99.9",
        Metric::Max => "max",
        Metric::Mean => "mean",
    };
    let (an, notes) =
        super::levels::compare_levels(&levels, &settings, scale, headline);
    let Some(mut an) = an else {
        return Err(Error::Usage(format!(
            "experiment {exp}: {}",
            notes.join("; ")
        )));
    };
    an.warnings.extend(notes);
    an.warnings
        .extend(super::verdict::group_warnings(
            levels.iter().flat_map(|(_, runs)| {
                runs.iter()
                    .map(|(r, n)| (n.as_str(), r.warnings.as_slice()))
            }),
        ));
    let Some(p) = a.tail_at else {
        return Ok(render::render(&an, a.format));
    };
    crate::tail::check_probabilities("--tail-at", &[p])?;
    let sets = levels
        .iter()
        .map(|(l, runs)| {
            let refs: Vec<(&latlab_core::result::Run, &str)> =
                runs.iter().map(|(r, n)| (r, n.as_str())).collect();
            (
                l.clone(),
                crate::tail::inputs::from_runs(
                    &refs,
                    &crate::tail::ReadOpts {
                        read: crate::dataset::ReadOpts {
                            series: a.series.clone(),
                            ..Default::default()
                        },
                        no_decluster: false,
                    },
                ),
            )
        })
        .collect();
    with_tail(&an, a, p, sets)
}

fn settings_of(a: &CompareArgs, unit: &str) -> analysis::Settings {
    analysis::Settings {
        confidence: a.confidence / 100.0,
        replicates: a.bootstrap,
        seed: a.seed,
        higher_is_better: a.higher_is_better,
        unit: unit.to_string(),
        assume_independent: a.assume_independent_samples,
    }
}

/// The flags every form of compare checks.
fn check(a: &CompareArgs) -> Result<()> {
    if !(a.confidence > 50.0 && a.confidence < 100.0) {
        return Err(Error::flag(
            "--confidence",
            a.confidence,
            "must be a percentage between 50 and 100 (exclusive)",
        ));
    }
    if a.bootstrap < 100 || a.bootstrap > 10_000_000 {
        return Err(Error::flag(
            "--bootstrap",
            a.bootstrap,
            "use between 100 and 10000000 replicates",
        ));
    }
    if a.column == 0 {
        return Err(Error::flag("-C/--column", a.column, "columns count from 1"));
    }
    if a.delimiter.is_empty() {
        return Err(Error::flag(
            "-d/--delimiter",
            "''",
            "the delimiter set cannot be empty",
        ));
    }
    Ok(())
}
