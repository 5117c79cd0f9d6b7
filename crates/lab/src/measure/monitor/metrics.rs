//! The monitor's `/metrics` page: per-CPU latency histograms (fixed buckets and a native
//! histogram), maxima, counters and an info metric, encoded by `prometheus-client` (OpenMetrics
//! text, or the protobuf exposition a scraper asks for) from the measuring threads' atomic
//! tallies at scrape time, with each CPU's latest spike as an exemplar. Nothing here runs on a
//! measuring thread.

use super::exemplar::{self, RunLog, Spike};
use super::tally::{
    Tally, BOUNDS_NS, BUCKETS, NATIVE_BUCKETS, NATIVE_FIRST, NATIVE_SCHEMA, NATIVE_ZERO_THRESHOLD,
};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::prometheus_protobuf::{self, prometheus_data_model as pb};
use prometheus_client::encoding::{
    DescriptorEncoder, MetricEncoder, NativeHistogram, NativeHistogramBuckets, NoLabelSet,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The content type of the OpenMetrics page (what Prometheus asks for first).
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of the classic text format (for clients that do not ask for OpenMetrics,
/// such as curl and `promtool check metrics`).
pub(crate) const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The content type of the protobuf exposition (length-delimited `io.prometheus.client`
/// `MetricFamily` messages): the one format that carries native histograms to Prometheus 2.x.
pub(crate) const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

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
    /// The snapshot runs so far, to name the run of a spike's exemplar (empty: `--no-store`).
    pub runs: std::sync::Mutex<RunLog>,
    /// `--trace`: the exemplar of each CPU (by number) is its worst explained spike of the
    /// latest interval that had one, which its snapshot stores.
    pub explained: std::sync::Mutex<std::collections::BTreeMap<usize, Spike>>,
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
        self.encode_latency(&mut enc)?;
        self.encode_windows(&mut enc)?;
        self.encode_counters(&mut enc)?;
        if let Some(c) = &self.causes {
            encode_causes(&mut enc, c)?;
        }
        self.encode_settings(&mut enc)?;
        self.encode_snapshots(&mut enc)?;
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

impl Shared {
    /// Each CPU's latency histogram (fixed buckets and the native one) and maximum.
    fn encode_latency(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let bounds: Vec<f64> = BOUNDS_NS
            .iter()
            .map(|&b| secs(b))
            .chain([f64::INFINITY])
            .collect();
        per_cpu(
            enc,
            self,
            "latlab_latency_seconds",
            "Timer wake-up latency of the measuring thread on this CPU (now - expected).",
            MetricType::Histogram,
            |t, e| self.encode_histogram(t, &bounds, e),
        )?;
        per_cpu(
            enc,
            self,
            "latlab_latency_max_seconds",
            "Largest latency on this CPU since the monitor started.",
            MetricType::Gauge,
            |t, e| e.encode_gauge(&secs(t.max_ns.load(Relaxed))),
        )
    }

    /// One CPU's histogram, `bounds` the upper bounds of its fixed buckets (s).
    fn encode_histogram(
        &self,
        t: &Tally,
        bounds: &[f64],
        e: &mut MetricEncoder,
    ) -> Result<(), std::fmt::Error> {
        // The native buckets first: the count read after them is at least their sum.
        let (zero, native) = t.read_native();
        let (spans, deltas) = native_spans(&native);
        let (b, n) = t.read_buckets();
        let pairs: Vec<(f64, u64)> = (0..BUCKETS).map(|i| (bounds[i], b[i])).collect();
        let native = NativeHistogram {
            schema: NATIVE_SCHEMA,
            zero_threshold: NATIVE_ZERO_THRESHOLD,
            zero_count: zero,
            negative: NativeHistogramBuckets {
                spans: &[],
                deltas: &[],
            },
            positive: NativeHistogramBuckets {
                spans: &spans,
                deltas: &deltas,
            },
            created: Some(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_secs_f64(self.started_unix_s.max(0.0)),
            ),
        };
        e.encode_histogram_with_native::<NoLabelSet>(
            secs(t.sum_ns.load(Relaxed)),
            n,
            &pairs,
            None,
            native,
        )
    }

    /// The last closed aligned window's figures per CPU, when it ended and how long windows
    /// are: every scraper reads the same values for the same window.
    fn encode_windows(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
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
            enc,
            "latlab_latency_window_max_seconds",
            "Largest latency on this CPU in the last closed fixed window (--window, aligned to the wall clock; 0 until the first closes). Every scraper reads the same value for the same window.",
            |(max, _)| secs(max),
        )?;
        window_gauge(
            enc,
            "latlab_window_threshold_exceeded",
            "Wake-ups later than --threshold on this CPU in the last closed fixed window.",
            |(_, n)| n as f64,
        )?;
        gauge(
            enc,
            "latlab_window_end_timestamp_seconds",
            "Unix time the last closed window ended (0 until the first closes): the window the window figures belong to.",
            closed.end_unix_ns as f64 / 1e9,
        )?;
        gauge(
            enc,
            "latlab_window_seconds",
            "Length of the fixed windows (--window).",
            secs(self.windows.len_ns),
        )
    }

    /// Each CPU's counters: wake-ups, overruns, samples lost, exceedances.
    fn encode_counters(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
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
            per_cpu(enc, self, name, help, MetricType::Counter, |t, e| {
                e.encode_counter::<NoLabelSet, _, u64>(&get(t), None)
            })?;
        }
        Ok(())
    }

    /// What the monitor was started with: the period, the threshold, the start time.
    fn encode_settings(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        gauge(
            enc,
            "latlab_interval_seconds",
            "Period of the measuring threads.",
            secs(self.interval_ns),
        )?;
        if let Some(th) = self.threshold_ns {
            gauge(
                enc,
                "latlab_threshold_seconds",
                "The --threshold exceedances are counted against.",
                secs(th),
            )?;
        }
        gauge(
            enc,
            "latlab_start_time_seconds",
            "Unix time the monitor started.",
            self.started_unix_s,
        )
    }

    /// The snapshots stored and those that could not be.
    fn encode_snapshots(&self, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
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
        m.encode_counter::<NoLabelSet, _, u64>(&self.snapshot_failures.load(Relaxed), None)
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
pub(crate) fn render(r: &Registry) -> String {
    let mut out = String::with_capacity(16 * 1024);
    if prometheus_client::encoding::text::encode(&mut out, r).is_err() {
        out.clear();
        out.push_str("# EOF\n");
    }
    out
}

/// The exposition formats `/metrics` answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Length-delimited protobuf (native histograms).
    Protobuf,
    /// OpenMetrics text (exemplars).
    OpenMetrics,
    /// The classic text format 0.0.4 (curl, promtool).
    Classic,
}

/// The format an `Accept` header prefers among those offered: the highest `q` (1 unless
/// given), the first listed on a tie; the protobuf one only as `io.prometheus.client` delimited
/// messages. Nothing acceptable (or no header): the classic text.
pub(crate) fn negotiate(accept: &str) -> Format {
    let mut best: Option<(f64, Format)> = None;
    for part in accept.split(',') {
        let mut fields = part.split(';').map(str::trim);
        let media = fields.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let (mut proto, mut delimited) = (false, false);
        for f in fields {
            let Some((k, v)) = f.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                // A weight is 0 to 1 (RFC 9110): a larger one counts as 1, a bad one as 0.
                "q" => {
                    q = v
                        .parse::<f64>()
                        .ok()
                        .filter(|q| q.is_finite())
                        .map_or(0.0, |q| q.min(1.0))
                }
                "proto" => proto = v == "io.prometheus.client.MetricFamily",
                "encoding" => delimited = v == "delimited",
                _ => {}
            }
        }
        let format = match media.as_str() {
            "application/vnd.google.protobuf" if proto && delimited => Format::Protobuf,
            "application/openmetrics-text" => Format::OpenMetrics,
            "text/plain" | "text/*" | "*/*" => Format::Classic,
            _ => continue,
        };
        if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
            best = Some((q, format));
        }
    }
    best.map_or(Format::Classic, |(_, f)| f)
}

