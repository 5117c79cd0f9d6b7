//! The monitor's `/metrics` page: per-CPU latency histograms, maxima, counters and an info
//! metric, encoded by `prometheus-client` (OpenMetrics text) from the measuring threads' atomic
//! tallies at scrape time. Nothing here runs on a measuring thread.

use super::tally::{Tally, BOUNDS_NS, BUCKETS};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The content type of the OpenMetrics page (what Prometheus asks for first).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the classic text format (for clients that do not ask for OpenMetrics,
/// such as curl and `promtool check metrics`).
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Everything the endpoint and the snapshot thread share.
#[derive(Debug)]
pub struct Shared {
    /// (CPU label, tally) per measuring thread.
    pub cpus: Vec<(String, Arc<Tally>)>,
    /// Labels of the info metric (kernel, preemption model, ...).
    pub info: Vec<(String, String)>,
    /// Period of the measuring threads (ns).
    pub interval_ns: u64,
    /// Exceedance threshold (ns), if any.
    pub threshold_ns: Option<u64>,
    /// Unix time the monitor started (s).
    pub started_unix_s: f64,
    /// Snapshots stored so far.
    pub snapshots: AtomicU64,
    /// Snapshots that could not be stored.
    pub snapshot_failures: AtomicU64,
    /// `/metrics` scrapes answered.
    pub scrapes: AtomicU64,
    /// The aligned windows (closed by the control thread, read here).
    pub windows: super::window::Windows,
    /// Why the endpoint is exposed, when it is (shown at start and in `/status`).
    pub exposure: Option<String>,
    /// `--trace`: late time by cause and culprit group.
    pub causes: Option<Arc<super::causes::Causes>>,
}

/// Reads one counter of a tally.
type CounterOf = fn(&Tally) -> u64;

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Writes one family per CPU with `f` producing each CPU's value.
fn per_cpu<F>(
    enc: &mut DescriptorEncoder,
    s: &Shared,
    name: &str,
    help: &str,
    ty: MetricType,
    mut f: F,
) -> Result<(), std::fmt::Error>
where
    F: FnMut(&Tally, &mut MetricEncoder) -> Result<(), std::fmt::Error>,
{
    let mut m = enc.encode_descriptor(name, help, None, ty)?;
    for (cpu, t) in &s.cpus {
        let labels = [("cpu", cpu.as_str())];
        let mut fam = m.encode_family(&labels)?;
        f(t, &mut fam)?;
    }
    Ok(())
}

impl Collector for Shared {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let bounds: Vec<f64> = BOUNDS_NS
            .iter()
            .map(|&b| secs(b))
            .chain([f64::INFINITY])
            .collect();
        per_cpu(
            &mut enc,
            self,
            "latlab_latency_seconds",
            "Timer wake-up latency of the measuring thread on this CPU (now - expected).",
            MetricType::Histogram,
            |t, e| {
                let (b, n) = t.read_buckets();
                let pairs: Vec<(f64, u64)> = (0..BUCKETS).map(|i| (bounds[i], b[i])).collect();
                e.encode_histogram::<NoLabelSet>(secs(t.sum_ns.load(Relaxed)), n, &pairs, None)
            },
        )?;
        per_cpu(
            &mut enc,
            self,
            "latlab_latency_max_seconds",
            "Largest latency on this CPU since the monitor started.",
            MetricType::Gauge,
            |t, e| e.encode_gauge(&secs(t.max_ns.load(Relaxed))),
        )?;
        let closed = self.windows.closed();
        let window_gauge = |enc: &mut DescriptorEncoder,
                            name: &str,
                            help: &str,
                            pick: fn((u64, u64)) -> f64|
         -> Result<(), std::fmt::Error> {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (i, (cpu, _)) in self.cpus.iter().enumerate() {
                let v = closed.per_cpu.get(i).copied().unwrap_or((0, 0));
                let labels = [("cpu", cpu.as_str())];
                m.encode_family(&labels)?.encode_gauge(&pick(v))?;
            }
            Ok(())
        };
        window_gauge(
            &mut enc,
            "latlab_latency_window_max_seconds",
            "Largest latency on this CPU in the last closed fixed window (--window, aligned to the wall clock; 0 until the first closes). Every scraper reads the same value for the same window.",
            |(max, _)| secs(max),
        )?;
        window_gauge(
            &mut enc,
            "latlab_window_threshold_exceeded",
            "Wake-ups later than --threshold on this CPU in the last closed fixed window.",
            |(_, n)| n as f64,
        )?;
        gauge(
            &mut enc,
            "latlab_window_end_timestamp_seconds",
            "Unix time the last closed window ended (0 until the first closes): the window the window figures belong to.",
            closed.end_unix_ns as f64 / 1e9,
        )?;
        gauge(
            &mut enc,
            "latlab_window_seconds",
            "Length of the fixed windows (--window).",
            secs(self.windows.len_ns),
        )?;
        let counters: [(&str, &str, CounterOf); 4] = [
            ("latlab_samples", "Wake-ups measured on this CPU.", |t| {
                t.read_buckets().1
            }),
            (
                "latlab_overruns",
                "Missed periods on this CPU: wake-ups so late that whole periods passed.",
                |t| t.overruns.load(Relaxed),
            ),
            (
                "latlab_lost_samples",
                "Samples the snapshot thread could not take (it fell behind); the endpoint still counted them.",
                |t| t.lost.load(Relaxed),
            ),
            (
                "latlab_threshold_exceeded",
                "Wake-ups later than --threshold on this CPU (0 without --threshold).",
                |t| t.exceeded.load(Relaxed),
            ),
        ];
        for (name, help, get) in counters {
            per_cpu(&mut enc, self, name, help, MetricType::Counter, |t, e| {
                e.encode_counter::<NoLabelSet, _, u64>(&get(t), None)
            })?;
        }
        if let Some(c) = &self.causes {
            encode_causes(&mut enc, c)?;
        }
        gauge(
            &mut enc,
            "latlab_interval_seconds",
            "Period of the measuring threads.",
            secs(self.interval_ns),
        )?;
        if let Some(th) = self.threshold_ns {
            gauge(
                &mut enc,
                "latlab_threshold_seconds",
                "The --threshold exceedances are counted against.",
                secs(th),
            )?;
        }
        gauge(
            &mut enc,
            "latlab_start_time_seconds",
            "Unix time the monitor started.",
            self.started_unix_s,
        )?;
        let mut m = enc.encode_descriptor(
            "latlab_snapshots_stored",
            "Snapshots written to the results store.",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<NoLabelSet, _, u64>(&self.snapshots.load(Relaxed), None)?;
        let mut m = enc.encode_descriptor(
            "latlab_snapshot_failures",
            "Snapshots that could not be stored.",
            None,
            MetricType::Counter,
        )?;
        m.encode_counter::<NoLabelSet, _, u64>(&self.snapshot_failures.load(Relaxed), None)?;
        // An info metric as a gauge of 1 (the Prometheus convention), so the classic text
        // parsers (promtool) read it too.
        let mut m = enc.encode_descriptor(
            "latlab_monitor_info",
            "The monitored machine and latlab: kernel, preemption model, clocksource, isolated CPUs, version.",
            None,
            MetricType::Gauge,
        )?;
        m.encode_family(&self.info)?.encode_gauge(&1i64)
    }
}

/// `--trace`'s families: late time and late wake-ups by cause, late time by culprit group
/// (bounded: see `causes`), and the trace's lost events.
fn encode_causes(
    enc: &mut DescriptorEncoder,
    c: &super::causes::Causes,
) -> Result<(), std::fmt::Error> {
    use super::causes::{CAUSES, OTHER};
    let all = c.read();
    let mut m = enc.encode_descriptor(
        "latlab_late_seconds",
        "Lateness of the wake-ups at or above --trace-threshold on this CPU, by the kind of context that held the CPU (irq, softirq, thread; timer: interrupts off or host, the timer IRQ came late; host: host (steal), a late timer IRQ the steal counted around it covers; unattributed: nothing visible to the trace).",
        None,
        MetricType::Counter,
    )?;
    for (cpu, t) in &all {
        let cpu = cpu.to_string();
        for (cause, ns) in CAUSES.iter().zip(t.late_ns) {
            m.encode_family(&[("cpu", cpu.as_str()), ("cause", cause)])?
                .encode_counter::<NoLabelSet, f64, u64>(&secs(ns), None)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "latlab_late_wakeups",
        "Wake-ups at or above --trace-threshold on this CPU, by the kind that held most of their lateness.",
        None,
        MetricType::Counter,
    )?;
    for (cpu, t) in &all {
        let cpu = cpu.to_string();
        for (cause, n) in CAUSES.iter().zip(t.wakeups) {
            m.encode_family(&[("cpu", cpu.as_str()), ("cause", cause)])?
                .encode_counter::<NoLabelSet, u64, u64>(&n, None)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "latlab_culprit_late_seconds",
        "Thread time in late wake-ups on this CPU by culprit group (the command, after exec); groups beyond --trace-culprits per CPU are summed in group=\"other\".",
        None,
        MetricType::Counter,
    )?;
    for (cpu, t) in &all {
        let cpu = cpu.to_string();
        for (g, ns) in t
            .groups
            .iter()
            .map(|(g, ns)| (g.as_str(), *ns))
            .chain([(OTHER, t.other_ns)])
        {
            let labels = [("cpu", cpu.as_str()), ("group", g)];
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, f64, u64>(&secs(ns), None)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "latlab_trace_lost_events",
        "Trace events the kernel lost on this CPU (the reader fell behind): attribution near them may be incomplete.",
        None,
        MetricType::Counter,
    )?;
    for (cpu, t) in &all {
        let cpu = cpu.to_string();
        m.encode_family(&[("cpu", cpu.as_str())])?
            .encode_counter::<NoLabelSet, _, u64>(&t.lost_events, None)?;
    }
    Ok(())
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    v: f64,
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    m.encode_gauge(&v)
}

/// A registry holding the monitor's one collector.
pub fn registry(shared: Arc<Shared>) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(shared));
    r
}

/// The page as text (reading it changes nothing).
pub fn render(r: &Registry) -> String {
    let mut out = String::with_capacity(16 * 1024);
    if prometheus_client::encoding::text::encode(&mut out, r).is_err() {
        out.clear();
        out.push_str("# EOF\n");
    }
    out
}

/// True when an `Accept` header asks for OpenMetrics.
pub fn wants_openmetrics(accept: &str) -> bool {
    accept.contains("application/openmetrics-text")
}

/// The classic text format (0.0.4) of an OpenMetrics page: counter families take their samples'
/// `_total` name in HELP and TYPE, and the `# EOF` and `# UNIT` lines go.
pub fn to_classic(om: &str) -> String {
    let counters: std::collections::HashSet<&str> = om
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(om.len() + 256);
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let rest = line
            .strip_prefix("# HELP ")
            .map(|r| ("# HELP ", r))
            .or_else(|| line.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        match rest {
            Some((kw, r)) => {
                let (name, tail) = r.split_once(' ').unwrap_or((r, ""));
                if counters.contains(name) {
                    out.push_str(&format!("{kw}{name}_total {tail}\n"));
                } else {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_text_names_counters_with_total_and_drops_eof() {
        let om = "# HELP a_s Samples.\n# TYPE a_s counter\na_s_total{cpu=\"0\"} 3\n\
                  # HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        assert_eq!(
            to_classic(om),
            "# HELP a_s_total Samples.\n# TYPE a_s_total counter\na_s_total{cpu=\"0\"} 3\n\
             # HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
        assert!(wants_openmetrics(
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
        ));
        assert!(!wants_openmetrics("*/*"));
    }

    #[test]
    fn culprit_labels_stay_within_the_bound_under_a_thousand_names() {
        use crate::measure::monitor::causes::{Causes, DEFAULT_TOP};
        use crate::result::trace::{Attribution, Component};
        let t = Arc::new(Tally::new(u64::MAX));
        let causes = Arc::new(Causes::new(&[3], DEFAULT_TOP));
        let s = Arc::new(Shared {
            cpus: vec![("3".into(), t.clone())],
            info: vec![],
            interval_ns: 1_000_000,
            threshold_ns: None,
            started_unix_s: 1.0,
            snapshots: AtomicU64::new(0),
            snapshot_failures: AtomicU64::new(0),
            scrapes: AtomicU64::new(0),
            windows: crate::measure::monitor::window::Windows::new(
                10_000_000_000,
                std::slice::from_ref(&t),
                5,
            ),
            exposure: None,
            causes: Some(causes.clone()),
        });
        let r = registry(s);
        let groups_on = |page: &str| -> std::collections::BTreeSet<String> {
            page.lines()
                .filter_map(|l| l.strip_prefix("latlab_culprit_late_seconds_total{"))
                .filter_map(|l| l.split("group=\"").nth(1))
                .filter_map(|l| l.split('"').next())
                .map(String::from)
                .collect()
        };
        let mut seen = std::collections::BTreeSet::new();
        // 1000 distinct commands, one spike each, scraped after every batch of 50.
        for batch in 0..20 {
            let spikes: Vec<_> = (0..50)
                .map(|k| {
                    let name = format!("cmd-{}", batch * 50 + k);
                    crate::result::trace::SpikeRecord {
                        series: "cpu3".into(),
                        cpu: 3,
                        seq: 1,
                        expected_ns: 0,
                        latency_ns: 1_000,
                        why: Attribution {
                            components: vec![Component {
                                kind: "thread".into(),
                                name: format!("{name}:7"),
                                ns: 1_000,
                                share: 1.0,
                                task: None,
                                group: Some(name.into()),
                                chain: Default::default(),
                                folded: 0,
                            }],
                            ..Attribution::default()
                        },
                    }
                })
                .collect();
            causes.add(&spikes);
            let page = render(&r);
            let now = groups_on(&page);
            assert!(now.len() <= DEFAULT_TOP + 1, "{now:?}");
            assert!(now.contains("other"));
            seen.extend(now);
        }
        // Over the whole run, not only at each scrape: the set never grew past the bound.
        assert_eq!(seen.len(), DEFAULT_TOP + 1, "{seen:?}");
        let page = render(&r);
        // All the time is there: 1000 µs of thread time on CPU 3.
        assert!(
            page.contains("latlab_late_seconds_total{cpu=\"3\",cause=\"thread\"} 0.001\n"),
            "{page}"
        );
        assert!(
            page.contains("latlab_culprit_late_seconds_total{cpu=\"3\",group=\"other\"} 0.00099\n"),
            "{page}"
        );
        for cause in crate::measure::monitor::causes::CAUSES {
            assert!(
                page.contains(&format!(
                    "latlab_late_wakeups_total{{cpu=\"3\",cause=\"{cause}\"}}"
                )),
                "{cause}: {page}"
            );
        }
        assert!(
            page.contains("latlab_trace_lost_events_total{cpu=\"3\"} 0\n"),
            "{page}"
        );
    }

    #[test]
    fn page_has_every_family_per_cpu() {
        let t = Arc::new(Tally::new(10_000));
        let s = Arc::new(Shared {
            cpus: vec![("3".into(), t.clone())],
            info: vec![("kernel".into(), "6.1 \"rt\"".into())],
            interval_ns: 1_000_000,
            threshold_ns: Some(10_000),
            started_unix_s: 1.0,
            snapshots: AtomicU64::new(2),
            snapshot_failures: AtomicU64::new(0),
            scrapes: AtomicU64::new(0),
            windows: crate::measure::monitor::window::Windows::new(
                10_000_000_000,
                std::slice::from_ref(&t),
                5,
            ),
            exposure: None,
            causes: None,
        });
        t.observe(7_000);
        t.observe(70_000);
        s.windows.tick(std::slice::from_ref(&t), 10_000_000_001);
        let page = render(&registry(s));
        for want in [
            "latlab_latency_seconds_bucket{le=\"0.00001\",cpu=\"3\"} 1\n",
            "latlab_latency_seconds_bucket{le=\"+Inf\",cpu=\"3\"} 2\n",
            "latlab_latency_seconds_count{cpu=\"3\"} 2\n",
            "latlab_latency_max_seconds{cpu=\"3\"} 0.00007\n",
            "latlab_latency_window_max_seconds{cpu=\"3\"} 0.00007\n",
            "latlab_window_threshold_exceeded{cpu=\"3\"} 1.0\n",
            "latlab_window_end_timestamp_seconds 10.0\n",
            "latlab_window_seconds 10.0\n",
            "latlab_threshold_exceeded_total{cpu=\"3\"} 1\n",
            "latlab_snapshots_stored_total 2\n",
            "latlab_monitor_info{kernel=\"6.1 \\\"rt\\\"\"} 1\n",
            "# EOF\n",
        ] {
            assert!(page.contains(want), "missing {want:?} in\n{page}");
        }
    }
}
