//! The readers, one per tool: rt-tests JSON (cyclictest and oslat share it), hackbench text,
//! iperf3 JSON. Each returns finished runs or an error naming the file and what is wrong.

use super::check::Source;
use super::{bad, keep_beyond, mark_beyond, run_of, Built, Tool};
use latlab_core::error::Result;
use latlab_core::result::{Run, Series};
use serde_json::Value;

/// Parses `text` (the contents of `file`) as `tool`'s output, making at most `max_runs` runs
/// (more is exit 2 naming the file and `--max-runs`).
pub(crate) fn parse(tool: Tool, text: &str, file: &str, max_runs: u64) -> Result<Vec<Run>> {
    if max_runs == 0 {
        return Err(bad(file, "no run left under --max-runs"));
    }
    match tool {
        Tool::Cyclictest | Tool::Oslat | Tool::Signaltest | Tool::Cyclicdeadline => {
            rt_tests(tool, text, file).map(|r| vec![r])
        }
        Tool::Pmqtest | Tool::Ptsematest | Tool::Svsematest | Tool::Sigwaittest => {
            super::pairs::parse(tool, text, file).map(|r| vec![r])
        }
        Tool::RtlaHist => super::rtla::parse(text, file).map(|r| vec![r]),
        Tool::RtlaTop => super::rtla_top::parse(text, file).map(|r| vec![r]),
        Tool::Hackbench => hackbench(text, file, max_runs),
        Tool::Iperf3 => iperf3(text, file).map(|r| vec![r]),
    }
}

fn json(text: &str, file: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        bad(
            file,
            format!(
                "not {what} JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })
}

/// A non-negative finite number, or an error naming the field.
fn num(v: &Value, file: &str, field: &str) -> Result<Option<f64>> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(bad(
                file,
                format!("{field}: {n} is not a non-negative number"),
            )),
        },
        other => Err(bad(file, format!("{field}: {other} is not a number"))),
    }
}

/// Seconds between rt-tests' `start_time` and `end_time` ("Sun, 22 Nov 2026 15:46:35 +0000"),
/// with a warning where they cannot give one (a date not in that form, an end before the
/// start): the duration is then unknown (0).
fn rt_duration(v: &Value, warnings: &mut Vec<String>) -> Option<f64> {
    let start = v["start_time"].as_str();
    let end = v["end_time"].as_str();
    for (key, text) in [("start_time", start), ("end_time", end)] {
        if let Some(t) = text.filter(|t| super::rt_time(t).is_none()) {
            warnings.push(format!(
                "{key} '{}' is not rt-tests' date (\"Sun, 22 Nov 2026 15:46:35 +0000\"): {}",
                t.escape_debug(),
                if key == "start_time" {
                    "the run's start is the time of the import"
                } else {
                    "its duration is unknown"
                }
            ));
        }
    }
    let (a, b) = (super::rt_time(start?)?, super::rt_time(end?)?);
    match b.duration_since(a) {
        Ok(d) => Some(d.as_secs_f64()),
        Err(_) => {
            warnings.push(format!(
                "end_time ({}) is before start_time ({}): its duration is unknown",
                end.unwrap_or_default().escape_debug(),
                start.unwrap_or_default().escape_debug()
            ));
            None
        }
    }
}

/// The most wake-ups a thread's `cycles` may count: 2^53, exact as a float (285 years at one
/// a microsecond).
const MAX_CYCLES: u64 = 1 << 53;

/// Whether an rt-tests command line (`cmdline:` in its --json) asks for a histogram: `-h N`,
/// `-hN`, `-H N`, `--histogram[=N]`, `--histofall[=N]`, or `h`/`H` in a cluster of short
/// options (`-qh 100`).
fn asks_for_histogram(cmdline: &str) -> bool {
    cmdline.split_whitespace().skip(1).any(|w| {
        if let Some(long) = w.strip_prefix("--") {
            long.starts_with("histogram") || long.starts_with("histofall")
        } else if let Some(short) = w.strip_prefix('-') {
            // Options before the first that takes a value: letters only, up to a digit.
            short
                .chars()
                .take_while(|c| c.is_ascii_alphabetic())
                .any(|c| c == 'h' || c == 'H')
        } else {
            false
        }
    })
}

/// A thread's histogram in ns: its (value, count) pairs, the samples it holds, and the
/// highest bucket that holds any.
type Read = (Vec<(u64, u64)>, u64, u64);

