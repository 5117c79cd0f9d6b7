//! cyclictest-compatible JSON (rt-tests' `--json` layout) from a latlab run, so parsers and
//! dashboards written for cyclictest keep working: `latlab cyclic --json F --json-format rt-tests`.

use latlab_core::result::Run;
use serde_json::{json, Map, Value};

/// rt-tests' time stamp, "Sun, 22 Nov 2026 15:46:35 +0000", from an RFC 3339 UTC time.
fn rt_time(rfc3339: &str) -> String {
    let Ok(t) = humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z')) else {
        return rfc3339.to_string();
    };
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {d:02} {} {y} {:02}:{:02}:{:02} +0000",
        WD[days.rem_euclid(7) as usize],
        MON[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The run as cyclictest's `--json` writes it: one `thread` entry per series, histograms in
/// whole microseconds (cyclictest truncates), min/max/avg in µs.
pub(crate) fn cyclictest_json(run: &Run) -> Value {
    let env = &run.environment;
    let mut threads = Map::new();
    for (i, s) in run.series.iter().enumerate() {
        let mut hist: Vec<(u64, u64)> = Vec::new();
        for &[v, c] in &s.histogram.buckets {
            let us = v.min(s.summary.max_ns) / 1000;
            match hist.last_mut() {
                Some(last) if last.0 == us => last.1 += c,
                _ => hist.push((us, c)),
            }
        }
        let h: Map<String, Value> = hist
            .into_iter()
            .map(|(us, c)| (us.to_string(), c.into()))
            .collect();
        threads.insert(
            i.to_string(),
            json!({
                "histogram": h,
                "cycles": s.summary.count,
                "min": s.summary.min_ns / 1000,
                "max": s.summary.max_ns / 1000,
                "avg": (s.summary.mean_ns / 1e3 * 100.0).round() / 100.0,
                "cpu": s.cpu.unwrap_or(0),
                "node": 0,
            }),
        );
    }
    json!({
        "file_version": 1,
        "cmdline:": run.command_line.join(" "),
        "rt_test_version:": format!("latlab {}", env.tool_version),
        "start_time": rt_time(&run.started),
        "end_time": rt_time(&run.ended),
        "return_code": i32::from(run.check_failure.is_some()),
        "sysinfo": {
            "sysname": "Linux",
            "nodename": env.hostname,
            "release": env.kernel_release,
            "version": env.kernel_version,
            "machine": std::env::consts::ARCH,
            "realtime": i32::from(env.preemption.contains("RT")),
        },
        "num_threads": run.series.len(),
        "resolution_in_ns": 0,
        "thread": threads,
    })
}

/// Rewrites the latlab JSON result at `path` as cyclictest JSON, atomically.
pub fn rewrite_file(path: &std::path::Path) -> latlab_core::error::Result<()> {
    let name = path.display().to_string();
    let text = latlab_core::io::read_text_limited(
        path,
        latlab_core::result::MAX_JSON_BYTES,
        "latlab result",
    )?;
    let run = latlab_core::result::Run::parse(&text, &name)?;
    let out = serde_json::to_vec_pretty(&cyclictest_json(&run))
        .map_err(|e| latlab_core::error::Error::Env(format!("{name}: {e}")))?;
    latlab_core::output::write_atomic(path, &out)
        .map_err(|e| latlab_core::error::Error::io(name, e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn rt_tests_time_stamps() {
        assert_eq!(
            super::rt_time("2026-11-22T15:46:35.123Z"),
            "Sun, 22 Nov 2026 15:46:35 +0000"
        );
        assert_eq!(
            super::rt_time("2024-02-29T00:00:00Z"),
            "Thu, 29 Feb 2024 00:00:00 +0000"
        );
    }
}
