//! rtla's `timerlat top` and `osnoise top` text (as `-q` leaves it: the summary at the end, or
//! the last screen of a live run): one row per CPU. timerlat's give per CPU the count, min,
//! avg and max of the IRQ, thread (and user) latency; osnoise's the periods, the noise and the
//! kernel's counts of what caused it. rtla keeps no histogram there, so the series hold the
//! exact count, min, mean and max only (said in a warning).

use super::{bad, run_of, Built, Tool};
use latlab_core::error::Result;
use latlab_core::result::Run;
use latlab_core::stats::histogram::HIGHEST_NS;

/// Strips the terminal escapes rtla colours its header with (`ESC [ ... m`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\u{1b}' {
            // `ESC [ ... m` (colours) or a two-character escape (`ESC c`: a live screen's reset).
            if it.next() == Some('[') {
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// CPUs a screen may have (latlab's largest CPU number is one below).
const MAX_CPUS: usize = 8192;

/// True for a line that begins as rtla's elapsed time does (`D HH:MM:SS`).
fn looks_like_duration(t: &str) -> bool {
    let t = t.strip_prefix("duration:").unwrap_or(t).trim();
    let mut it = t.split_whitespace();
    let (Some(d), Some(hms)) = (it.next(), it.next()) else {
        return false;
    };
    d.bytes().all(|b| b.is_ascii_digit())
        && hms.split(':').count() == 3
        && hms
            .split(':')
            .all(|x| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses `rtla timerlat top` / `rtla osnoise top` output.
pub(crate) fn parse(text: &str, file: &str) -> Result<Run> {
    let lines: Vec<String> = text.lines().map(plain).collect();
    let timerlat = lines.iter().any(|l| l.trim() == "Timer Latency");
    let osnoise = lines.iter().any(|l| l.trim() == "Operating System Noise");
    if !timerlat && !osnoise {
        return Err(bad(
            file,
            "neither 'Timer Latency' nor 'Operating System Noise' heads it: not rtla timerlat/osnoise top output",
        ));
    }
    let mut run = run_of(Tool::RtlaTop, file, None, None);
    run.parameters["tracer"] = if timerlat { "timerlat" } else { "osnoise" }.into();
    let screen = last_screen(&lines, file, &mut run)?;
    if screen.rows.is_empty() {
        return Err(bad(file, "no CPU rows (`CPU #COUNT | ...`)"));
    }
    let groups = if timerlat {
        2 + usize::from(screen.user)
    } else {
        0
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, toks) in screen.rows {
        let row = Row::new(i, toks, screen.scale, file)?;
        if !seen.insert(row.cpu) {
            return Err(row.at(format!("CPU {} appears twice in the last screen", row.cpu)));
        }
        if timerlat {
            row.timerlat(&mut run, groups)?;
        } else {
            row.osnoise(&mut run)?;
        }
    }
    run.warnings.push(format!(
        "rtla {} top keeps no histogram: each series holds its exact count, min, mean and max only",
        run.parameters["tracer"].as_str().unwrap_or("")
    ));
    Ok(run)
}

/// The CPU rows of the last screen (a live run prints one after another), with the unit and
/// whether user-space threads were measured; the elapsed time goes into `run`.
struct Screen {
    rows: Vec<(usize, Vec<String>)>,
    scale: f64,
    user: bool,
}

/// Reads [`Screen`] from the output's lines.
fn last_screen(lines: &[String], file: &str, run: &mut Run) -> Result<Screen> {
    let at = |i: usize, why: String| bad(file, format!("line {}: {why}", i + 1));
    let mut scale = 1000.0;
    // The rows of the last screen: a live run prints one after another.
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    let mut user = false;
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim();
        if t.contains("(ns)") || t.contains("time is in ns") {
            scale = 1.0;
        }
        if t.contains("User Timer Latency") {
            user = true;
        }
        if let Some(d) = duration_of(t) {
            run.duration_s = d;
            rows.clear();
            continue;
        }
        if looks_like_duration(t) {
            return Err(at(
                i,
                format!(
                    "'{}' is not an elapsed time D HH:MM:SS",
                    t.split('|').next().unwrap_or(t).trim()
                ),
            ));
        }
        let toks: Vec<String> = t
            .split_whitespace()
            .filter(|w| *w != "|")
            .map(String::from)
            .collect();
        let is_row = toks.len() > 2
            && toks[0].bytes().all(|b| b.is_ascii_digit())
            && toks[1].starts_with('#');
        if is_row {
            if rows.len() >= MAX_CPUS {
                return Err(at(
                    i,
                    format!("more than {MAX_CPUS} CPU rows in one screen"),
                ));
            }
            rows.push((i, toks));
        }
    }
    Ok(Screen { rows, scale, user })
}

/// One CPU's row of the last screen: its line, its words, its CPU and sample count.
struct Row<'a> {
    i: usize,
    toks: Vec<String>,
    cpu: usize,
    count: u64,
    scale: f64,
    file: &'a str,
}

impl<'a> Row<'a> {
    /// The row of line `i`, its CPU and count read.
    fn new(i: usize, toks: Vec<String>, scale: f64, file: &'a str) -> Result<Row<'a>> {
        let mut row = Row {
            i,
            toks,
            cpu: 0,
            count: 0,
            scale,
            file,
        };
        row.cpu = row.toks[0]
            .parse()
            .ok()
            .filter(|&c| c < MAX_CPUS)
            .ok_or_else(|| {
                row.at(format!(
                    "CPU '{}' is not a CPU number below {MAX_CPUS}",
                    row.toks[0]
                ))
            })?;
        row.count = row.toks[1][1..]
            .parse()
            .map_err(|_| row.at(format!("'{}' is not a sample count", row.toks[1])))?;
        Ok(row)
    }

    /// An error naming the row's line.
    fn at(&self, why: String) -> latlab_core::error::Error {
        bad(self.file, format!("line {}: {why}", self.i + 1))
    }

    /// A time of the row in ns, bounded.
    fn time(&self, v: &str) -> Result<u64> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 && x * self.scale <= HIGHEST_NS as f64 => {
                Ok((x * self.scale).round() as u64)
            }
            _ => Err(self.at(format!("'{v}' is not a time latlab can hold"))),
        }
    }

    /// The count in word `k`.
    fn count_at(&self, k: usize) -> Result<u64> {
        self.toks[k]
            .parse()
            .map_err(|_| self.at(format!("'{}' is not a count", self.toks[k])))
    }

    /// A timerlat row: cur min avg max per group (IRQ, thread, user thread), a series each.
    fn timerlat(&self, run: &mut Run, groups: usize) -> Result<()> {
        let cpu = self.cpu;
        // cur min avg max per group.
        if self.toks.len() != 2 + 4 * groups {
            return Err(self.at(format!(
                "{} values where timerlat top prints {}",
                self.toks.len() - 2,
                4 * groups
            )));
        }
        for (g, name) in ["IRQ", "Thr", "Usr"].iter().take(groups).enumerate() {
            let v = &self.toks[2 + 4 * g..6 + 4 * g];
            let (min, avg, max) = (self.time(&v[1])?, self.time(&v[2])?, self.time(&v[3])?);
            if min > max || avg > max || avg < min {
                return Err(self.at(format!(
                    "{name}-{cpu:03}: min {min} avg {avg} max {max} ns do not order"
                )));
            }
            push(
                run,
                format!("{name}-{cpu:03}"),
                cpu,
                self.count,
                min,
                avg as f64,
                max,
                None,
            );
        }
        Ok(())
    }

    /// An osnoise row: Period Runtime Noise %CPU-Aval MaxNoise MaxSingle HW NMI IRQ Softirq
    /// Thread, one series with the rest kept beside it.
    fn osnoise(&self, run: &mut Run) -> Result<()> {
        let cpu = self.cpu;
        // Period Runtime Noise %CPU-Aval MaxNoise MaxSingle HW NMI IRQ Softirq Thread.
        if self.toks.len() != 12 {
            return Err(self.at(format!(
                "{} values where osnoise top prints 11",
                self.toks.len() - 1
            )));
        }
        let (runtime, noise) = (self.time(&self.toks[2])?, self.time(&self.toks[3])?);
        let (max_noise, max_single) = (self.time(&self.toks[5])?, self.time(&self.toks[6])?);
        let avail = self.toks[4]
            .parse::<f64>()
            .ok()
            .filter(|p| (0.0..=100.0).contains(p))
            .ok_or_else(|| {
                self.at(format!(
                    "'{}' is not a percentage of CPU available",
                    self.toks[4]
                ))
            })?;
        if noise > runtime || max_single > max_noise || max_noise > noise {
            return Err(self.at(format!("CPU {cpu}: noise {noise} ns, runtime {runtime} ns, max noise {max_noise} ns and max single {max_single} ns do not order"),
            ));
        }
        let extra = serde_json::json!({
            "runtime_ns": runtime,
            "max_single_ns": max_single,
            "cpu_available_percent": avail,
            "hw": self.count_at(7)?, "nmi": self.count_at(8)?, "irq": self.count_at(9)?, "softirq": self.count_at(10)?, "thread": self.count_at(11)?,
        });
        let mean = noise as f64 / self.count.max(1) as f64;
        push(
            run,
            format!("CPU-{cpu:03}"),
            cpu,
            self.count,
            0,
            mean,
            max_noise,
            Some(extra),
        );
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
fn push(
    run: &mut Run,
    name: String,
    cpu: usize,
    count: u64,
    min: u64,
    mean: f64,
    max: u64,
    extra: Option<serde_json::Value>,
) {
    let built = Built {
        name,
        cpu: Some(cpu),
        unit: "ns".into(),
        pairs: Vec::new(),
        min: Some(min),
        max: Some(max),
        mean: Some(mean),
        interval_ns: None,
    };
    let mut s = built.series();
    s.summary.count = count;
    s.extra = extra;
    run.series.push(s);
}

/// rtla top's elapsed time, `D HH:MM:SS` at the start of its second header line (timerlat:
/// `  0 00:00:06   |  IRQ Timer ...`, osnoise: `duration:   0 00:00:10 | time is in us`).
fn duration_of(t: &str) -> Option<f64> {
    let t = t.strip_prefix("duration:").unwrap_or(t).trim();
    super::rtla::parse_duration(t.split('|').next()?.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMERLAT: &str = include_str!("../../../../tests/fixtures/rtla/timerlat-top.txt");

    #[test]
    fn timerlat_top_from_the_rt_guest_gives_irq_and_thread_per_cpu() {
        let r = parse(TIMERLAT, "t.txt").unwrap();
        assert_eq!(r.kind, "rtla-top");
        assert_eq!(r.duration_s, 6.0);
        let names: Vec<&str> = r.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["IRQ-000", "Thr-000", "IRQ-001", "Thr-001"]);
        let t0 = &r.series[1];
        assert_eq!(
            (t0.summary.count, t0.summary.min_ns, t0.summary.max_ns),
            (5781, 49_000, 7_885_000)
        );
        assert_eq!(t0.summary.mean_ns, 200_000.0);
        assert_eq!(t0.cpu, Some(0));
        assert!(r.warnings[0].contains("no histogram"));
    }

    #[test]
    fn osnoise_top_gives_the_noise_per_period_and_the_kernels_counts() {
        let text = "                                          Operating System Noise\n\
            duration:   0 00:00:10 | time is in us\n\
            CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\n  \
            0 #9         9000000         236    99.99737         29           8            0            0        18098            0          139\n";
        let r = parse(text, "o.txt").unwrap();
        let s = &r.series[0];
        assert_eq!(
            (s.name.as_str(), s.summary.count, s.summary.max_ns),
            ("CPU-000", 9, 29_000)
        );
        assert_eq!(s.extra.as_ref().unwrap()["irq"], 18098);
        assert_eq!(r.duration_s, 10.0);
    }

    #[test]
    fn a_live_runs_screens_reset_with_esc_c_and_the_last_one_is_kept() {
        let live = format!(
            "\u{1b}c{TIMERLAT}\u{1b}c{}",
            TIMERLAT.replace("#5781", "#6000")
        );
        let r = parse(&live, "live.txt").unwrap();
        assert_eq!(r.series.len(), 4);
        assert_eq!(r.series[0].summary.count, 6000);
    }

    #[test]
    fn impossible_figures_are_refused_naming_the_line() {
        let bad = TIMERLAT.replace("  0 00:00:06", "  99999999999 99:99:99");
        let e = parse(&bad, "t.txt").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("elapsed"), "{e}");
        let osn = |avail: &str, noise: &str| {
            format!("Operating System Noise\nduration:   0 00:00:10 | time is in us\n  0 #9  9000000  {noise}  {avail}  29  8  0  0  1  0  1\n")
        };
        assert!(parse(&osn("199", "236"), "o")
            .unwrap_err()
            .to_string()
            .contains("percentage"));
        assert!(parse(&osn("NaN", "236"), "o").is_err());
        assert!(parse(&osn("99.9", "99999999"), "o")
            .unwrap_err()
            .to_string()
            .contains("order"));
        let many = TIMERLAT.replace("  0 #5781", "  9000 #5781");
        assert!(parse(&many, "t")
            .unwrap_err()
            .to_string()
            .contains("below 8192"));
    }

    #[test]
    fn what_is_not_rtla_top_is_refused_naming_the_line() {
        assert!(parse("hello\n", "x")
            .unwrap_err()
            .to_string()
            .contains("not rtla"));
        let bad = TIMERLAT.replace("#5781", "#57x1");
        let e = parse(&bad, "t.txt").unwrap_err().to_string();
        assert!(e.contains("line 4") && e.contains("#57x1"), "{e}");
        let short = TIMERLAT.replace("      7885", "");
        assert!(parse(&short, "t.txt")
            .unwrap_err()
            .to_string()
            .contains("values"));
        let unordered = TIMERLAT.replace("      7550", "         1");
        assert!(parse(&unordered, "t.txt")
            .unwrap_err()
            .to_string()
            .contains("order"));
    }
}