/// [`Read`] of thread `id`'s `histogram` object.
fn histogram(src: &Source, id: &str, t: &Value, scale: f64) -> Result<Read> {
    let file = src.file;
    let field = |f: &str| format!("thread {id}: {f}");
    let mut pairs = Vec::new();
    let mut in_hist = 0u64;
    let mut top = 0u64;
    if let Some(h) = t["histogram"].as_object() {
        for (k, c) in h {
            let at: f64 = k
                .parse()
                .ok()
                .filter(|x: &f64| {
                    x.is_finite()
                        && (0.0..=latlab_core::stats::histogram::HIGHEST_NS as f64)
                            .contains(&(x * scale))
                })
                .ok_or_else(|| {
                    src.at(
                        &["thread", id, "histogram", k.as_str()],
                        format!("bucket '{k}' is not a latency up to one hour"),
                    )
                })?;
            let c = c.as_u64().ok_or_else(|| {
                bad(
                    file,
                    format!("{}: count of {k} is not a count", field("histogram")),
                )
            })?;
            let ns = (at * scale) as u64;
            // Only a bucket that holds samples bounds the max (a histogram may be padded
            // with empty ones).
            if c > 0 {
                top = top.max(ns);
            }
            in_hist = in_hist
                .checked_add(c)
                .ok_or_else(|| bad(file, format!("{}: counts overflow", field("histogram"))))?;
            pairs.push((ns, c));
        }
    }
    Ok((pairs, in_hist, top))
}

/// One thread of an rt-tests file as read so far, for what its histogram leaves out.
struct Thread<'a> {
    id: &'a str,
    json: &'a Value,
    cycles: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
    in_hist: u64,
    top: u64,
    pairs: Vec<(u64, u64)>,
}

impl Thread<'_> {
    /// The samples past the histogram, as (count, the value they are known to exceed, ns),
    /// with a warning for each way a histogram falls short; `pairs` gains the exact max.
    fn beyond(
        &mut self,
        tool: Tool,
        histogram_asked: Option<bool>,
        src: &Source,
        warnings: &mut Vec<String>,
    ) -> Result<Option<(u64, u64)>> {
        let (id, t, cycles, min, max) = (self.id, self.json, self.cycles, self.min, self.max);
        let (in_hist, top) = (self.in_hist, self.top);
        let pairs = &mut self.pairs;
        let path = |f: &'static str| ["thread", id, f];
        let mut beyond: Option<(u64, u64)> = None;
        if pairs.is_empty() {
            // Only cyclictest can be asked for one (-h N); the others keep none or always do.
            // Its file holds an empty histogram with or without -h: its command line tells.
            let asked = t["histogram"].is_object() && histogram_asked != Some(false);
            let hint = if tool == Tool::Cyclictest && asked && histogram_asked.is_none() {
                format!(
                    " (its histogram is empty: cyclictest ran without -h, or all {} samples \
                         lie beyond its -h range)",
                    cycles.unwrap_or(0)
                )
            } else if tool == Tool::Cyclictest && asked && cycles.unwrap_or(0) > 0 {
                // -h was given, but every sample lay beyond its range.
                format!(
                    " left: its -h histogram is empty, all {} samples lie beyond it (the \
                         smallest is {} us; run cyclictest with a larger -h)",
                    cycles.unwrap_or(0),
                    min.map_or(0.0, |m| m as f64 / 1e3)
                )
            } else if tool == Tool::Cyclictest {
                format!(" (run {} with -h/--histogram to keep one)", tool.name())
            } else {
                format!(" ({} keeps none)", tool.name())
            };
            warnings.push(format!("thread {id}: no histogram{hint}: only min/avg/max"));
        } else if let (Some(n), Some(mx)) = (cycles, max) {
            // cyclictest leaves samples beyond its histogram out of it; it never holds more.
            if n < in_hist && tool != Tool::Oslat {
                return Err(src.at(
                    &path("cycles"),
                    format!("{n} is below the {in_hist} samples its histogram holds"),
                ));
            }
            if n > in_hist {
                beyond = Some((n - in_hist, top));
                let who = format!("thread {id}");
                let w = keep_beyond(pairs, &who, n - in_hist, top, mx);
                warnings.push(w);
            }
        } else if let Some(mx) = max.filter(|&m| m > top && tool == Tool::Oslat) {
            // oslat's last bucket holds everything from its value up.
            if let Some(last) = pairs.iter_mut().find(|p| p.0 == top) {
                warnings.push(format!(
                        "thread {id}: the top bucket (>= {} us) holds {} samples: kept at its value, one at the exact max {} us",
                        top as f64 / 1e3,
                        last.1,
                        mx as f64 / 1e3
                    ));
                // Only the top bucket's floor is known of these, and that one reached the max.
                beyond = Some((1, top));
                if last.1 > 1 {
                    last.1 -= 1;
                    pairs.push((mx, 1));
                } else {
                    last.0 = mx;
                }
            }
        }
        Ok(beyond)
    }
}