/// The page in `format`, with its content type: each CPU's latest spike as an exemplar on its
/// latency bucket and exceedance counter (not in the classic text, which has none).
pub fn page(r: &Registry, s: &Shared, format: Format) -> (&'static str, Vec<u8>) {
    let spikes = if s.causes.is_some() {
        let e = s.explained.lock().unwrap_or_else(|p| p.into_inner());
        s.cpus
            .iter()
            .map(|(cpu, _)| cpu.parse().ok().and_then(|c: usize| e.get(&c).cloned()))
            .collect()
    } else {
        let runs = s.runs.lock().unwrap_or_else(|p| p.into_inner());
        exemplar::latest(&s.cpus, &runs)
    };
    match format {
        Format::Classic => (CLASSIC_CONTENT_TYPE, to_classic(&render(r)).into_bytes()),
        Format::OpenMetrics => (
            CONTENT_TYPE,
            exemplar::into_openmetrics(&render(r), &spikes).into_bytes(),
        ),
        Format::Protobuf => match protobuf(r, &spikes) {
            Some(b) => (PROTOBUF_CONTENT_TYPE, b),
            // Never seen; the text page says the same.
            None => (CONTENT_TYPE, render(r).into_bytes()),
        },
    }
}

/// The protobuf exposition, exemplars added to the encoded families.
fn protobuf(r: &Registry, spikes: &[Option<Spike>]) -> Option<Vec<u8>> {
    use prost::Message;
    let mut families = prometheus_protobuf::encode(r).ok()?;
    for f in &mut families {
        for m in &mut f.metric {
            let Some(s) = cpu_of(m).and_then(|c| spikes.iter().flatten().find(|s| s.cpu == c))
            else {
                continue;
            };
            let ex = || pb::Exemplar {
                label: s
                    .labels()
                    .into_iter()
                    .map(|(name, value)| pb::LabelPair { name, value })
                    .collect(),
                value: s.ns as f64 / 1e9,
                timestamp: None,
            };
            match (f.name.as_str(), m.histogram.as_mut(), m.counter.as_mut()) {
                ("latlab_latency_seconds", Some(h), _) => {
                    let v = s.ns as f64 / 1e9;
                    if let Some(b) = h.bucket.iter_mut().find(|b| v <= b.upper_bound) {
                        b.exemplar = Some(ex());
                    }
                }
                ("latlab_threshold_exceeded_total", _, Some(c)) => c.exemplar = Some(ex()),
                _ => {}
            }
        }
    }
    let mut out = Vec::with_capacity(families.iter().map(|f| f.encoded_len() + 8).sum());
    for f in &families {
        f.encode_length_delimited(&mut out).ok()?;
    }
    Some(out)
}

