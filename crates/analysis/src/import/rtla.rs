//! rtla's `timerlat hist` and `osnoise hist` text: a histogram per column (IRQ/Thr/Usr per CPU,
//! or CPU), then `over:`, `count:`, `min:`, `avg:`, `max:` rows. One run, one series per column.

use super::{bad, keep_beyond, mark_beyond, run_of, Built, Tool};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::histogram::HIGHEST_NS;

/// One column of the table while it is read.
struct Column {
    name: String,
    pairs: Vec<(u64, u64)>,
    over: u64,
    /// Samples in the histogram plus `over`, summed with overflow checked.
    total: u64,
    count: Option<u64>,
    min: Option<f64>,
    avg: Option<f64>,
    max: Option<f64>,
}

/// Parses `rtla timerlat hist` / `rtla osnoise hist` output (with or without `--with-zeros`,
/// `-b`, `--nano`, `--no-header`, `--no-summary`; the index column is required).
pub(crate) fn parse(text: &str, file: &str) -> Result<Run> {
    let Table {
        scale,
        tracer,
        duration,
        cols,
    } = read(text, file)?;
    let tool = Tool::RtlaHist;
    let mut run = run_of(tool, file, None, None);
    run.duration_s = duration.unwrap_or(0.0);
    run.parameters["tracer"] = tracer.clone().unwrap_or_else(|| "unknown".into()).into();
    run.parameters["time_unit"] = if scale == 1.0 { "ns" } else { "us" }.into();
    for c in cols {
        add_column(&mut run, c, scale, file)?;
    }
    if run.series.is_empty() {
        return Err(bad(file, "no column of the table has samples"));
    }
    Ok(run)
}

/// The table as read: the header's facts and the columns.
struct Table {
    scale: f64,
    tracer: Option<String>,
    duration: Option<f64>,
    cols: Vec<Column>,
}

/// One line of the table, for reading its values and for the messages that name it.
struct Line<'a> {
    file: &'a str,
    /// Its place in the text, from 0.
    i: usize,
    /// Its first word: a row's name (`over:`) or its index.
    first: &'a str,
}

impl Line<'_> {
    /// Bad input at this line.
    fn bad(&self, why: impl std::fmt::Display) -> Error {
        bad(self.file, format!("line {}: {why}", self.i + 1))
    }

    /// `v`, a value of this row, as a count.
    fn count(&self, v: &str) -> Result<u64> {
        v.parse::<u64>()
            .map_err(|_| self.bad(format!("'{v}' in row '{}' is not a count", self.first)))
    }

    /// `v`, a value of this row, as a time in ns (`scale` ns a unit); `None` for rtla's mark
    /// of a column without samples.
    fn amount(&self, v: &str, scale: f64) -> Result<Option<f64>> {
        if v == "-" {
            return Ok(None);
        }
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 && x * scale <= HIGHEST_NS as f64 => {
                Ok(Some(x * scale))
            }
            Ok(x) if x.is_finite() && x >= 0.0 => Err(self.bad(beyond(self.first, v))),
            _ => Err(self.bad(format!("'{v}' in row '{}' is not a time", self.first))),
        }
    }
}

/// Reads the header, the column names and every row of the table (the all-CPU summary and
/// anything after the table are left).
fn read(text: &str, file: &str) -> Result<Table> {
    let mut table = Table {
        scale: 1000.0, // µs unless the header says ns
        tracer: None,
        duration: None,
        cols: Vec::new(),
    };
    let mut seen_summary = false;
    for (i, text_line) in text.lines().enumerate() {
        let t = text_line.trim();
        let mut tok = t.split_whitespace();
        let Some(first) = tok.next() else { continue };
        let line = Line { file, i, first };
        if table.cols.is_empty() {
            table.before_columns(&line, t, tok)?;
            continue;
        }
        if first == "ALL:" {
            break; // the all-CPU summary that follows: aggregates of the columns already read
        }
        let values: Vec<&str> = tok.collect();
        if values.len() != table.cols.len() {
            if seen_summary {
                break; // past the table (auto-analysis text, tool messages)
            }
            return Err(line.bad(format!(
                "{} values for {} columns ({})",
                values.len(),
                table.cols.len(),
                table
                    .cols
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            )));
        }
        match first {
            "over:" | "count:" | "min:" | "avg:" | "max:" => {
                seen_summary = true;
                table.summary_row(&line, &values)?;
            }
            _ if seen_summary => break,
            _ => table.histogram_row(&line, &values)?,
        }
    }
    if table.cols.is_empty() {
        return Err(bad(
            file,
            "no 'Index' header: not rtla timerlat/osnoise hist output",
        ));
    }
    Ok(table)
}

