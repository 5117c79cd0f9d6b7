//! Exemplars: on `/metrics`, each CPU's latest wake-up above `--threshold` rides on its latency
//! bucket and its exceedance counter with the snapshot run that stores it, the CPU and the
//! wake-up's number, so a spike on a dashboard leads to `latlab runs show RUN --spike N`.

use super::tally::Tally;
use std::collections::VecDeque;

/// Snapshot runs remembered to name a spike's run: older spikes name none.
const KEPT: usize = 64;

/// The snapshot runs of a monitor, newest last: each with the number of wake-ups each CPU had
/// counted when its interval opened (a wake-up numbered above that, and at most the next
/// interval's, is in it). The open interval's run id is chosen when it opens.
#[derive(Debug, Default)]
pub struct RunLog {
    entries: VecDeque<(String, Vec<u64>)>,
}

impl RunLog {
    /// The interval whose snapshot will be run `id` opened with `counts` wake-ups per CPU.
    pub fn open(&mut self, id: &str, counts: Vec<u64>) {
        if self.entries.len() == KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back((id.to_string(), counts));
    }

    /// The run holding wake-up `seq` of the CPU at index `cpu` (None: older than any kept,
    /// or nothing stored).
    pub(crate) fn run_of(&self, cpu: usize, seq: u64) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(_, c)| c.get(cpu).is_some_and(|&n| n < seq))
            .map(|(id, _)| id.as_str())
    }
}

/// One CPU's exemplar: its latest spike.
#[derive(Debug, Clone, PartialEq)]
pub struct Spike {
    /// The CPU label.
    pub(crate) cpu: String,
    /// The wake-up's number on that CPU (from 1).
    pub(crate) seq: u64,
    /// Its latency (ns).
    pub(crate) ns: u64,
    /// The snapshot run that stores it (None: `--no-store`, or older than the runs kept).
    pub(crate) run: Option<String>,
}

impl Spike {
    /// The exemplar's labels: `run` (when stored), `cpu` and `seq`, within OpenMetrics's
    /// 128 characters.
    pub(crate) fn labels(&self) -> Vec<(String, String)> {
        let mut l = Vec::with_capacity(3);
        if let Some(r) = &self.run {
            l.push(("run".to_string(), r.clone()));
        }
        l.push(("cpu".to_string(), self.cpu.clone()));
        l.push(("seq".to_string(), self.seq.to_string()));
        l
    }

    /// The labels and value as OpenMetrics text writes them after a sample: ` # {..} value`.
    pub(crate) fn openmetrics(&self) -> String {
        let labels: Vec<String> = self
            .labels()
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        format!(" # {{{}}} {}", labels.join(","), self.ns as f64 / 1e9)
    }
}

/// `--trace`: makes the interval's worst explained spike per CPU that CPU's exemplar (named
/// with the interval's run when `stored`).
pub(crate) fn publish(
    explained: &std::sync::Mutex<std::collections::BTreeMap<usize, Spike>>,
    interval: &super::snapshot::Interval,
    stored: bool,
) {
    if interval.worst().is_empty() {
        return;
    }
    let mut e = explained.lock().unwrap_or_else(|p| p.into_inner());
    for (&cpu, &(seq, ns)) in interval.worst() {
        let s = Spike {
            cpu: cpu.to_string(),
            seq,
            ns,
            run: stored.then(|| interval.id().to_string()),
        };
        if e.get(&cpu) != Some(&s) {
            e.insert(cpu, s);
        }
    }
}

/// Each CPU's latest spike, in the order of `cpus` (None: none yet).
pub(crate) fn latest(cpus: &[(String, std::sync::Arc<Tally>)], runs: &RunLog) -> Vec<Option<Spike>> {
    cpus.iter()
        .enumerate()
        .map(|(i, (cpu, t))| {
            t.last_spike().map(|(seq, ns)| Spike {
                cpu: cpu.clone(),
                seq,
                ns,
                run: runs.run_of(i, seq).map(str::to_string),
            })
        })
        .collect()
}

