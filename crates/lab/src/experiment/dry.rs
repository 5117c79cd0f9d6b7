//! What a plan would do before it runs: its runs, their order and length, the system settings
//! it would change, and whether its runs can estimate the tails it asks for.

use super::plan::{shell_join, shell_quote, Plan};
use latlab_core::error::Result;
use std::path::Path;
use std::time::Duration;

/// Formats a length in nanoseconds for people (`1h 2m 3s`, `250ms`).
fn human(ns: u64) -> String {
    let d = Duration::from_nanos(ns);
    if d < Duration::from_secs(1) {
        return format!("{}ms", d.as_millis());
    }
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// Checks the plan at `path` (with `--set` overrides) exactly as a run would, changing
/// nothing, and lists the level combinations, their command lines (shell-quoted, ready to
/// paste) and the time the plan will take.
pub fn dry_run(path: &Path, sets: &[String]) -> Result<String> {
    let plan = Plan::load_with(path, sets)?;
    let combos = plan.combinations();
    let runs = combos.len() as u64 * u64::from(plan.design.repeats);
    let mut s = format!(
        "{}: valid; {} combination(s) x {} repeat(s) = {runs} run(s), order {:?}\n",
        path.display(),
        combos.len(),
        plan.design.repeats,
        plan.design.order
    );
    for c in &combos {
        let mut words = vec!["latlab".to_string(), plan.measure.command.clone()];
        words.extend(plan.args_for(c));
        s.push_str(&format!("  {}: {}\n", plan.label(c), shell_join(&words)));
        if let Some(b) = plan.boot_for(c) {
            let g = &plan.guest;
            s.push_str(&format!(
                "      in a fresh boot of {}{} for each run ({} vCPUs, {}, accel {}, at most {} s)\n",
                b.kernel,
                if b.cmdline.is_empty() {
                    String::new()
                } else {
                    format!(" booted {}", shell_quote(&b.cmdline))
                },
                g.cpus,
                g.memory,
                g.accel,
                g.timeout
            ));
        }
        if let (Some(k), Some(b)) = (&plan.kexec, plan.level_boot(c)) {
            s.push_str(&format!(
                "      in a fresh kexec boot of {}{} on this machine for each run (back within \
                 {} s, else the repeat fails; the plan's state in {})\n",
                b.kernel,
                if b.cmdline.is_empty() {
                    String::new()
                } else {
                    format!(" booted {}", shell_quote(&b.cmdline))
                },
                k.timeout,
                k.state.display()
            ));
        }
        for (f, &l) in plan.factors.iter().zip(c) {
            let level = &f.levels[l];
            if let Some(cmd) = f.pre.get(level) {
                s.push_str(&format!(
                    "      before each run: sh -c {}\n",
                    shell_quote(cmd)
                ));
            }
            if let Some(cmd) = f.post.get(level) {
                s.push_str(&format!(
                    "      after each run: sh -c {}\n",
                    shell_quote(cmd)
                ));
            }
        }
    }
    for (f, files) in plan.factors.iter().zip(&plan.knob_files) {
        for file in files {
            s.push_str(&format!(
                "  factor {} writes {} (restored at the end)\n",
                f.name,
                file.display()
            ));
        }
        if let Some(n) = &f.note {
            s.push_str(&format!("  note on factor {}: {n}\n", f.name));
        }
    }
    if plan.design.repeats < 2 && combos.len() > 1 {
        s.push_str(&format!(
            "  note: repeats = {}: no level can be compared with the baseline (the run is the \
             unit of replication); a verdict needs repeats = 2 or more, 5 for a useful one\n",
            plan.design.repeats
        ));
    }
    s.push_str(&estimability(&plan));
    let e = plan.estimate;
    s.push_str(&match (e.known_ns, e.unknown_runs) {
        (k, 0) => format!("total time: about {} of measurement\n", human(k)),
        (0, u) => format!(
            "total time: unknown ({u} run(s) last as long as their work: loops or iterations)\n"
        ),
        (k, u) => format!(
            "total time: at least {} of measurement, plus {u} run(s) that last as long as their work\n",
            human(k)
        ),
    });
    Ok(s)
}

/// The per-run figures a plan's comparison uses, with the samples each needs to be estimable
/// (`latlab_analysis::compare::per_run::FIGURES`; max and mean need one).
pub(super) fn needs() -> Vec<(&'static str, u64)> {
    latlab_analysis::compare::per_run::FIGURES
        .iter()
        .map(|&(name, q)| (name, q.map_or(1, latlab_core::stats::dist::min_n_for)))
        .collect()
}

/// Before measuring: the samples each combination's runs will have (rate × duration, less
/// the reserve for overruns) and, per compared figure, whether that is enough, and if not the
/// run length that is (`--set duration=...`). One line per distinct plan of the runs.
pub(crate) fn estimability(plan: &Plan) -> String {
    use latlab_analysis::compare::analysis::thousands;
    use latlab_analysis::compare::decide::{seconds_for, OVERRUN_RESERVE};
    let combos = plan.combinations();
    let mut seen: Vec<(u64, u64)> = Vec::new();
    let mut s = String::new();
    for (c, p) in combos.iter().zip(&plan.planned) {
        let (Some(ns), Some(rate)) = (p.ns, p.rate) else {
            if seen.is_empty() && s.is_empty() {
                s.push_str(
                    "  samples per run: not known before measuring (the measurement does not \
                     plan its rate); the runs' own counts decide which percentiles compare\n",
                );
            }
            continue;
        };
        let key = (ns, rate.to_bits());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let secs = ns as f64 / 1e9;
        let nominal = rate * secs;
        let expected = (nominal * (1.0 - OVERRUN_RESERVE)).floor() as u64;
        let who = if combos.len() > 1 && plan.planned.iter().any(|q| *q != *p) {
            format!(" ({})", plan.label(c))
        } else {
            String::new()
        };
        s.push_str(&format!(
            "  samples per run{who}: {} ({}/s x {} s), about {} after {} % for overruns\n",
            thousands(nominal.round() as u64),
            latlab_core::stats::cfmt::g(rate, 4),
            latlab_core::stats::cfmt::g(secs, 4),
            thousands(expected),
            OVERRUN_RESERVE * 100.0
        ));
        let (ok, short): (Vec<_>, Vec<_>) = needs().into_iter().partition(|(_, n)| expected >= *n);
        let names = |v: &[(&str, u64)]| {
            v.iter()
                .map(|(m, n)| {
                    if *n > 1 {
                        format!("{m} (needs {})", thousands(*n))
                    } else {
                        m.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !ok.is_empty() {
            s.push_str(&format!("  compared, estimable: {}\n", names(&ok)));
        }
        for (m, n) in &short {
            let d = seconds_for(*n, rate);
            s.push_str(&format!(
                "  not estimable at this length: {m} (needs {}): runs of {d} s would give it \
                 (--set duration={d}s)\n",
                thousands(*n)
            ));
        }
    }
    s
}