/// What every thread of one rt-tests file is read with: the file, its tool, the unit of its
/// values and whether cyclictest was asked for a histogram.
struct RtFile<'a> {
    tool: Tool,
    src: Source<'a>,
    /// ns per value: 1000 where the file is in µs, 1 where in ns.
    scale: f64,
    /// What its command line says of a histogram; `None` where it has none.
    histogram_asked: Option<bool>,
}

/// ns per value of an rt-tests file: cyclictest --nsecs reports ns (resolution_in_ns = 1);
/// otherwise (0, or no such field) values are µs. Anything else is no unit.
fn rt_scale(v: &Value, src: &Source) -> Result<f64> {
    match &v["resolution_in_ns"] {
        Value::Null => Ok(1000.0),
        r if r.as_u64() == Some(0) => Ok(1000.0),
        r if r.as_u64() == Some(1) => Ok(1.0),
        r => Err(src.at(
            &["resolution_in_ns"],
            format!("{r} is neither 0 (values in us) nor 1 (in ns)"),
        )),
    }
}

/// Refuses a file whose command line ran another rt-tests tool than --from names: its
/// figures would be stored as the wrong kind.
fn rt_same_tool(tool: Tool, v: &Value, src: &Source) -> Result<()> {
    match Tool::named_in(v).filter(|&t| t != tool) {
        Some(other) => Err(src.at(
            &["cmdline:"],
            format!(
                "this file is {0}'s output, not {1}'s: import it with --from {0}",
                other.name(),
                tool.name()
            ),
        )),
        None => Ok(()),
    }
}

impl RtFile<'_> {
    /// Thread `id`'s series, with a warning for each way its figures fall short, and the
    /// thread's own `duration` where it has one.
    fn thread(
        &self,
        id: &str,
        t: &Value,
        warnings: &mut Vec<String>,
    ) -> Result<(Series, Option<f64>)> {
        let src = &self.src;
        let path = |f: &'static str| ["thread", id, f];
        let (pairs, in_hist, top) = histogram(src, id, t, self.scale)?;
        let cycles = match &t["cycles"] {
            Value::Null => None,
            c => Some(c.as_u64().filter(|&n| n <= MAX_CYCLES).ok_or_else(|| {
                src.at(
                    &path("cycles"),
                    format!("{c} is not a count of wake-ups (0 to 2^53)"),
                )
            })?),
        };
        let (min, max, mean) = self.figures(id, t, cycles, pairs.is_empty(), warnings)?;
        let duration = num(&t["duration"], src.file, &format!("thread {id}: duration"))?;
        if cycles.unwrap_or(0) > 0 || !pairs.is_empty() {
            // The tools always write these for a thread that measured anything.
            src.required(min, &path("min"))?;
            src.required(max, &path("max"))?;
            src.required(mean, &path("avg"))?;
        }
        warnings.extend(src.ordered(&["thread", id], min, mean, max)?);
        if let Some(mx) = max.filter(|&m| m < top && !pairs.is_empty()) {
            return Err(src.at(
                &path("max"),
                format!("{mx} ns is below the histogram's bucket at {top} ns that holds samples"),
            ));
        }
        let mut th = Thread {
            id,
            json: t,
            cycles,
            min,
            max,
            in_hist,
            top,
            pairs,
        };
        let beyond = th.beyond(self.tool, self.histogram_asked, src, warnings)?;
        let built = Built {
            name: format!("T{id}"),
            cpu: super::check::thread_cpu(src, &path("cpu"), &t["cpu"])?,
            unit: "ns".into(),
            pairs: th.pairs,
            min,
            max,
            mean,
            interval_ns: None,
        };
        let mut s = built.series();
        if s.summary.count == 0 {
            s.summary.count = cycles.unwrap_or(0);
        }
        mark_beyond(&mut s, beyond);
        Ok((s, duration))
    }

    /// Thread `id`'s min, max and avg in ns; none of them for a thread that measured nothing
    /// (0 cycles, an empty histogram), whose figures are the tool's starting values.
    fn figures(
        &self,
        id: &str,
        t: &Value,
        cycles: Option<u64>,
        no_histogram: bool,
        warnings: &mut Vec<String>,
    ) -> Result<(Option<u64>, Option<u64>, Option<f64>)> {
        let path = |f: &'static str| ["thread", id, f];
        let min = self.src.latency(&t["min"], &path("min"), self.scale)?;
        let max = self.src.latency(&t["max"], &path("max"), self.scale)?;
        let mean = self.src.time(&t["avg"], &path("avg"), self.scale)?;
        if cycles == Some(0) && no_histogram {
            if min.is_some() || max.is_some() || mean.is_some() {
                warnings.push(format!(
                    "thread {id}: 0 cycles: it measured nothing (its min, avg and max are not figures)"
                ));
            }
            return Ok((None, None, None));
        }
        Ok((min, max, mean))
    }
}