impl Table {
    /// A line before the column header: rtla's `#` header (or anything pasted above it), or
    /// the `Index` header that names the columns. `names` are the words after its first.
    fn before_columns<'a>(
        &mut self,
        line: &Line,
        t: &str,
        names: impl Iterator<Item = &'a str>,
    ) -> Result<()> {
        if let Some(h) = t.strip_prefix('#') {
            let h = h.trim();
            if h.starts_with("Time unit is nanoseconds") {
                self.scale = 1.0;
            } else if let Some(r) = h.strip_prefix("RTLA ") {
                self.tracer = r.split_whitespace().next().map(String::from);
            } else if let Some(d) = h.strip_prefix("Duration:") {
                self.duration = Some(parse_duration(d).ok_or_else(|| {
                    line.bad(format!("Duration '{}' is not D HH:MM:SS", d.trim()))
                })?);
            }
        } else if line.first == "Index" {
            self.cols = columns(line, names)?;
        } else if line.first.ends_with(':') || line.first.parse::<u64>().is_ok() {
            return Err(line.bad(
                "a histogram row before the 'Index' header: output of --no-index (or of \
                 another tool) cannot be imported; run rtla without --no-index",
            ));
        }
        Ok(())
    }

    /// A summary row (`over:`, `count:`, `min:`, `avg:`, `max:`): one figure per column.
    fn summary_row(&mut self, line: &Line, values: &[&str]) -> Result<()> {
        for (c, v) in self.cols.iter_mut().zip(values) {
            match line.first {
                "over:" => {
                    c.over = line.count(v)?;
                    c.total = c
                        .total
                        .checked_add(c.over)
                        .ok_or_else(|| line.bad(format!("{}: sample counts overflow", c.name)))?;
                }
                "count:" => c.count = Some(line.count(v)?),
                "min:" => c.min = line.amount(v, self.scale)?,
                "avg:" => c.avg = line.amount(v, self.scale)?,
                _ => c.max = line.amount(v, self.scale)?,
            }
        }
        Ok(())
    }

    /// A histogram row: its index, then each column's count in that bucket.
    fn histogram_row(&mut self, line: &Line, values: &[&str]) -> Result<()> {
        let idx: u64 = line
            .first
            .parse()
            .map_err(|_| line.bad(format!("'{}' is not a histogram index", line.first)))?;
        if idx as f64 * self.scale > HIGHEST_NS as f64 {
            return Err(line.bad(beyond("Index", &idx.to_string())));
        }
        let ns = (idx as f64 * self.scale) as u64;
        for (c, v) in self.cols.iter_mut().zip(values) {
            let n = line.count(v)?;
            if n > 0 {
                c.total = c
                    .total
                    .checked_add(n)
                    .ok_or_else(|| line.bad(format!("{}: sample counts overflow", c.name)))?;
                c.pairs.push((ns, n));
            }
        }
        Ok(())
    }
}

/// The columns the `Index` header names, each once.
fn columns<'a>(line: &Line, names: impl Iterator<Item = &'a str>) -> Result<Vec<Column>> {
    let cols: Vec<Column> = names
        .map(|n| Column {
            name: n.to_string(),
            pairs: Vec::new(),
            over: 0,
            total: 0,
            count: None,
            min: None,
            avg: None,
            max: None,
        })
        .collect();
    if cols.is_empty() {
        return Err(line.bad("the Index header names no columns"));
    }
    // Two columns of one name would be two series that cannot be told apart.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(c) = cols.iter().find(|c| !seen.insert(c.name.as_str())) {
        return Err(line.bad(format!("the Index header names column '{}' twice", c.name)));
    }
    Ok(cols)
}

