//! rt-tests' sender/receiver tests (pmqtest, ptsematest, svsematest, sigwaittest) in their
//! `--json=FILE` shape: per pair, the sender's samples and interval and the receiver's
//! min/avg/max in µs. They keep no histogram, so a series holds the exact figures and the
//! count only (said in a warning); its name is latlab ipc's method, so `compare` lines them up.

use super::check::Source;
use super::{bad, run_of, Built, Tool};
use latlab_core::error::Result;
use latlab_core::result::{Run, Series};
use serde_json::Value;

/// latlab ipc's method for the tool.
fn method(tool: Tool) -> &'static str {
    match tool {
        Tool::Pmqtest => "pmq",
        Tool::Ptsematest => "posix-sem",
        Tool::Svsematest => "sysv-sem",
        _ => "sigwait",
    }
}

/// Parses one file.
pub(crate) fn parse(tool: Tool, text: &str, file: &str) -> Result<Run> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        bad(
            file,
            format!("not {} JSON: {e} (line {})", tool.name(), e.line()),
        )
    })?;
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
    let mut ids: Vec<(&String, &Value)> = threads.iter().collect();
    ids.sort_by_key(|(k, _)| k.parse::<u64>().unwrap_or(u64::MAX));
    for (i, (id, t)) in ids.into_iter().enumerate() {
        let series = pair(tool, &src, i, id, t, &mut run.warnings)?;
        run.series.push(series);
    }
    if run.series.is_empty() {
        return Err(bad(file, "no threads in \"thread\""));
    }
    run.warnings.push(format!(
        "{} keeps no histogram: each series has its exact min/avg/max and count only \
         (gate max<TIME and compare --metric max|mean|min use them)",
        tool.name()
    ));
    if let Some(t) = v["start_time"].as_str().and_then(super::rt_time) {
        if let Some(end) = v["end_time"].as_str().and_then(super::rt_time) {
            run.duration_s = end.duration_since(t).map_or(0.0, |d| d.as_secs_f64());
        }
        super::set_start(&mut run, t);
    }
    Ok(run)
}

/// The `i`-th pair's series (thread `id` of the file): the receiver's min/avg/max, the
/// sender's samples as its count and its interval, both sides' CPU and priority.
fn pair(
    tool: Tool,
    src: &Source,
    i: usize,
    id: &str,
    t: &Value,
    warnings: &mut Vec<String>,
) -> Result<Series> {
    let file = src.file;
    let (s, r) = (&t["sender"], &t["receiver"]);
    if !s.is_object() || !r.is_object() {
        return Err(bad(
            file,
            format!(
                "thread {id}: no sender/receiver pair: not {} output",
                tool.name()
            ),
        ));
    }
    let at = |side: &'static str, f: &'static str| ["thread", id, side, f];
    let samples = src.required(
        src.count(&s["samples"], &at("sender", "samples"))?,
        &at("sender", "samples"),
    )?;
    let min = src.latency(&r["min"], &at("receiver", "min"), 1000.0)?;
    let max = src.latency(&r["max"], &at("receiver", "max"), 1000.0)?;
    let mean = src.time(&r["avg"], &at("receiver", "avg"), 1000.0)?;
    if samples > 0 {
        src.required(min, &at("receiver", "min"))?;
        src.required(max, &at("receiver", "max"))?;
        src.required(mean, &at("receiver", "avg"))?;
    }
    warnings.extend(src.ordered(&["thread", id, "receiver"], min, mean, max)?);
    let interval_ns = match s["interval"].as_u64() {
        None => None,
        Some(i) => Some(i.checked_mul(1000).ok_or_else(|| {
            src.at(
                &at("sender", "interval"),
                format!("{i} us does not fit in 64 bits of ns"),
            )
        })?),
    };
    let built = Built {
        name: if i == 0 {
            method(tool).to_string()
        } else {
            format!("{}-{i}", method(tool))
        },
        cpu: super::check::thread_cpu(src, &at("receiver", "cpu"), &r["cpu"])?,
        unit: "ns".into(),
        pairs: Vec::new(),
        min,
        max,
        mean,
        interval_ns,
    };
    let mut series = built.series();
    series.summary.count = samples;
    series.prio = r["priority"].as_i64().unwrap_or(0) as i32;
    series.extra = Some(serde_json::json!({
        "sender_cpu": s["cpu"],
        "sender_prio": s["priority"],
        "timeouts": r["timeoutcount"],
    }));
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_becomes_a_series_named_by_method() {
        let text = r#"{"sysinfo":{"release":"6.1","nodename":"h"},"thread":{
            "0":{"sender":{"cpu":0,"priority":79,"samples":50,"interval":1000},
                 "receiver":{"cpu":1,"priority":80,"timeoutcount":0,"min":3,"avg":4.5,"max":12}}}}"#;
        let r = parse(Tool::Pmqtest, text, "f.json").unwrap();
        let s = &r.series[0];
        assert_eq!(s.name, "pmq");
        assert_eq!(s.summary.count, 50);
        assert_eq!((s.summary.min_ns, s.summary.max_ns), (3000, 12000));
        assert_eq!(s.summary.mean_ns, 4500.0);
        assert_eq!(s.interval_ns, Some(1_000_000));
        let e = parse(Tool::Pmqtest, r#"{"thread":{"0":{"cycles":1}}}"#, "g.json").unwrap_err();
        assert!(e.to_string().contains("g.json") && e.to_string().contains("thread 0"));
    }
}
