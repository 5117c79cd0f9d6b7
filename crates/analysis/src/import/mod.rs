//! `latlab runs import --from TOOL FILE`: results of the tools people already run (cyclictest
//! and oslat `--json`, rtla's `timerlat hist`/`osnoise hist` tables, hackbench's `Time:` lines,
//! iperf3 `-J`) become latlab runs, histograms kept, tagged `tool=NAME`, so `compare` and `gate`
//! treat them like latlab's own.

mod check;
mod formats;
mod pairs;
mod rtla;
mod rtla_top;

use latlab_core::error::{Error, Result};
use latlab_core::result::{Environment, Run, Series};
use latlab_core::stats::histogram::LatHistogram;
use latlab_core::stats::summary::{Percentiles, Summary};
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) use formats::parse;

/// Largest file imported.
pub(crate) const MAX_IMPORT_BYTES: u64 = 64 << 20;

/// The tools whose output is understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// cyclictest --json=FILE (rt-tests); run it with -h N to keep its histogram.
    Cyclictest,
    /// oslat --json FILE (rt-tests).
    Oslat,
    /// rtla timerlat hist / rtla osnoise hist text output (one series per column).
    #[value(name = "rtla-hist")]
    RtlaHist,
    /// rtla timerlat top / rtla osnoise top text (-q's summary, or a live run's last screen):
    /// count, min, avg and max per CPU, no histogram.
    #[value(name = "rtla-top")]
    RtlaTop,
    /// hackbench's text output: one run per `Time:` line.
    Hackbench,
    /// iperf3 -J (client or server side).
    Iperf3,
    /// pmqtest --json=FILE (rt-tests): min/avg/max per sender-receiver pair.
    Pmqtest,
    /// ptsematest --json=FILE (rt-tests).
    Ptsematest,
    /// svsematest --json=FILE (rt-tests).
    Svsematest,
    /// sigwaittest --json=FILE (rt-tests).
    Sigwaittest,
    /// signaltest --json=FILE (rt-tests): cyclictest's shape, min/avg/max per thread.
    Signaltest,
    /// cyclicdeadline --json=FILE (rt-tests): cyclictest's shape, min/avg/max per thread.
    Cyclicdeadline,
}

impl Tool {
    /// The tool whose program an rt-tests `--json` file's command line (`cmdline:`) ran, when
    /// it is one of these (not a wrapper script).
    pub fn named_in(v: &serde_json::Value) -> Option<Tool> {
        let cmdline = v["cmdline:"].as_str().or(v["cmdline"].as_str())?;
        let prog = cmdline.split_whitespace().next()?.rsplit('/').next()?;
        <Tool as clap::ValueEnum>::from_str(prog, false).ok()
    }

    /// The tool's name, which is also the imported runs' kind and `tool` tag.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cyclictest => "cyclictest",
            Tool::Oslat => "oslat",
            Tool::RtlaHist => "rtla-hist",
            Tool::RtlaTop => "rtla-top",
            Tool::Hackbench => "hackbench",
            Tool::Iperf3 => "iperf3",
            Tool::Pmqtest => "pmqtest",
            Tool::Ptsematest => "ptsematest",
            Tool::Svsematest => "svsematest",
            Tool::Sigwaittest => "sigwaittest",
            Tool::Signaltest => "signaltest",
            Tool::Cyclicdeadline => "cyclicdeadline",
        }
    }
}

/// A series built from (value in ns, count) pairs and the tool's own exact figures.
pub(crate) struct Built {
    pub(crate) name: String,
    pub(crate) cpu: Option<usize>,
    pub(crate) unit: String,
    pub(crate) pairs: Vec<(u64, u64)>,
    pub(crate) min: Option<u64>,
    pub(crate) max: Option<u64>,
    pub(crate) mean: Option<f64>,
    pub(crate) interval_ns: Option<u64>,
}