/// The `cpu` label of a metric.
fn cpu_of(m: &pb::Metric) -> Option<&str> {
    m.label
        .iter()
        .find(|l| l.name == "cpu")
        .map(|l| l.value.as_str())
}

/// A native histogram's positive spans and deltas (the first count absolute, each next one
/// the change from the one before) from its bucket counts ([`NATIVE_FIRST`] first): runs of
/// non-empty buckets, a gap of up to two empty ones kept inside a span (cheaper than a new
/// span), as client_golang does.
pub(crate) fn native_spans(counts: &[u64; NATIVE_BUCKETS]) -> (Vec<(i32, u32)>, Vec<i64>) {
    let mut spans: Vec<(i32, u32)> = Vec::new();
    let mut deltas = Vec::new();
    let mut prev_count = 0i64;
    // Index just past the last bucket written.
    let mut next: Option<i32> = None;
    for (k, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let idx = NATIVE_FIRST + k as i32;
        match next {
            Some(n) if idx - n <= 2 => {
                for _ in n..idx {
                    deltas.push(-prev_count);
                    prev_count = 0;
                }
                if let Some(last) = spans.last_mut() {
                    last.1 += (idx - n) as u32 + 1;
                }
            }
            Some(n) => spans.push((idx - n, 1)),
            None => spans.push((idx, 1)),
        }
        deltas.push(c as i64 - prev_count);
        prev_count = c as i64;
        next = Some(idx + 1);
    }
    (spans, deltas)
}

