//! FreeBSD's ministat as Debian ships it (20150715), reproduced byte for byte: the same input
//! rules, statistics (median = element n/2 of the sorted set; variance from running sums), the
//! Student's t table, the plot and `%g` formatting. `latlab ministat` and
//! `latlab compare --ministat` print this.

mod hexfloat;
mod lines;
pub(crate) mod plot;
pub mod read;

use super::cfmt::{g, g_width};
use super::student;
pub use read::{read_set, read_set_sized, DataSet, ReadError};

/// Options, as ministat's flags.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-c`: index into [`student::LEVELS`] (default 2 = 95 %).
    pub confidence: usize,
    /// `-w`: plot width (74 unless a terminal says otherwise).
    pub width: usize,
    /// `-A`: no plot.
    pub no_plot: bool,
    /// `-n`: statistics only, no plot and no test.
    pub stats_only: bool,
    /// `-s`: one bar line per set.
    pub separate: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            confidence: 2,
            width: 74,
            no_plot: false,
            stats_only: false,
            separate: false,
        }
    }
}

/// Mean from the running sum.
pub(crate) fn avg(ds: &DataSet) -> f64 {
    ds.sy / ds.points.len() as f64
}

/// ministat's median: the element at index n/2 of the sorted set (no averaging).
pub(crate) fn median(ds: &DataSet) -> f64 {
    ds.median
}

/// Variance from the running sums, as ministat computes it.
pub(crate) fn var(ds: &DataSet) -> f64 {
    let n = ds.points.len() as f64;
    (ds.syy - ds.sy * ds.sy / n) / (n - 1.0)
}

/// Standard deviation (NaN when rounding makes the variance negative, as in ministat).
pub(crate) fn stddev(ds: &DataSet) -> f64 {
    var(ds).sqrt()
}

fn vitals(ds: &DataSet, sym: u8) -> String {
    format!(
        "{} {:>3} {} {} {} {} {}\n",
        sym as char,
        ds.points.len(),
        g_width(ds.min, 13, 8),
        g_width(ds.max, 13, 8),
        g_width(median(ds), 13, 8),
        g_width(avg(ds), 13, 8),
        g_width(stddev(ds), 13, 8)
    )
}

/// The pooled-variance Student's t comparison of `ds` against the reference `rs`.
pub(crate) struct Relative {
    /// Difference of means (ds − rs).
    pub(crate) diff: f64,
    /// Half-width of the confidence interval.
    pub(crate) err: f64,
    /// Pooled standard deviation.
    pub(crate) pooled: f64,
    /// Mean of the reference.
    pub(crate) ref_avg: f64,
}

/// Computes ministat's `Relative` figures.
pub(crate) fn relative(ds: &DataSet, rs: &DataSet, ci: usize) -> Relative {
    let (dn, rn) = (ds.points.len() as f64, rs.points.len() as f64);
    let t = student::t_value(ds.points.len() + rs.points.len() - 2, ci);
    let mut spool = (dn - 1.0) * var(ds) + (rn - 1.0) * var(rs);
    spool /= dn + rn - 2.0;
    spool = spool.sqrt();
    let s = spool * (1.0 / dn + 1.0 / rn).sqrt();
    Relative {
        diff: avg(ds) - avg(rs),
        err: t * s,
        pooled: spool,
        ref_avg: avg(rs),
    }
}

fn relative_text(ds: &DataSet, rs: &DataSet, ci: usize) -> String {
    let r = relative(ds, rs, ci);
    let level = student::LEVELS[ci];
    if r.diff.abs() > r.err {
        format!(
            "Difference at {level:.1}% confidence\n\t{} +/- {}\n\t{}% +/- {}%\n\t(Student's t, pooled s = {})\n",
            g(r.diff, 6),
            g(r.err, 6),
            g(r.diff * 100.0 / r.ref_avg, 6),
            g(r.err * 100.0 / r.ref_avg, 6),
            g(r.pooled, 6)
        )
    } else {
        format!("No difference proven at {level:.1}% confidence\n")
    }
}

/// ministat's whole standard output for these sets (at most 7), as a string.
pub fn report(sets: &[DataSet], o: &Options) -> String {
    let mut v = Vec::new();
    write_report(sets, o, &mut v).expect("writing to a Vec cannot fail");
    String::from_utf8(v).expect("ministat output is UTF-8 when its names are")
}

/// Writes ministat's whole standard output for these sets (at most 7).
pub fn write_report(
    sets: &[DataSet],
    o: &Options,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    for (i, d) in sets.iter().enumerate() {
        writeln!(out, "{} {}", plot::SYMBOL[i + 1] as char, d.name)?;
    }
    if !o.stats_only && !o.no_plot {
        plot::Plot::new(o.width, o.separate, sets).render(out)?;
    }
    let mut s = String::new();
    s.push_str("    N           Min           Max        Median           Avg        Stddev\n");
    s.push_str(&vitals(&sets[0], plot::SYMBOL[1]));
    for (i, d) in sets.iter().enumerate().skip(1) {
        s.push_str(&vitals(d, plot::SYMBOL[i + 1]));
        if !o.stats_only {
            s.push_str(&relative_text(d, &sets[0], o.confidence));
        }
    }
    out.write_all(s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, v: &[f64]) -> DataSet {
        let text: String = v.iter().map(|x| format!("{x}\n")).collect();
        read_set(text.as_bytes(), name, 1, b" \t").unwrap()
    }

    #[test]
    fn small_example_matches_ministat() {
        // Output of Debian's ministat 20150715 for these two files.
        let a = set("a.txt", &[1.0, 2.0, 3.0, 4.0]);
        let b = set("b.txt", &[2.0, 3.0, 4.0, 5.0, 9.0]);
        let want = "\
x a.txt
+ b.txt
+--------------------------------------------------------------------------+
|x        *        *        *         +                                   +|
|  |_____|_____A___M______|_M_____A________________________|               |
+--------------------------------------------------------------------------+
    N           Min           Max        Median           Avg        Stddev
x   4             1             4             3           2.5     1.2909944
+   5             2             9             4           4.6     2.7018512
No difference proven at 95.0% confidence
";
        assert_eq!(report(&[a, b], &Options::default()), want);
    }
}