impl Built {
    pub(crate) fn series(&self) -> Series {
        let mut h = LatHistogram::new();
        let (mut n, mut sum, mut sq) = (0u64, 0f64, 0f64);
        for &(v, c) in &self.pairs {
            h.record_n(v, c);
            // The readers refuse counts that wrap; saturate rather than wrap regardless.
            n = n.saturating_add(c);
            sum += v as f64 * c as f64;
            sq += (v as f64) * (v as f64) * c as f64;
        }
        let mean = if n > 0 { sum / n as f64 } else { 0.0 };
        let var = if n > 1 {
            ((sq - n as f64 * mean * mean) / (n as f64 - 1.0)).max(0.0)
        } else {
            0.0
        };
        let lo = self.pairs.iter().filter(|p| p.1 > 0).map(|p| p.0).min();
        let hi = self.pairs.iter().filter(|p| p.1 > 0).map(|p| p.0).max();
        let max = self.max.or(hi).unwrap_or(0);
        let min = self.min.or(lo).unwrap_or(0);
        let pc = Percentiles::from_hist(&h).floored(min.min(max)).capped(max);
        let mut s = Series::from_recorder(self.name.clone(), &latlab_core::stats::Recorder::new());
        s.cpu = self.cpu;
        s.unit = self.unit.clone();
        s.interval_ns = self.interval_ns;
        s.summary = Summary {
            count: n,
            min_ns: min,
            max_ns: max,
            mean_ns: self.mean.unwrap_or(mean),
            stddev_ns: var.sqrt(),
            percentiles: pc,
        };
        s.histogram = h.to_data();
        s
    }
}

/// Records `count` samples a tool left out of its histogram (known only to exceed the highest
/// bucket used, `top_ns`) at the exact max `max_ns`, and returns the warning that says so.
pub(crate) fn keep_beyond(
    pairs: &mut Vec<(u64, u64)>,
    who: &str,
    count: u64,
    top_ns: u64,
    max_ns: u64,
) -> String {
    pairs.push((max_ns, count));
    format!(
        "{who}: {count} samples beyond the histogram (highest bucket used: {} us) are recorded at the exact max {} us",
        top_ns as f64 / 1e3,
        max_ns as f64 / 1e3
    )
}

/// Marks a series whose `count` samples are known only to exceed `above_ns` (`gate` counts
/// them as possible, not certain, events).
pub(crate) fn mark_beyond(s: &mut Series, beyond: Option<(u64, u64)>) {
    if let Some((count, above_ns)) = beyond {
        s.extra = Some(serde_json::json!({
            "beyond_histogram": { "count": count, "above_ns": above_ns }
        }));
    }
}

/// An imported run's skeleton: its kind is the tool, its environment what the tool recorded.
pub(crate) fn run_of(tool: Tool, file: &str, kernel: Option<String>, host: Option<String>) -> Run {
    // Only what the file says: not this machine's kernel, clocksource or CPUs.
    let mut env = Environment::unknown();
    if let Some(k) = kernel {
        env.kernel_release = k;
    }
    if let Some(h) = host {
        env.hostname = h;
    }
    let mut r = Run::new(
        tool.name(),
        std::time::SystemTime::now(),
        vec![format!("latlab runs import --from {} {file}", tool.name())],
        serde_json::json!({ "imported_from": file, "tool": tool.name() }),
        env,
    );
    r.duration_s = 0.0;
    r
}

/// What rt-tests' `sysinfo` says of the kernel beyond its release (`uname -v`, `realtime`).
pub(crate) fn rt_sysinfo(run: &mut Run, sys: &serde_json::Value) {
    let Some(v) = sys["version"].as_str() else {
        return;
    };
    let e = &mut run.environment;
    e.kernel_version = format!(
        "{} version {} {v}",
        sys["sysname"].as_str().unwrap_or("Linux"),
        e.kernel_release
    );
    e.preemption = if sys["realtime"].as_u64() == Some(1) {
        "rt".into()
    } else {
        latlab_core::result::env::preemption_model(v, None)
    };
}