/// The classic text format (0.0.4) of an OpenMetrics page: counter families take their samples'
/// `_total` name in HELP and TYPE, and the `# EOF` and `# UNIT` lines go.
pub(crate) fn to_classic(om: &str) -> String {
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
        assert_eq!(
            negotiate("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            Format::OpenMetrics
        );
        assert_eq!(negotiate("*/*"), Format::Classic);
    }

    #[test]
    fn culprit_labels_stay_within_the_bound_under_a_thousand_names() {
        use crate::measure::monitor::causes::{Causes, DEFAULT_TOP};
        use latlab_core::result::trace::{Attribution, Component};
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
            runs: Default::default(),
            explained: Default::default(),
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
                    latlab_core::result::trace::SpikeRecord {
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
        let s = one_cpu(&t, "6.1 \"rt\"", 10_000);
        s.snapshots.store(2, Relaxed);
        t.observe(7_000, 1);
        t.observe(70_000, 1);
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

    /// A one-CPU monitor page source with `t` as CPU 3, its kernel and threshold.
    fn one_cpu(t: &Arc<Tally>, kernel: &str, threshold_ns: u64) -> Arc<Shared> {
        Arc::new(Shared {
            cpus: vec![("3".into(), t.clone())],
            info: vec![("kernel".into(), kernel.into())],
            interval_ns: 1_000_000,
            threshold_ns: Some(threshold_ns),
            started_unix_s: 1.0,
            snapshots: AtomicU64::new(0),
            snapshot_failures: AtomicU64::new(0),
            scrapes: AtomicU64::new(0),
            windows: crate::measure::monitor::window::Windows::new(
                10_000_000_000,
                std::slice::from_ref(t),
                5,
            ),
            exposure: None,
            runs: Default::default(),
            explained: Default::default(),
            causes: None,
        })
    }

    #[test]
    fn the_format_is_the_one_the_scraper_prefers() {
        // Prometheus 2.42 with --enable-feature=native-histograms, then without it.
        let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.2";
        let plain = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(native), Format::Protobuf);
        assert_eq!(negotiate(plain), Format::OpenMetrics);
        assert_eq!(negotiate(""), Format::Classic);
        assert_eq!(negotiate("*/*"), Format::Classic);
        assert_eq!(negotiate("text/html"), Format::Classic);
        // Protobuf of another message, or not delimited, is not ours to send.
        assert_eq!(
            negotiate("application/vnd.google.protobuf;proto=other.Message;encoding=delimited"),
            Format::Classic
        );
        assert_eq!(
            negotiate("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text,text/plain;q=0.1"),
            Format::Classic
        );
        assert_eq!(
            negotiate("application/openmetrics-text;q=0, text/plain"),
            Format::Classic
        );
        assert_eq!(negotiate("application/openmetrics-text;q=abc"), Format::Classic);
        // A weight above 1 is 1: the first listed wins the tie.
        assert_eq!(
            negotiate("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited, application/openmetrics-text;q=1.5"),
            Format::Protobuf
        );
    }

    #[test]
    fn native_spans_and_deltas_follow_the_prometheus_encoding() {
        let mut c = [0u64; NATIVE_BUCKETS];
        c[10] = 3;
        c[11] = 5;
        c[13] = 1; // one empty bucket between: same span
        c[20] = 2; // six empty: a new span
        let (spans, deltas) = native_spans(&c);
        assert_eq!(spans, vec![(NATIVE_FIRST + 10, 4), (6, 1)]);
        assert_eq!(deltas, vec![3, 2, -5, 1, 1]);
        let (spans, deltas) = native_spans(&[0u64; NATIVE_BUCKETS]);
        assert!(spans.is_empty() && deltas.is_empty());
    }

    #[test]
    fn native_buckets_hold_each_latency_between_their_bounds() {
        for ns in [60u64, 61, 1_000, 1_090, 20_000, 1_000_000, 99_999_999, 127_000_000_000] {
            let k = Tally::native_of(ns).expect("above the zero bucket") as i32;
            let i = NATIVE_FIRST + k;
            let hi = 2f64.powf(i as f64 / 8.0);
            let lo = 2f64.powf((i - 1) as f64 / 8.0);
            let v = ns as f64 / 1e9;
            assert!(lo < v && v <= hi * (1.0 + 1e-12), "{ns}: ({lo}, {hi}]");
        }
        assert_eq!(Tally::native_of(0), None);
        assert_eq!(Tally::native_of(59), None, "2^-24 s = 59.6 ns is the zero bucket");
        assert_eq!(Tally::native_of(u64::MAX), Some(NATIVE_BUCKETS - 1));
    }

    #[test]
    fn the_protobuf_page_has_the_native_histogram_and_the_spike_as_exemplar() {
        use prost::Message;
        let t = Arc::new(Tally::new(50_000));
        let s = one_cpu(&t, "6.1", 50_000);
        for (i, ns) in [7_000u64, 8_000, 70_000, 2_000].into_iter().enumerate() {
            t.observe(ns, i as u64 + 1);
        }
        s.runs
            .lock()
            .unwrap()
            .open("20261202T170214Z-5ef9cb57", vec![0]);
        let r = registry(s.clone());
        let (ct, body) = page(&r, &s, Format::Protobuf);
        assert_eq!(ct, PROTOBUF_CONTENT_TYPE);
        let mut buf = body.as_slice();
        let mut fams = Vec::new();
        while !buf.is_empty() {
            fams.push(pb::MetricFamily::decode_length_delimited(&mut buf).expect("delimited"));
        }
        let lat = fams
            .iter()
            .find(|f| f.name == "latlab_latency_seconds")
            .expect("latency family");
        let h = lat.metric[0].histogram.as_ref().expect("histogram");
        assert_eq!(h.schema, NATIVE_SCHEMA);
        assert_eq!(h.sample_count, 4);
        // The deltas add back to counts that sum to the count.
        let mut c = 0i64;
        let total: i64 = h
            .positive_delta
            .iter()
            .map(|d| {
                c += d;
                c
            })
            .sum();
        assert_eq!(total as u64 + h.zero_count, 4);
        let len: u32 = h.positive_span.iter().map(|s| s.length).sum();
        assert_eq!(len as usize, h.positive_delta.len());
        // The spike (70 us, wake-up 3) on the first classic bucket that holds it.
        let with: Vec<&pb::Bucket> = h.bucket.iter().filter(|b| b.exemplar.is_some()).collect();
        assert_eq!(with.len(), 1, "{:?}", h.bucket);
        assert!(with[0].upper_bound >= 70e-6 && with[0].upper_bound < 70e-6 * 1.1);
        let ex = with[0].exemplar.as_ref().unwrap();
        let labels: Vec<(&str, &str)> = ex
            .label
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        assert_eq!(
            labels,
            vec![("run", "20261202T170214Z-5ef9cb57"), ("cpu", "3"), ("seq", "3")]
        );
        let exceeded = fams
            .iter()
            .find(|f| f.name == "latlab_threshold_exceeded_total")
            .expect("counter");
        let c = exceeded.metric[0].counter.as_ref().unwrap();
        assert_eq!(c.value, 1.0);
        assert!(c.exemplar.is_some());
        // The text pages: OpenMetrics carries the exemplar, the classic one cannot.
        let (_, om) = page(&r, &s, Format::OpenMetrics);
        let om = String::from_utf8(om).unwrap();
        assert!(om.contains("# {run=\"20261202T170214Z-5ef9cb57\",cpu=\"3\",seq=\"3\"} 0.00007"), "{om}");
        let (_, classic) = page(&r, &s, Format::Classic);
        assert!(!String::from_utf8(classic).unwrap().contains(" # {"));
    }
}