fn rt_tests(tool: Tool, text: &str, file: &str) -> Result<Run> {
    let v = json(text, file, tool.name())?;
    if let Some(k) = super::check::repeated_thread(text) {
        return Err(bad(
            file,
            format!("thread \"{k}\" appears twice: one of them would be lost"),
        ));
    }
    let src = Source { text, file };
    let threads = v["thread"].as_object().ok_or_else(|| {
        bad(
            file,
            format!("no \"thread\" object: not {} --json output", tool.name()),
        )
    })?;
    let sys = &v["sysinfo"];
    let mut run = run_of(
        tool,
        file,
        sys["release"].as_str().map(String::from),
        sys["nodename"].as_str().map(String::from),
    );
    super::rt_sysinfo(&mut run, sys);
    let scale = rt_scale(&v, &src)?;
    // The tool's own exit status, when it wrote one: a failed run's figures are kept, said.
    if let Some(rc) = v["return_code"].as_i64().filter(|&rc| rc != 0) {
        run.warnings.push(format!(
            "{} reported return_code {rc} (it failed): its figures may be partial",
            tool.name()
        ));
    }
    let mut dur = rt_duration(&v, &mut run.warnings).unwrap_or(0.0);
    rt_same_tool(tool, &v, &src)?;
    // Whether cyclictest was asked for a histogram: its file holds an empty one either way.
    let histogram_asked = v["cmdline:"]
        .as_str()
        .or(v["cmdline"].as_str())
        .map(asks_for_histogram);
    let rt = RtFile {
        tool,
        src,
        scale,
        histogram_asked,
    };
    let mut ids: Vec<(&String, &Value)> = threads.iter().collect();
    ids.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(u64::MAX));
    for (id, t) in ids {
        let (s, duration) = rt.thread(id, t, &mut run.warnings)?;
        if let Some(d) = duration {
            dur = d;
        }
        run.series.push(s);
    }
    if run.series.is_empty() {
        return Err(bad(file, "no threads in \"thread\""));
    }
    run.duration_s = dur;
    if let Some(t) = v["start_time"].as_str().and_then(super::rt_time) {
        super::set_start(&mut run, t);
    }
    Ok(run)
}

/// One run per `Time:` line, each carrying only the setup lines (`Running in ...`, `Each
/// sender ...`) of its own block, so the store grows with the input, not its square.
fn hackbench(text: &str, file: &str, max_runs: u64) -> Result<Vec<Run>> {
    let times = text
        .lines()
        .filter(|l| l.trim().starts_with("Time:"))
        .count() as u64;
    if times > max_runs {
        return Err(bad(
            file,
            format!(
                "{times} 'Time:' lines would make {times} runs, more than --max-runs {max_runs} \
                 (raise it to import them all)"
            ),
        ));
    }
    let mut runs = Vec::new();
    // The environment is read once per file, not once per run.
    let skeleton = run_of(Tool::Hackbench, file, None, None);
    let mut setup: Vec<&str> = Vec::new();
    let mut after_time = false;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("Running in") || line.starts_with("Each sender") {
            if after_time {
                setup.clear();
                after_time = false;
            }
            setup.push(line);
            continue;
        }
        let Some(rest) = line.trim().strip_prefix("Time:") else {
            continue;
        };
        after_time = true;
        let secs: f64 = rest
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| {
                bad(
                    file,
                    format!("line {}: '{}' is not a time in seconds", i + 1, rest.trim()),
                )
            })?;
        if secs * 1e9 > latlab_core::stats::histogram::HIGHEST_NS as f64 {
            return Err(bad(
                file,
                format!(
                    "line {}: Time: {secs} s is beyond the one hour a run may take",
                    i + 1
                ),
            ));
        }
        let ns = (secs * 1e9).round() as u64;
        let mut r = skeleton.clone();
        r.id = latlab_core::result::new_run_id(std::time::SystemTime::now());
        r.parameters["setup"] = setup.join("; ").into();
        r.duration_s = secs;
        r.series.push(
            Built {
                name: "time".into(),
                cpu: None,
                unit: "ns".into(),
                pairs: vec![(ns, 1)],
                min: Some(ns),
                max: Some(ns),
                mean: Some(ns as f64),
                interval_ns: None,
            }
            .series(),
        );
        runs.push(r);
    }
    if runs.is_empty() {
        return Err(bad(file, "no 'Time:' line: not hackbench output"));
    }
    Ok(runs)
}