/// Adds the exemplars to an OpenMetrics page: each CPU's spike after its latency bucket (the
/// first whose bound holds it) and after its `latlab_threshold_exceeded_total` sample.
pub(crate) fn into_openmetrics(page: &str, spikes: &[Option<Spike>]) -> String {
    let mut out = String::with_capacity(page.len() + spikes.len() * 160);
    let mut done_bucket = vec![false; spikes.len()];
    let by_cpu: std::collections::HashMap<&str, usize> = spikes
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().map(|s| (s.cpu.as_str(), i)))
        .collect();
    for line in page.lines() {
        out.push_str(line);
        if let Some(rest) = line.strip_prefix("latlab_latency_seconds_bucket{") {
            if let Some((i, s)) = spike_of(rest, spikes, &by_cpu).filter(|(i, _)| !done_bucket[*i]) {
                let le = rest.split_once('}').and_then(|(inside, _)| {
                    inside
                        .split(',')
                        .find_map(|kv| kv.strip_prefix("le=\"")?.strip_suffix('"'))
                });
                let holds = match le {
                    Some("+Inf") => true,
                    Some(le) => le.parse::<f64>().is_ok_and(|b| s.ns as f64 / 1e9 <= b),
                    None => false,
                };
                if holds {
                    done_bucket[i] = true;
                    out.push_str(&s.openmetrics());
                }
            }
        } else if let Some(rest) = line.strip_prefix("latlab_threshold_exceeded_total{") {
            if let Some((_, s)) = spike_of(rest, spikes, &by_cpu) {
                out.push_str(&s.openmetrics());
            }
        }
        out.push('\n');
    }
    out
}

/// The spike of the CPU a sample's labels (after the `{`) name (`by_cpu`: index of each
/// CPU's spike in `spikes`).
fn spike_of<'a>(
    labels: &str,
    spikes: &'a [Option<Spike>],
    by_cpu: &std::collections::HashMap<&str, usize>,
) -> Option<(usize, &'a Spike)> {
    let (inside, _) = labels.split_once('}')?;
    let cpu = inside
        .split(',')
        .find_map(|kv| kv.strip_prefix("cpu=\""))?
        .strip_suffix('"')?;
    let &i = by_cpu.get(cpu)?;
    Some((i, spikes[i].as_ref()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_names_the_interval_it_fell_in() {
        let mut log = RunLog::default();
        log.open("a", vec![0, 0]);
        log.open("b", vec![100, 40]);
        assert_eq!(log.run_of(0, 1), Some("a"));
        assert_eq!(log.run_of(0, 100), Some("a"));
        assert_eq!(log.run_of(0, 101), Some("b"));
        assert_eq!(log.run_of(1, 41), Some("b"));
        assert_eq!(log.run_of(2, 41), None);
        for i in 0..KEPT as u64 {
            log.open(&format!("r{i}"), vec![1000 + i, 1000 + i]);
        }
        assert_eq!(log.run_of(0, 5), None, "older than every kept run");
        assert_eq!(log.run_of(0, 2000), Some("r63"));
    }

    #[test]
    fn openmetrics_exemplars_go_on_the_bucket_that_holds_the_spike_and_the_counter() {
        let page = "latlab_latency_seconds_bucket{le=\"0.00001\",cpu=\"3\"} 1\n\
                    latlab_latency_seconds_bucket{le=\"0.0001\",cpu=\"3\"} 2\n\
                    latlab_latency_seconds_bucket{le=\"+Inf\",cpu=\"3\"} 2\n\
                    latlab_latency_seconds_bucket{le=\"+Inf\",cpu=\"4\"} 0\n\
                    latlab_threshold_exceeded_total{cpu=\"3\"} 1\n\
                    latlab_threshold_exceeded_total{cpu=\"4\"} 0\n\
                    # EOF\n";
        let s = Spike {
            cpu: "3".into(),
            seq: 17,
            ns: 70_000,
            run: Some("20261202T170214Z-5ef9cb57".into()),
        };
        let out = into_openmetrics(page, &[Some(s), None]);
        let ex = " # {run=\"20261202T170214Z-5ef9cb57\",cpu=\"3\",seq=\"17\"} 0.00007";
        let lines: Vec<&str> = out.lines().collect();
        assert!(!lines[0].contains(" # {"), "{out}");
        assert!(lines[1].ends_with(ex), "{out}");
        assert!(!lines[2].contains(" # {"), "one exemplar per series: {out}");
        assert!(!lines[3].contains(" # {"), "{out}");
        assert!(lines[4].ends_with(ex), "{out}");
        assert_eq!(lines[6], "# EOF");
    }

    #[test]
    fn a_spike_is_read_whole() {
        let t = Tally::new(50_000);
        assert_eq!(t.last_spike(), None);
        t.observe(60_000, 7);
        t.observe(1_000, 8);
        assert_eq!(t.last_spike(), Some((7, 60_000)));
        t.observe(90_000, 9);
        assert_eq!(t.last_spike(), Some((9, 90_000)));
    }
}
