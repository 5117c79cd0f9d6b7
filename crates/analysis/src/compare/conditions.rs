//! The conditions a comparison's runs were measured under, said first in its verdict sentence
//! as a maintainer would write them: the measurement and its key settings, runs × duration,
//! the load and the kernel (`cyclic -t 1 -a 1 -i 1ms, 5 × 3 s runs per level, no load, kernel
//! 6.18.44 (preemption dynamic)`). What differs between levels is shown as `A vs B`.

use latlab_core::result::Run;

/// Options that say how a run was kept, not what was measured, or that are said apart
/// (duration, load): left out of the key settings. The bool: the option takes a value.
const NOT_SETTINGS: &[(&str, bool)] = &[
    ("--json", true),
    ("--json-format", true),
    ("--tag", true),
    ("--store", true),
    ("--no-store", false),
    ("--samples", true),
    ("-q", false),
    ("--quiet", false),
    ("-D", true),
    ("--duration", true),
    ("--load", true),
    ("--unit", true),
];

/// A run's measurement and its key settings from its command line (`cyclic -t 1 -a 1 -i 1ms`).
pub(crate) fn settings(run: &Run) -> String {
    let words = run.command_line.iter().skip(1);
    let mut out: Vec<&str> = Vec::new();
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
            continue;
        }
        let name = w.split_once('=').map_or(w.as_str(), |(n, _)| n);
        match NOT_SETTINGS.iter().find(|(n, _)| *n == name) {
            Some((_, takes)) => skip = *takes && !w.contains('='),
            None => out.push(w),
        }
    }
    if out.is_empty() {
        run.kind.clone()
    } else {
        out.join(" ")
    }
}

/// The loads of a run, as given (`hackbench:groups=4`), or `no load`.
fn load(run: &Run) -> String {
    if run.loads.is_empty() {
        "no load".into()
    } else {
        let specs: Vec<&str> = run.loads.iter().map(|l| l.spec.as_str()).collect();
        format!("load {}", specs.join(" + "))
    }
}

/// The kernel of a run, with what it was booted with beyond the words `common` to every run.
fn kernel(run: &Run, common: &[&str]) -> String {
    let e = &run.environment;
    let mut k = if e.preemption.is_empty() {
        format!("kernel {}", e.kernel_release)
    } else {
        format!("kernel {} (preemption {})", e.kernel_release, e.preemption)
    };
    let own = super::boots::own_cmdline(run, common);
    if !own.is_empty() {
        k.push_str(&format!(" booted '{own}'"));
    }
    k
}

/// How many boots a level's runs came from (a run whose boot is unknown is one of its own).
fn boots(runs: &[&Run]) -> usize {
    let mut ids: Vec<&str> = runs
        .iter()
        .map(|r| r.environment.boot_id.as_str())
        .filter(|b| !b.is_empty())
        .collect();
    let unknown = runs.len() - ids.len();
    ids.sort_unstable();
    ids.dedup();
    ids.len() + unknown
}

/// One fact per level: the same for all (said once), or `baseline's vs other's` values.
fn per_level(levels: &[(String, Vec<&Run>)], f: impl Fn(&Run) -> String) -> Option<String> {
    let mut vals: Vec<String> = Vec::new();
    for (_, runs) in levels {
        let mut v: Vec<String> = runs.iter().map(|r| f(r)).collect();
        v.sort();
        v.dedup();
        vals.push(v.join(" or "));
    }
    let first = vals.first()?.clone();
    if vals.iter().all(|v| *v == first) {
        Some(first)
    } else {
        Some(vals.join(" vs "))
    }
}

/// The conditions of levels of runs (label, runs), the baseline first: None without runs.
pub(crate) fn conditions(levels: &[(String, Vec<&Run>)]) -> Option<String> {
    if levels.iter().all(|(_, r)| r.is_empty()) {
        return None;
    }
    let mut parts = vec![per_level(levels, settings)?];
    let counts: Vec<usize> = levels.iter().map(|(_, r)| r.len()).collect();
    let mut secs: Vec<f64> = levels
        .iter()
        .flat_map(|(_, r)| r.iter().map(|x| x.duration_s))
        .filter(|s| *s > 0.0 && s.is_finite())
        .collect();
    secs.sort_by(f64::total_cmp);
    let len = secs
        .get(secs.len() / 2)
        .map(|s| format!("{} s", latlab_core::stats::cfmt::g(*s, 2)));
    let c: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
    parts.push(match (counts.iter().all(|c| *c == counts[0]), len) {
        (true, Some(l)) => format!("{} × {l} runs per level", counts[0]),
        (true, None) => format!("{} runs per level", counts[0]),
        (false, Some(l)) => format!("{} runs of {l}", c.join(" vs ")),
        (false, None) => format!("{} runs", c.join(" vs ")),
    });
    parts.push(per_level(levels, load)?);
    let all: Vec<Vec<&Run>> = levels.iter().map(|(_, r)| r.clone()).collect();
    let common = super::boots::shared_cmdline(&all);
    parts.push(per_level(levels, |r| kernel(r, &common))?);
    if super::boots::kernels_differ(&all) {
        let b: Vec<usize> = all.iter().map(|r| boots(r)).collect();
        parts.push(if b.iter().all(|x| *x == b[0]) {
            format!("{} boots per level", b[0])
        } else {
            let b: Vec<String> = b.iter().map(usize::to_string).collect();
            format!("{} boots", b.join(" vs "))
        });
    }
    Some(parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str, secs: f64) -> Run {
        let mut r = Run::new(
            "cyclic",
            std::time::SystemTime::now(),
            cmd.split(' ').map(String::from).collect(),
            serde_json::json!({}),
            latlab_core::result::Environment::capture(),
        );
        r.duration_s = secs;
        r.environment.kernel_release = "6.18.44".into();
        r.environment.preemption = "dynamic".into();
        r
    }

    #[test]
    fn settings_first_then_runs_load_and_kernel() {
        let a = run(
            "latlab cyclic -t 1 -a 1 -i 1ms -D 3s -q --json - --tag experiment=e --tag repeat=1",
            3.0,
        );
        assert_eq!(settings(&a), "cyclic -t 1 -a 1 -i 1ms");
        let b = a.clone();
        let mut c = a.clone();
        c.loads.push(latlab_core::result::LoadReport {
            spec: "hackbench:groups=4".into(),
            kind: "hackbench".into(),
            count: 1,
            unit: "messages".into(),
            seconds: 3.0,
            rate_per_s: 1.0,
            note: None,
            cpus: None,
            stopped_s: None,
        });
        let l = vec![
            ("a".to_string(), vec![&a, &b]),
            ("b".to_string(), vec![&c, &c]),
        ];
        assert_eq!(
            conditions(&l).unwrap(),
            "cyclic -t 1 -a 1 -i 1ms, 2 × 3 s runs per level, no load vs load \
             hackbench:groups=4, kernel 6.18.44 (preemption dynamic)"
        );
        let l = vec![("a".to_string(), vec![&a]), ("b".to_string(), vec![&b, &b])];
        assert!(conditions(&l).unwrap().contains(", 1 vs 2 runs of 3 s, "));
    }
}