/// Dates an imported run by the tool's own start time: its `started`, `ended` (start +
/// duration) and its id, so the id sorts with the run's time, not the import's.
pub(crate) fn set_start(run: &mut Run, t: std::time::SystemTime) {
    run.parameters["dated_by"] = "the tool's start time".into();
    date(run, t);
}

/// Sets an imported run's `started`, `ended` and id from its start `t`.
fn date(run: &mut Run, t: std::time::SystemTime) {
    run.started = latlab_core::result::rfc3339(t);
    let end = t + std::time::Duration::from_secs_f64(run.duration_s.clamp(0.0, 1e9));
    run.ended = latlab_core::result::rfc3339(end);
    run.id = latlab_core::result::new_run_id(t);
}

/// rt-tests' time stamps (`Sun, 22 Nov 2026 15:46:35 +0000`, strftime's "%a, %d %b %Y
/// %H:%M:%S %z") as a time; None when the text is not one.
pub(crate) fn rt_time(text: &str) -> Option<std::time::SystemTime> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let [_, day, mon, year, hms, tz] = w.as_slice() else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = months.iter().position(|x| x == mon)? as i64 + 1;
    let y: i64 = year.parse().ok()?;
    // A result's dates are RFC 3339's: years 1970 (the clock's start) to 9999.
    if !(1970..=9999).contains(&y) {
        return None;
    }
    let mut it = hms.split(':').map(|x| x.parse::<i64>().ok());
    let (hh, mm, ss) = (it.next()??, it.next()??, it.next()??);
    // Days per month (February's 29 in a leap year).
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let tz = tz.as_bytes();
    if !(1..=days_in[(m - 1) as usize]).contains(&day)
        || !(0..=23).contains(&hh)
        || !(0..=59).contains(&mm)
        || !(0..=60).contains(&ss)
        || tz.len() != 5
        || !tz[1..].iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    let sign = match tz[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = |a: usize| i64::from(tz[a] - b'0') * 10 + i64::from(tz[a + 1] - b'0');
    let (oh, om) = (digits(1), digits(3));
    // Offsets in use lie within ±14 hours.
    if oh > 14 || om > 59 {
        return None;
    }
    let off = sign * (oh * 3600 + om * 60);
    // Days from the civil date (Howard Hinnant's algorithm).
    let (yy, mo) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss - off;
    let secs = u64::try_from(secs).ok()?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// The default bound on the runs one import may create (`--max-runs`).
pub const DEFAULT_MAX_RUNS: u64 = 10_000;

/// Imports `files` in order into the store, printing one line per run as it goes (through
/// `print`). The first file that cannot be read or parsed stops the import with exit 2 naming
/// it; the files before it stay imported, and the message says so. At most `max_runs` runs
/// in all.
pub fn run(
    tool: Tool,
    files: &[&Path],
    tags: &[String],
    store: Option<&str>,
    max_runs: u64,
    print: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<()> {
    // A bound that allows no run is bad usage, said before any file is read.
    if max_runs == 0 {
        return Err(Error::flag(
            "--max-runs",
            "0",
            "at least 1 (the most runs one import may create)",
        ));
    }
    let mut t: BTreeMap<String, String> =
        latlab_core::store::parse_tags(tags)?.into_iter().collect();
    t.insert("tool".into(), tool.name().into());
    // Opened once the first file has been read and checked: a bad first file leaves the
    // store untouched (not even created).
    let mut st: Option<Box<dyn latlab_core::store::Store>> = None;
    let (mut done, mut made) = (0usize, 0u64);
    let mut kept: Vec<String> = Vec::new();
    for file in files {
        let name = file.display().to_string();
        let runs = match read_runs(tool, file, &name, max_runs.saturating_sub(made)) {
            Ok(r) => r,
            Err(e) if done == 0 => return Err(e),
            Err(e) => return Err(stopped_at(e, done, made, &kept, files.len() - done)),
        };
        if st.is_none() {
            st = Some(latlab_core::store::open(store)?);
        }
        let Some(st) = st.as_mut() else {
            return Err(Error::Env("the store could not be opened".into()));
        };
        let out = save(st.as_mut(), &runs, &t, tool, &name)?;
        made += runs.len() as u64;
        kept.extend(runs.iter().map(|r| r.id.clone()));
        done += 1;
        print(&out)?;
    }
    if let (true, Some(st)) = (files.len() > 1, &st) {
        print(&format!(
            "{done} file(s), {made} run(s) imported into {}\n",
            st.location()
        ))?;
    }
    Ok(())
}

/// The runs of one file, at most `max_runs`, dated and named by its contents, each checked to
/// read back as stored before any is kept.
fn read_runs(tool: Tool, file: &Path, name: &str, max_runs: u64) -> Result<Vec<Run>> {
    let text = latlab_core::io::read_text_limited(file, MAX_IMPORT_BYTES, tool.name())?;
    let mut runs = parse(tool, &text, name, max_runs)?;
    date_by_file(&mut runs, file);
    content_ids(&mut runs, tool, &text);
    for r in &runs {
        r.check_figures()
            .and_then(|_| latlab_core::result::check_round_trip(r))
            .map_err(|e| bad(name, e))?;
    }
    Ok(runs)
}

/// The error of a file that stops an import after `done` files were imported: it names the
/// runs kept (up to ten), since stderr alone then tells what is in the store.
fn stopped_at(e: Error, done: usize, made: u64, kept: &[String], left: usize) -> Error {
    let mut named: Vec<&str> = kept.iter().take(10).map(String::as_str).collect();
    if kept.len() > 10 {
        named.push("...");
    }
    Error::Usage(format!(
        "{e}\nthe {done} file(s) before it were imported ({made} run(s): {}) and are \
         kept; {left} file(s) from this one on were not",
        named.join(", "),
    ))
}

/// Saves the runs of file `name` with `tags` into `st`, returning what to print of them: one
/// line per run, its warnings, and a note where a run already stored lacks some of `tags`.
fn save(
    st: &mut dyn latlab_core::store::Store,
    runs: &[Run],
    tags: &BTreeMap<String, String>,
    tool: Tool,
    name: &str,
) -> Result<String> {
    let mut out = String::new();
    for r in runs {
        let value = serde_json::to_value(r).map_err(|e| Error::Env(e.to_string()))?;
        let new = st.save_json(&value, tags)?;
        let n: u64 = r.series.iter().map(|s| s.summary.count).sum();
        out.push_str(&format!(
            "{} run {} ({}, {} series, {n} samples) from {name} {} {}\n",
            if new { "imported" } else { "already present:" },
            r.id,
            tool.name(),
            r.series.len(),
            if new { "into" } else { "in" },
            st.location()
        ));
        for w in &r.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
        if !new {
            out.push_str(&tags_not_added(&*st, &r.id, tags));
        }
    }
    Ok(out)
}

/// The note for a run found already stored that lacks some of `tags` (empty where it has them
/// all): a stored run is never changed, so tags given now are said, not silently dropped.
fn tags_not_added(
    st: &dyn latlab_core::store::Store,
    id: &str,
    tags: &BTreeMap<String, String>,
) -> String {
    let stored = st.get(id).map(|e| e.tags).unwrap_or_default();
    let missing: Vec<String> = tags
        .iter()
        .filter(|(k, v)| stored.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    format!(
        "  note: its stored tags are kept as they are; {} not added (a stored run is never changed)\n",
        missing.join(", ")
    )
}

/// Dates the runs whose file gives no start time of its own (hackbench's and rtla's text, an
/// rt-tests file without `start_time`) by the file's last change, near the run's end, instead
/// of the import's time: a second import of the same file then finds the same runs present.
/// Not for what is no regular file (a pipe's time is the import's).
fn date_by_file(runs: &mut [Run], file: &Path) {
    let Some(t) = std::fs::metadata(file)
        .ok()
        .filter(|m| m.is_file())
        .and_then(|m| m.modified().ok())
    else {
        return;
    };
    for r in runs
        .iter_mut()
        .filter(|r| r.parameters.get("dated_by").is_none())
    {
        date(r, t);
        r.parameters["dated_by"] = "the file's last modification (it holds no start time)".into();
    }
}

/// Gives each run of one file an id whose suffix comes from the file's contents (and the run's
/// place in it) instead of chance: the same file imported twice is the same run(s), found
/// present, not a copy that a comparison would count twice. (The id's time is the tool's start
/// time where the file has one, else the import's: only the former makes a second import of
/// the same file idempotent.)
fn content_ids(runs: &mut [Run], tool: Tool, text: &str) {
    for (i, r) in runs.iter_mut().enumerate() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in tool
            .name()
            .bytes()
            .chain(text.bytes())
            .chain((i as u64).to_le_bytes())
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        let time = r.id.split('-').next().unwrap_or_default().to_string();
        r.id = format!("{time}-{:08x}", (h ^ (h >> 32)) as u32);
    }
}

/// Shorthand for a bad-input error naming the file.
pub(crate) fn bad(file: &str, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{file}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_dates_that_are_not_dates_are_none_never_a_panic() {
        assert!(rt_time("Sun, 22 Nov 2026 15:46:35 +0000").is_some());
        assert!(rt_time("Sun, 22 Nov 2026 15:46:35 +0530").is_some());
        for bad in [
            "Sun, 22 Nov 2026 15:46:35 \u{e9}123",
            "Sun, 22 Nov 2026 15:46:35 +1\u{e9}1",
            "Sun, 22 Nov 2026 15:46:35 +9999",
            "Sat, 31 Feb 2026 15:46:35 +0000",
            "Sun, 22 Nov 2026 25:46:35 +0000",
            "Sun, 22 Nov 2026 -1:46:35 +0000",
            "Mon, 01 Jan 10000 00:00:00 +0000",
            "Sun, 22 Nov 99999999999 15:46:35 +0000",
            "Wed, 31 Dec 1969 23:59:59 +0000",
        ] {
            assert!(rt_time(bad).is_none(), "{bad}");
        }
        // The last date a result can hold, and a duration beyond it: dated, never a panic.
        let t = rt_time("Fri, 31 Dec 9999 23:59:59 +0000").unwrap();
        let mut run = run_of(Tool::Cyclictest, "x", None, None);
        run.duration_s = 1e9;
        date(&mut run, t);
        assert_eq!(run.ended, "9999-12-31T23:59:59.999999Z");
        assert!(rt_time("Sat, 29 Feb 2028 00:00:00 +0000").is_some());
    }

    #[test]
    fn rt_tests_time_stamps_are_read() {
        let t = rt_time("Sun, 22 Nov 2026 15:46:35 +0000").unwrap();
        assert_eq!(
            latlab_core::result::rfc3339(t),
            "2026-11-22T15:46:35.000000Z"
        );
        let t = rt_time("Sun, 22 Nov 2026 16:46:35 +0100").unwrap();
        assert_eq!(
            latlab_core::result::rfc3339(t),
            "2026-11-22T15:46:35.000000Z"
        );
        assert_eq!(
            latlab_core::result::rfc3339(rt_time("Thu, 29 Feb 2024 00:00:00 +0000").unwrap()),
            "2024-02-29T00:00:00.000000Z"
        );
        for bad in [
            "",
            "Sun, 22 Foo 2026 15:46:35 +0000",
            "22 Nov 2026",
            "Sun, 22 Nov 2026 25:00:00 +0000",
        ] {
            assert!(rt_time(bad).is_none(), "{bad}");
        }
    }
}
