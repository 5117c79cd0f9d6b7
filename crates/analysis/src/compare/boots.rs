//! Boots as the unit of replication when levels ran different kernels: runs of one boot share
//! its memory layout, IRQ placement and timer assignment, so they are pooled into one replicate
//! before levels are compared, and the boot-to-boot spread is said beside the run-to-run one.

use super::inputs::{RunInfo, Source};
use latlab_core::result::Run;
use latlab_core::stats::dist::Dist;

/// Words every run's kernel command line has (a boot loader's or the guest engine's console
/// settings): left out when kernels are told apart by what they were booted with.
fn common_words<'r>(runs: impl Iterator<Item = &'r Run> + Clone) -> Vec<&'r str> {
    let mut all = runs.clone();
    let Some(first) = all.next() else {
        return Vec::new();
    };
    first
        .environment
        .kernel_cmdline
        .split_whitespace()
        .filter(|w| {
            runs.clone()
                .all(|r| r.environment.kernel_cmdline.split_whitespace().any(|x| x == *w))
        })
        .collect()
}

/// What a run's kernel was booted with besides what every run has (`preempt=full`).
pub(crate) fn own_cmdline(run: &Run, common: &[&str]) -> String {
    run.environment
        .kernel_cmdline
        .split_whitespace()
        .filter(|w| !common.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The kernel a run ran: release, configuration and own command line.
fn kernel_of(run: &Run, common: &[&str]) -> (String, String, String) {
    let e = &run.environment;
    (
        e.kernel_release.clone(),
        e.kernel_config.clone(),
        own_cmdline(run, common),
    )
}

/// True when the levels ran different kernels (release, configuration or command line): then
/// a level's runs are nested in its boots, and the boot is what is replicated.
pub(crate) fn kernels_differ(levels: &[Vec<&Run>]) -> bool {
    let common = common_words(levels.iter().flatten().copied());
    let mut kernels: Vec<(String, String, String)> = levels
        .iter()
        .flatten()
        .map(|r| kernel_of(r, &common))
        .collect();
    kernels.sort();
    kernels.dedup();
    kernels.len() > 1
}

/// The words of `levels`' command lines that every run has, for [`own_cmdline`].
pub(crate) fn shared_cmdline<'r>(levels: &[Vec<&'r Run>]) -> Vec<&'r str> {
    common_words(levels.iter().flatten().copied())
}

/// The set with the runs of each boot pooled into one replicate (a run whose boot is unknown
/// is a boot of its own), and how many runs each boot held.
pub(crate) fn by_boot(s: Source) -> (Source, Vec<usize>) {
    if s.runs.is_empty() || s.runs.len() != s.info.len() {
        return (s, Vec::new());
    }
    let mut keys: Vec<String> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, r) in s.info.iter().enumerate() {
        let key = if r.boot.is_empty() {
            format!("#{i}")
        } else {
            r.boot.clone()
        };
        match keys.iter().position(|k| *k == key) {
            Some(g) => groups[g].push(i),
            None => {
                keys.push(key);
                groups.push(vec![i]);
            }
        }
    }
    let sizes: Vec<usize> = groups.iter().map(Vec::len).collect();
    if groups.len() == s.runs.len() {
        return (s, sizes);
    }
    let mut runs = Vec::with_capacity(groups.len());
    let mut info = Vec::with_capacity(groups.len());
    for g in &groups {
        let parts: Vec<Dist> = g.iter().map(|&i| s.runs[i].clone()).collect();
        let n: Vec<f64> = parts.iter().map(|d| d.n() as f64).collect();
        let total: f64 = n.iter().sum();
        let first = &s.info[g[0]];
        let mean = g
            .iter()
            .zip(&n)
            .map(|(&i, w)| s.info[i].mean * w)
            .sum::<f64>()
            / total.max(1.0);
        info.push(RunInfo {
            name: if g.len() == 1 {
                first.name.clone()
            } else {
                format!(
                    "boot {} ({} runs)",
                    first.boot.get(..8).unwrap_or(&first.boot),
                    g.len()
                )
            },
            id: first.id.clone(),
            kind: first.kind.clone(),
            secs: g.iter().map(|&i| s.info[i].secs).sum(),
            mean,
            boot: first.boot.clone(),
        });
        runs.push(Dist::merge(&parts));
    }
    (Source { runs, info, ..s }, sizes)
}

/// The coefficient of variation of `v` in percent, None below 2 values.
fn cv(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let d = Dist::from_values(v.to_vec());
    (d.mean() > 0.0).then(|| d.stddev() / d.mean() * 100.0)
}