/// One column checked against its own summary (a contradiction is not rtla output) and added
/// to `run` as a series; a column without samples is a warning.
fn add_column(run: &mut Run, c: Column, scale: f64, file: &str) -> Result<()> {
    let total = c.count.unwrap_or(c.total);
    if total == 0 {
        run.warnings
            .push(format!("{}: no samples; left out", c.name));
        return Ok(());
    }
    let mut pairs = c.pairs;
    // Only buckets that hold samples bound the min and max (rows of 0 may pad a histogram).
    let held = || pairs.iter().filter(|p| p.1 > 0).map(|p| p.0);
    let top = held().max().unwrap_or(0);
    let bottom = held().min().unwrap_or(0);
    let max = c.max.map(|m| m as u64);
    // rtla's min/max are exact and the rows' indexes are bucket floors: a summary that
    // contradicts the histogram is not rtla output.
    let contradiction = match (c.min, c.max) {
        (Some(lo), Some(hi)) if lo > hi => Some(format!("min {lo} ns is above max {hi} ns")),
        (_, Some(hi)) if (top as f64) > hi => Some(format!(
            "max {hi} ns is below the bucket at {top} ns that holds samples"
        )),
        (Some(lo), _) if !pairs.is_empty() && lo >= bottom as f64 + bucket_ns(&pairs, scale) => {
            Some(format!(
                "min {lo} ns is above the lowest bucket holding samples ({bottom} ns)"
            ))
        }
        _ => None,
    };
    let contradiction = contradiction.or_else(|| match (c.min, c.avg, c.max) {
        (Some(lo), Some(a), _) if a + 10.0 < lo => Some(format!("avg {a} ns is below min {lo} ns")),
        (_, Some(a), Some(hi)) if a > hi + 10.0 => Some(format!("avg {a} ns is above max {hi} ns")),
        _ => None,
    });
    if let Some(why) = contradiction {
        return Err(bad(file, format!("{}: {why}", c.name)));
    }
    let mut beyond = None;
    if c.over > 0 {
        // rtla counts samples past its last bucket only as `over`: keep them at the max.
        beyond = Some((c.over, top));
        let w = keep_beyond(&mut pairs, &c.name, c.over, top, max.unwrap_or(top));
        run.warnings.push(w);
    }
    if c.total != total {
        run.warnings.push(format!(
            "{}: the histogram holds {} samples but rtla counted {total}",
            c.name, c.total
        ));
    }
    let built = Built {
        name: c.name.clone(),
        cpu: c.name.rsplit('-').next().and_then(|n| n.parse().ok()),
        unit: "ns".into(),
        pairs,
        min: c.min.map(|m| m as u64),
        max,
        mean: c.avg,
        interval_ns: None,
    };
    let mut s = built.series();
    mark_beyond(&mut s, beyond);
    run.series.push(s);
    Ok(())
}

/// rtla's `Duration:` value, `D HH:MM:SS`, in seconds (at most about 30 years).
pub(super) fn parse_duration(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let days: u64 = it.next()?.parse().ok().filter(|&d| d < 10_000)?;
    let mut hms = it.next()?.split(':').map(|x| x.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if h > 23 || m > 59 || sec > 59 || it.next().is_some() {
        return None;
    }
    Some((((days * 24 + h) * 60 + m) * 60 + sec) as f64)
}

/// The width of the table's buckets in ns: the smallest step between rows that hold samples
/// (one unit when there is no step to see; `-b N` makes it N units).
fn bucket_ns(pairs: &[(u64, u64)], scale: f64) -> f64 {
    let mut at: Vec<u64> = pairs.iter().map(|p| p.0).collect();
    at.sort_unstable();
    at.windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&d| d > 0)
        .min()
        .map_or(scale, |d| d as f64)
}