fn iperf3(text: &str, file: &str) -> Result<Run> {
    let v = json(text, file, "iperf3 -J")?;
    if let Some(e) = v["error"].as_str() {
        return Err(bad(file, format!("iperf3 reported an error: {e}")));
    }
    let end = &v["end"];
    let sum = if end["sum_received"].is_object() {
        &end["sum_received"]
    } else {
        &end["sum"]
    };
    let bps = num(
        &sum["bits_per_second"],
        file,
        "end.sum_received.bits_per_second",
    )?
    .ok_or_else(|| {
        bad(
            file,
            "no end.sum_received.bits_per_second: not iperf3 -J output",
        )
    })?;
    let secs = num(&sum["seconds"], file, "end.sum_received.seconds")?.unwrap_or(0.0);
    let host = v["start"]["system_info"]
        .as_str()
        .and_then(|s| s.split_whitespace().nth(1))
        .map(String::from);
    let mut r = run_of(Tool::Iperf3, file, None, host);
    r.duration_s = secs;
    if let Some(t) = v["start"]["timestamp"]["timesecs"].as_u64() {
        super::set_start(
            &mut r,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(t),
        );
    }
    r.parameters["iperf3_version"] = v["start"]["version"].clone();
    r.parameters["test_start"] = v["start"]["test_start"].clone();
    // As `latlab tcp`: one throughput figure per run, in kbit/s (exact in a JSON number).
    if bps / 1e3 > (1u64 << 53) as f64 {
        return Err(Source { text, file }.at(
            &["end", "sum_received", "bits_per_second"],
            format!("{bps} is beyond any throughput latlab keeps"),
        ));
    }
    let kbit = (bps / 1e3).round() as u64;
    let mut s = Built {
        name: "throughput".into(),
        cpu: None,
        unit: "kbit/s".into(),
        pairs: vec![(kbit, 1)],
        min: Some(kbit),
        max: Some(kbit),
        mean: Some(kbit as f64),
        interval_ns: None,
    }
    .series();
    let intervals: Vec<f64> = v["intervals"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i["sum"]["bits_per_second"].as_f64())
                .collect()
        })
        .unwrap_or_default();
    s.extra = Some(serde_json::json!({ "interval_bits_per_second": intervals }));
    r.series.push(s);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CYCLICTEST: &str = r#"{"file_version": 1, "start_time": "Sun, 22 Nov 2026 15:46:35 +0000",
      "end_time": "Sun, 22 Nov 2026 15:46:37 +0000", "resolution_in_ns": 0,
      "sysinfo": {"release": "6.1.0-rt", "nodename": "lab"},
      "thread": {"0": {"histogram": {"26": 1, "63": 16, "64": 30}, "cycles": 50,
                       "min": 26, "max": 6715, "avg": 132.66, "cpu": 0}}}"#;

    #[test]
    fn cyclictest_keeps_its_histogram_and_its_overflow() {
        let r = parse(Tool::Cyclictest, CYCLICTEST, "ct.json", 10).unwrap();
        let s = &r[0].series[0];
        assert_eq!(s.summary.count, 50);
        assert_eq!((s.summary.min_ns, s.summary.max_ns), (26_000, 6_715_000));
        assert_eq!(r[0].duration_s, 2.0);
        // Dated by the tool's own start, not the import's.
        assert_eq!(r[0].started, "2026-11-22T15:46:35.000000Z");
        assert_eq!(r[0].ended, "2026-11-22T15:46:37.000000Z");
        assert!(r[0].id.starts_with("20261122T154635Z-"), "{}", r[0].id);
        assert_eq!(r[0].environment.kernel_release, "6.1.0-rt");
        assert!(
            r[0].warnings[0].contains("3 samples beyond"),
            "{:?}",
            r[0].warnings
        );
        assert!(s.summary.percentiles.p99_99 <= s.summary.max_ns);
    }

    #[test]
    fn a_histogram_every_sample_overflowed_is_told_apart_from_none() {
        // Real cyclictest -h 1 output: every sample lay beyond the 1 µs histogram.
        let asked = r#"{"file_version": 1, "cmdline:": "cyclictest -t 1 -qh 1 --json=ct.json",
            "thread": {"0": {"histogram": {}, "cycles": 100,
            "min": 14, "max": 286, "avg": 21.91, "cpu": 0, "node": 0}}}"#;
        let r = parse(Tool::Cyclictest, asked, "ct.json", 10).unwrap();
        assert!(
            r[0].warnings
                .iter()
                .any(|w| w.contains("all 100 samples lie beyond it")
                    && w.contains("larger -h")
                    && !w.contains("to keep one")),
            "{:?}",
            r[0].warnings
        );
        // Real cyclictest output without -h: an empty histogram too; its command line tells.
        let without = asked.replace("-qh 1", "-q -l 100");
        let none = asked.replace(r#""histogram": {}, "#, "");
        for text in [&without, &none] {
            let r = parse(Tool::Cyclictest, text, "ct.json", 10).unwrap();
            assert!(
                r[0].warnings
                    .iter()
                    .any(|w| w.contains("with -h/--histogram to keep one")),
                "{:?}",
                r[0].warnings
            );
        }
        // No command line: both readings are said.
        let unsaid = asked.replace(r#""cmdline:": "cyclictest -t 1 -qh 1 --json=ct.json","#, "");
        let r = parse(Tool::Cyclictest, &unsaid, "ct.json", 10).unwrap();
        assert!(
            r[0].warnings
                .iter()
                .any(|w| w.contains("ran without -h, or all 100 samples")),
            "{:?}",
            r[0].warnings
        );
        for (cmdline, asks) in [
            ("cyclictest -h 100", true),
            ("cyclictest -h100 -q", true),
            ("cyclictest --histogram=50", true),
            ("cyclictest -H 20", true),
            ("cyclictest --histofall 20", true),
            ("cyclictest -mqh 20", true),
            ("cyclictest -t1 -p80 -q --json=h.json", false),
            ("cyclictest -a 0 -i 1000", false),
            ("cyclictest", false),
        ] {
            assert_eq!(super::asks_for_histogram(cmdline), asks, "{cmdline}");
        }
    }

    #[test]
    fn a_file_whose_command_line_names_another_tool_is_refused() {
        let text = r#"{"file_version": 1, "cmdline:": "/usr/bin/cyclictest -q -h 100",
            "thread": {"0": {"histogram": {"5": 4}, "cycles": 4, "min": 5, "max": 5, "avg": 5.0}}}"#;
        for wrong in [Tool::Oslat, Tool::Cyclicdeadline, Tool::Signaltest] {
            let e = parse(wrong, text, "c.json", 10).unwrap_err().to_string();
            assert!(
                e.contains("cyclictest's output") && e.contains("--from cyclictest"),
                "{e}"
            );
        }
        assert!(parse(Tool::Cyclictest, text, "c.json", 10).is_ok());
        // A command line of no known tool (a wrapper script) is no reason to refuse.
        let wrapped = text.replace("/usr/bin/cyclictest", "./run-rt.sh");
        assert!(parse(Tool::Oslat, &wrapped, "c.json", 10).is_ok());
    }

    #[test]
    fn a_unit_that_is_none_is_refused_and_a_failed_run_is_said() {
        let with = |extra: &str| {
            format!(
                r#"{{"file_version": 1, {extra} "thread": {{"0": {{"histogram": {{"5": 4}},
                  "cycles": 4, "min": 5, "max": 5, "avg": 5.0}}}}}}"#
            )
        };
        for r in ["-1000", "1e30", "2", "\"ns\""] {
            let e = parse(
                Tool::Cyclictest,
                &with(&format!(r#""resolution_in_ns": {r},"#)),
                "c.json",
                10,
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("resolution_in_ns") && e.contains("neither 0"),
                "{r}: {e}"
            );
        }
        let ns = parse(
            Tool::Cyclictest,
            &with(r#""resolution_in_ns": 1,"#),
            "c.json",
            10,
        )
        .unwrap();
        assert_eq!(ns[0].series[0].summary.max_ns, 5);
        let us = parse(
            Tool::Cyclictest,
            &with(r#""resolution_in_ns": 0,"#),
            "c.json",
            10,
        )
        .unwrap();
        assert_eq!(us[0].series[0].summary.max_ns, 5_000);
        let failed = parse(
            Tool::Cyclictest,
            &with(r#""return_code": 1,"#),
            "c.json",
            10,
        )
        .unwrap();
        assert!(
            failed[0]
                .warnings
                .iter()
                .any(|w| w.contains("return_code 1 (it failed)")),
            "{:?}",
            failed[0].warnings
        );
        let ok = parse(
            Tool::Cyclictest,
            &with(r#""return_code": 0,"#),
            "c.json",
            10,
        )
        .unwrap();
        assert!(!ok[0].warnings.iter().any(|w| w.contains("return_code")));
    }

    #[test]
    fn cycles_that_are_no_count_are_refused_naming_the_field() {
        for c in [
            "-3",
            "1e30",
            "18446744073709551615",
            "9007199254740993",
            "\"5\"",
            "2.5",
        ] {
            let text = format!(
                r#"{{"file_version": 1, "thread": {{"0": {{"histogram": {{"5": 4}},
                  "cycles": {c}, "min": 5, "max": 5, "avg": 5.0}}}}}}"#
            );
            let e = parse(Tool::Cyclictest, &text, "ct.json", 10)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("thread.0.cycles") && e.contains("is not a count of wake-ups"),
                "{c}: {e}"
            );
        }
        let text = r#"{"file_version": 1, "thread": {"0": {"histogram": {"5": 4},
              "cycles": 9007199254740992, "min": 5, "max": 5, "avg": 5.0}}}"#;
        assert!(parse(Tool::Cyclictest, text, "ct.json", 10).is_ok());
    }

    #[test]
    fn an_imported_run_says_only_what_its_file_says_of_the_machine() {
        let text = r##"{"file_version": 1, "sysinfo": {"sysname": "Linux", "nodename": "rt-box-7",
          "release": "5.10.0-rt", "version": "#1 SMP PREEMPT_RT Tue", "machine": "aarch64",
          "realtime": 1}, "thread": {"0": {"cycles": 5, "min": 4, "max": 9, "avg": 6.0, "cpu": 0}}}"##;
        let r = parse(Tool::Cyclictest, text, "c.json", 10).unwrap();
        let e = &r[0].environment;
        assert_eq!(
            (e.hostname.as_str(), e.kernel_release.as_str()),
            ("rt-box-7", "5.10.0-rt")
        );
        assert_eq!(e.preemption, "rt");
        assert!(
            e.kernel_version.contains("PREEMPT_RT"),
            "{}",
            e.kernel_version
        );
        // Not the importing machine's.
        assert_eq!(
            (e.clocksource.as_str(), e.cpu_model.as_str(), e.cpus_online),
            ("unknown", "unknown", 0)
        );
        assert_eq!(
            (e.sched_rt_runtime_us, e.kernel_cmdline.as_str()),
            (None, "")
        );
    }

    #[test]
    fn a_thread_given_twice_is_refused() {
        let t = r#"{"file_version": 1, "thread": {"0": {"cycles": 5, "min": 4, "max": 9, "avg": 6.0},
          "0": {"cycles": 7, "min": 3, "max": 8, "avg": 5.0}}}"#;
        let e = parse(Tool::Cyclictest, t, "c.json", 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("thread \"0\" appears twice"), "{e}");
    }

    #[test]
    fn dates_cpus_and_empty_threads_are_checked() {
        let with = |extra: &str, thread: &str| {
            format!(r#"{{"file_version": 1, {extra} "thread": {{"0": {{{thread}}}}}}}"#)
        };
        let good = r#""cycles": 50, "min": 14, "max": 286, "avg": 21.9, "cpu": 1"#;
        // An end before the start: no 24-hour run, a warning instead.
        let t = with(
            r#""start_time": "Sun, 22 Nov 2026 15:46:37 +0000", "end_time": "Sun, 22 Nov 2026 15:46:35 +0000","#,
            good,
        );
        let r = parse(Tool::Cyclictest, &t, "c.json", 10).unwrap();
        assert_eq!(r[0].duration_s, 0.0);
        assert!(
            r[0].warnings
                .iter()
                .any(|w| w
                    .contains("end_time (Sun, 22 Nov 2026 15:46:35 +0000) is before start_time")),
            "{:?}",
            r[0].warnings
        );
        // A date not in rt-tests' form is said, not silently replaced.
        let t = with(r#""start_time": "yesterday","#, good);
        let r = parse(Tool::Cyclictest, &t, "c.json", 10).unwrap();
        assert!(
            r[0].warnings
                .iter()
                .any(|w| w.contains("start_time 'yesterday' is not rt-tests' date")),
            "{:?}",
            r[0].warnings
        );
        // CPU numbers: -1 is none; others must be a CPU.
        let r = parse(
            Tool::Cyclictest,
            &with("", &good.replace("\"cpu\": 1", "\"cpu\": -1")),
            "c.json",
            10,
        )
        .unwrap();
        assert_eq!(r[0].series[0].cpu, None);
        for bad in ["-7", "1099511627776", "\"x\"", "1.5"] {
            let e = parse(
                Tool::Cyclictest,
                &with("", &good.replace("\"cpu\": 1", &format!("\"cpu\": {bad}"))),
                "c.json",
                10,
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("thread.0.cpu") && e.contains("is not a CPU number"),
                "{bad}: {e}"
            );
        }
        // A thread of 0 cycles has no figures, whatever its min/avg/max say.
        let r = parse(
            Tool::Cyclictest,
            &with("", r#""cycles": 0, "min": 1000000, "max": 0, "avg": 0"#),
            "c.json",
            10,
        )
        .unwrap();
        let s = &r[0].series[0];
        assert_eq!(
            (s.summary.count, s.summary.min_ns, s.summary.max_ns),
            (0, 0, 0)
        );
        assert_eq!(r[0].check_figures(), Ok(()));
        assert!(
            r[0].warnings
                .iter()
                .any(|w| w.contains("0 cycles: it measured nothing")),
            "{:?}",
            r[0].warnings
        );
    }

    #[test]
    fn a_histogram_padded_with_empty_buckets_is_read() {
        // Buckets of 0 past the max (a histogram written whole): only those holding samples
        // bound the max.
        let text = r#"{"file_version": 1, "thread": {"0": {"histogram": {"5": 4, "80": 0, "99": 0},
          "cycles": 4, "min": 5, "max": 5, "avg": 5.0}}}"#;
        let r = parse(Tool::Cyclictest, text, "ct.json", 10).unwrap();
        assert_eq!(r[0].series[0].summary.count, 4);
        // One that holds samples still does.
        let text = r#"{"file_version": 1, "thread": {"0": {"histogram": {"5": 3, "80": 1},
          "cycles": 4, "min": 5, "max": 5, "avg": 5.0}}}"#;
        let e = parse(Tool::Cyclictest, text, "ct.json", 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bucket at 80000 ns that holds samples"), "{e}");
    }

    #[test]
    fn a_histogram_holding_more_than_its_cycles_is_refused_naming_the_count() {
        let text = r#"{"file_version": 1, "thread": {"0": {"histogram": {"5": 400, "32": 1},
          "cycles": 300, "min": 5, "max": 271, "avg": 68.1}}}"#;
        let e = parse(Tool::Cyclictest, text, "ct.json", 10)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("thread.0.cycles: 300 is below the 401 samples its histogram holds"),
            "{e}"
        );
    }

    #[test]
    fn an_average_below_the_tools_own_min_is_kept_with_a_warning() {
        // Real cyclicdeadline output (CI, 2026-11-26): its avg 64.42 µs, its min 68 µs.
        let text = r#"{"file_version": 1, "thread": {"0": {"cycles": 50, "min": 68,
            "max": 95, "avg": 64.42, "cpu": 0}}}"#;
        let r = parse(Tool::Cyclicdeadline, text, "cd.json", 10).unwrap();
        assert_eq!(r[0].series[0].summary.min_ns, 68_000);
        assert!(
            r[0].warnings.iter().any(|w| w.contains("thread.0")
                && w.contains("below its min 68000 ns")
                && w.contains("kept as the tool wrote it")),
            "{:?}",
            r[0].warnings
        );
        // A min above the max is still no tool's output.
        let bad = text.replace("\"max\": 95", "\"max\": 9");
        assert!(parse(Tool::Cyclicdeadline, &bad, "cd.json", 10).is_err());
    }

    #[test]
    fn bad_inputs_name_what_is_wrong() {
        for (tool, text, want) in [
            (Tool::Cyclictest, "{", "not cyclictest JSON"),
            (Tool::Oslat, "{}", "no \"thread\""),
            (
                Tool::Cyclictest,
                r#"{"thread":{"0":{"min":-1}}}"#,
                "line 1: thread.0.min",
            ),
            (Tool::Hackbench, "Time: fast\n", "line 1"),
            (Tool::Hackbench, "nothing\n", "no 'Time:'"),
            (
                Tool::Iperf3,
                r#"{"error":"unable to connect"}"#,
                "unable to connect",
            ),
            (Tool::Iperf3, "{}", "not iperf3"),
        ] {
            let e = parse(tool, text, "f", 10).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