/// Boot-to-boot and run-to-run (within a boot) spread of the per-run mean, per level: what a
/// kernel comparison's reader weighs the difference against.
pub(crate) fn spread(before: &[Source], sizes: &[Vec<usize>]) -> String {
    let mut out = Vec::new();
    for (s, sz) in before.iter().zip(sizes) {
        // Per boot: its runs' means, in the order `by_boot` grouped them.
        let mut boots: Vec<(String, Vec<f64>)> = Vec::new();
        for (i, r) in s.info.iter().enumerate() {
            let key = if r.boot.is_empty() {
                format!("#{i}")
            } else {
                r.boot.clone()
            };
            match boots.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(r.mean),
                None => boots.push((key, vec![r.mean])),
            }
        }
        let per_boot: Vec<f64> = boots
            .iter()
            .map(|(_, v)| v.iter().sum::<f64>() / v.len() as f64)
            .collect();
        let within: Vec<f64> = boots.iter().filter_map(|(_, v)| cv(v)).collect();
        let b2b = cv(&per_boot).map_or("unknown (one boot)".into(), |c| format!("{c:.1} %"));
        let r2r = if within.is_empty() {
            "unknown (one run per boot)".to_string()
        } else {
            format!(
                "{:.1} %",
                within.iter().sum::<f64>() / within.len() as f64
            )
        };
        out.push(format!(
            "{}: {} boot(s) of {} run(s), spread of the mean boot to boot {b2b}, run to run \
             within a boot {r2r}",
            s.label,
            sz.len(),
            sz.iter().sum::<usize>()
        ));
    }
    out.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(boots: &[&str]) -> Source {
        let runs: Vec<Dist> = boots
            .iter()
            .enumerate()
            .map(|(i, _)| Dist::from_values(vec![10.0 + i as f64; 100]))
            .collect();
        let info = boots
            .iter()
            .enumerate()
            .map(|(i, b)| RunInfo {
                name: format!("run:{i}"),
                id: i.to_string(),
                kind: "cyclic".into(),
                secs: 1.0,
                mean: 10.0 + i as f64,
                boot: b.to_string(),
            })
            .collect();
        Source {
            label: "kernel=rt".into(),
            dist: Dist::from_values(vec![1.0; 3]),
            from_json: true,
            runs,
            info,
        }
    }

    #[test]
    fn runs_of_one_boot_are_one_replicate() {
        let (s, sizes) = by_boot(source(&["aaaaaaaa1", "bbbbbbbb2", "aaaaaaaa1", ""]));
        assert_eq!(sizes, [2, 1, 1]);
        assert_eq!(s.runs.len(), 3);
        assert_eq!(s.info[0].name, "boot aaaaaaaa (2 runs)");
        // The pooled boot's mean is its runs' (10 and 12, as many samples each).
        assert_eq!(s.info[0].mean, 11.0);
        assert_eq!(s.runs[0].n(), 200);
        // Each run in a boot of its own: nothing changes.
        let (s, sizes) = by_boot(source(&["a", "b", "c"]));
        assert_eq!((s.runs.len(), sizes), (3, vec![1, 1, 1]));
        let line = spread(&[source(&["a", "a", "b"])], &[vec![2, 1]]);
        assert!(line.contains("2 boot(s) of 3 run(s)"), "{line}");
        assert!(!line.contains("one run per boot"), "{line}");
    }

    #[test]
    fn kernels_differ_by_release_config_or_own_cmdline_only() {
        let run = |rel: &str, cmd: &str| {
            let mut r = Run::new(
                "cyclic",
                std::time::SystemTime::now(),
                vec![],
                serde_json::json!({}),
                latlab_core::result::Environment::unknown(),
            );
            r.environment.kernel_release = rel.into();
            r.environment.kernel_cmdline = cmd.into();
            r
        };
        let (a, b) = (run("6.1", "console=ttyS0 quiet"), run("6.1", "console=ttyS0 quiet"));
        assert!(!kernels_differ(&[vec![&a], vec![&b]]));
        let c = run("6.1", "console=ttyS0 quiet preempt=full");
        assert!(kernels_differ(&[vec![&a], vec![&c]]));
        assert_eq!(own_cmdline(&c, &shared_cmdline(&[vec![&a], vec![&c]])), "preempt=full");
        let d = run("6.1-rt", "console=ttyS0 quiet");
        assert!(kernels_differ(&[vec![&a], vec![&d]]));
    }
}