/// The message for a time past what latlab's histograms hold.
fn beyond(row: &str, v: &str) -> String {
    format!(
        "'{v}' in row '{row}' is beyond the {} s latlab's histograms hold",
        HIGHEST_NS / 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMERLAT: &str = include_str!("../../../../tests/fixtures/rtla/timerlat-hist.txt");
    const OSNOISE: &str = include_str!("../../../../tests/fixtures/rtla/osnoise-hist.txt");

    #[test]
    fn timerlat_documentation_example() {
        let r = parse(TIMERLAT, "t.txt").unwrap();
        assert_eq!(r.kind, "rtla-hist");
        assert_eq!(r.duration_s, 600.0);
        assert_eq!(r.parameters["tracer"], "timerlat");
        let names: Vec<&str> = r.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names[..4], ["IRQ-000", "Thr-000", "IRQ-001", "Thr-001"]);
        // A column named twice cannot be two series.
        let dup = TIMERLAT.replace("Thr-000   IRQ-001", "Thr-000   IRQ-000");
        let e = parse(&dup, "t.txt").unwrap_err().to_string();
        assert!(e.contains("names column 'IRQ-000' twice"), "{e}");
        assert_eq!(r.series.len(), 10);
        let thr1 = &r.series[3];
        assert_eq!(thr1.cpu, Some(1));
        assert_eq!(thr1.summary.count, 600_002);
        assert_eq!((thr1.summary.min_ns, thr1.summary.max_ns), (1_000, 58_000));
        assert_eq!(thr1.summary.mean_ns, 5_000.0);
        // The 58 us sample is in the histogram, so the p99.99 stays below the max and the top
        // bucket holds exactly one sample.
        assert!(thr1.summary.percentiles.p99_99 <= 58_000);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn osnoise_documentation_example_with_wide_buckets() {
        let r = parse(OSNOISE, "o.txt").unwrap();
        assert_eq!(r.parameters["tracer"], "osnoise");
        assert_eq!(r.duration_s, 60.0);
        assert_eq!(r.series.len(), 12);
        let c11 = &r.series[11];
        assert_eq!((c11.name.as_str(), c11.cpu), ("CPU-011", Some(11)));
        assert_eq!(c11.summary.count, 54_880);
        assert_eq!(c11.summary.max_ns, 50_000);
    }

    #[test]
    fn over_nanoseconds_and_bad_tables() {
        let text = "# RTLA timerlat histogram\n# Time unit is nanoseconds (ns)\n\
                    Index IRQ-002 Thr-002\n0 5 0\n1500 0 4\nover: 0 2\ncount: 5 6\n\
                    min: 0 1500\navg: 0 9000\nmax: 0 40000\nALL: IRQ Thr\ncount: 5 6\n";
        let r = parse(text, "n.txt").unwrap();
        let thr = &r.series[1];
        // Rows are bucket floors (here 10 us wide): percentiles never fall below rtla's exact
        // min, which lies inside the lowest bucket.
        let wide = parse("Index CPU-000\n0 3\n10 1\nmin: 4\nmax: 15\n", "b.txt").unwrap();
        let s = &wide.series[0].summary;
        assert_eq!(
            (s.min_ns, s.percentiles.p50, s.max_ns),
            (4_000, 4_000, 15_000)
        );
        assert_eq!(thr.summary.count, 6);
        assert_eq!(thr.summary.max_ns, 40_000);
        assert!(
            r.warnings[0].contains("2 samples beyond"),
            "{:?}",
            r.warnings
        );
        assert_eq!(thr.extra.as_ref().unwrap()["beyond_histogram"]["count"], 2);
        for (text, want) in [
            ("nothing here\n", "no 'Index' header"),
            ("0 1 2\n", "--no-index"),
            ("Index CPU-000\n0 1 2\n", "line 2: 2 values for 1 columns"),
            ("Index CPU-000\n0 x\n", "'x' in row '0' is not a count"),
            ("Index CPU-000\nz 1\n", "'z' is not a histogram index"),
            (
                "Index CPU-000\n0 1\nmax: -5\n",
                "'-5' in row 'max:' is not a time",
            ),
            (
                "Index CPU-000\n0 0\ncount: 0\n",
                "no column of the table has samples",
            ),
            (
                "Index CPU-000\n0 18446744073709551615\n1 18446744073709551615\n",
                "line 3: CPU-000: sample counts overflow",
            ),
            (
                "Index CPU-000\n0 1\nover: 18446744073709551615\n",
                "line 3: CPU-000: sample counts overflow",
            ),
            (
                "Index CPU-000\n18446744073709551615 1\n",
                "beyond the 3600 s",
            ),
            ("Index CPU-000\n0 1\nmax: 1e300\n", "beyond the 3600 s"),
            (
                "Index CPU-000\n0 1\n7 1\nmax: 2\n",
                "max 2000 ns is below the bucket at 7000 ns",
            ),
            (
                "Index CPU-000\n0 1\n7 1\nmin: 50\nmax: 60\n",
                "min 50000 ns is above",
            ),
            (
                "Index CPU-000\n0 1\nmin: 5\nmax: 1\n",
                "min 5000 ns is above max 1000 ns",
            ),
            (
                "# Duration: 18446744073709551615 00:00:00\nIndex X\n",
                "line 1: Duration",
            ),
            ("# Duration: 0 00:99:00\nIndex X\n", "line 1: Duration"),
        ] {
            let e = parse(text, "f").unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
