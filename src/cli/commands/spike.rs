//! `latlab runs show RUN --spike N`: one spike's explanation, where a monitor's exemplar (or a
//! run's spike list) points. A monitor snapshot stores the spikes attributed while it was open,
//! so a spike read late is found in the snapshots after the one its wake-up fell in.

use latlab_core::config::DisplayUnit;
use latlab_core::error::{Error, Result};
use latlab_core::result::trace::SpikeRecord;
use latlab_core::result::Run;
use latlab_core::store::{Filter, Store};

/// Later snapshots of the same monitor searched for a spike attributed after its own closed.
const LATER: usize = 3;

/// The explanation of spike `seq` (on `cpu`, when given) of run `id`, or of the monitor
/// snapshots that follow it.
pub fn show(
    st: &dyn Store,
    id: &str,
    seq: u64,
    cpu: Option<usize>,
    unit: DisplayUnit,
) -> Result<String> {
    let (run, tags) = load(st, id)?;
    let snapshots = crate::table::facts(&run.kind).snapshots;
    let wanted = |s: &&SpikeRecord| s.seq == seq && cpu.is_none_or(|c| s.cpu == c);
    let found = |r: &Run| -> Vec<SpikeRecord> {
        r.trace
            .as_ref()
            .map(|t| t.spikes.iter().filter(wanted).cloned().collect())
            .unwrap_or_default()
    };
    let mut spikes = found(&run);
    let mut source = id.to_string();
    // Only a wake-up of this run is looked for in the next snapshots (each snapshot numbers
    // its wake-ups per CPU: see `wakeups`): a later snapshot's own spike is not this run's.
    let ours =
        |x: &SpikeRecord| wakeups(&run, x.cpu).is_some_and(|(a, b)| (a..=b).contains(&x.seq));
    if spikes.is_empty() && snapshots {
        for later in later_snapshots(st, &run, tags.get("monitor"))? {
            let (r, _) = load(st, &later)?;
            spikes = found(&r).into_iter().filter(|x| ours(x)).collect();
            if !spikes.is_empty() {
                source = later;
                break;
            }
        }
    }
    if spikes.is_empty() {
        return Err(Error::Usage(
            latlab_core::output::printable(&not_found(&run, id, seq, cpu, unit, snapshots))
                .into_owned(),
        ));
    }
    let mut s = String::new();
    if source != id {
        s.push_str(&format!(
            "spike {seq} of run {id} was explained in a later snapshot of the same monitor, run {source} (its trace events were read after run {id} closed)\n"
        ));
    }
    for x in &spikes {
        s.push_str(&render(x, &source, unit));
    }
    // Task and group names are anyone's to choose: no escape sequence reaches the terminal.
    Ok(latlab_core::output::printable(&s).into_owned())
}

/// The numbers of the first and last wake-up a monitor snapshot holds on `cpu` (None: not a
/// snapshot, or one stored before they were recorded).
fn wakeups(run: &Run, cpu: usize) -> Option<(u64, u64)> {
    let s = run.series.iter().find(|s| s.cpu == Some(cpu))?;
    let w = s.extra.as_ref()?.get("wakeups")?.as_array()?;
    Some((w.first()?.as_u64()?, w.get(1)?.as_u64()?))
}

fn load(st: &dyn Store, id: &str) -> Result<(Run, std::collections::BTreeMap<String, String>)> {
    let e = st.get(id)?;
    let run = serde_json::from_value::<Run>(e.run).map_err(|why| {
        Error::Usage(format!(
            "run {id}: its stored result does not read as a latlab run ({why})"
        ))
    })?;
    Ok((run, e.tags))
}

/// The ids of the next snapshots of the monitor `run` belongs to (its `monitor` tag), in
/// snapshot order.
fn later_snapshots(st: &dyn Store, run: &Run, monitor: Option<&String>) -> Result<Vec<String>> {
    let number = |r: &serde_json::Value| r.get("snapshot").and_then(|v| v.as_u64());
    let (Some(n), Some(monitor)) = (number(&run.parameters), monitor) else {
        return Ok(Vec::new());
    };
    let rows = st.list(&Filter {
        kind: Some("monitor".into()),
        tags: vec![("monitor".into(), monitor.into())],
        host: None,
        started_from: Some(run.started.chars().take(10).collect()),
    })?;
    let mut later: Vec<(u64, String)> = Vec::new();
    for row in rows {
        if row.started < run.started || row.id == run.id {
            continue;
        }
        let Ok(e) = st.get(&row.id) else { continue };
        let Some(k) = e.run.get("parameters").and_then(number) else {
            continue;
        };
        if k > n && k <= n + LATER as u64 {
            later.push((k, row.id));
        }
    }
    later.sort();
    Ok(later.into_iter().map(|(_, id)| id).collect())
}

/// Why nothing was found, with what the run does hold.
fn not_found(
    run: &Run,
    id: &str,
    seq: u64,
    cpu: Option<usize>,
    unit: DisplayUnit,
    snapshots: bool,
) -> String {
    let on = cpu.map_or(String::new(), |c| format!(" on CPU {c}"));
    let Some(t) = &run.trace else {
        let max = run
            .series
            .iter()
            .filter(|s| cpu.is_none_or(|c| s.cpu == Some(c)))
            .map(|s| {
                format!(
                    "{} max {} {unit}",
                    s.name,
                    unit.fmt_ns(s.summary.max_ns as f64)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let figures = if max.is_empty() {
            format!("it has no series{on}")
        } else {
            format!("only their figures: {max}")
        };
        return format!(
            "--spike {seq}: run {id} ({}) was not traced, so it holds no explanation of its spikes ({figures}); `latlab cyclic`, `noise` and `monitor` with --trace record them",
            run.kind
        );
    };
    // A number outside the snapshot's wake-ups on that CPU is another run's.
    if let Some(c) = cpu {
        if let Some((a, b)) = wakeups(run, c).filter(|&(a, b)| !(a..=b).contains(&seq)) {
            return format!(
                "--spike {seq}: run {id} holds wake-ups {a} to {b} on CPU {c}, not wake-up {seq}: it is another snapshot's"
            );
        }
    }
    let seqs: Vec<String> = t
        .spikes
        .iter()
        .filter(|s| cpu.is_none_or(|c| s.cpu == c))
        .take(20)
        .map(|s| format!("{} (CPU {})", s.seq, s.cpu))
        .collect();
    let kept = if snapshots {
        format!(
            " (nor do the snapshots after it); a monitor snapshot keeps its {} worst spikes and each CPU's worst",
            latlab_lab::measure::monitor::snapshot::STORED_SPIKES
        )
    } else {
        String::new()
    };
    let holds = if seqs.is_empty() {
        format!("it holds none{on} ({} in all)", t.spikes.len())
    } else {
        format!("it holds{on}: {}", seqs.join(", "))
    };
    format!(
        "--spike {seq}: run {id} holds no spike {seq}{on}{kept}; wake-ups below --trace-threshold ({} {unit}) are not traced; {holds}",
        unit.fmt_ns(t.threshold_ns as f64),
    )
}

/// One spike: its latency, what held the CPU, the timer's and switch's delays, its stack and
/// what could not be explained.
fn render(x: &SpikeRecord, run: &str, unit: DisplayUnit) -> String {
    let mut s = format!(
        "spike {} on CPU {} ({}) of run {run}: {} {unit} late\n",
        x.seq,
        x.cpu,
        x.series,
        unit.fmt_ns(x.latency_ns as f64)
    );
    let why = &x.why;
    if let Some(b) = &why.blocking {
        s.push_str(&format!("  on the CPU when the wake-up was due: {b}\n"));
    }
    for (what, v) in [
        ("timer fired after", why.timer_delay_ns),
        ("thread switched in after", why.switch_in_ns),
    ] {
        if let Some(ns) = v {
            s.push_str(&format!("  {what} {} {unit}\n", unit.fmt_ns(ns as f64)));
        }
    }
    for c in &why.components {
        let task = c
            .task
            .as_ref()
            .map_or(String::new(), |t| format!(" (pid {} {})", t.pid, t.comm));
        let group = c
            .group
            .as_ref()
            .map_or(String::new(), |g| format!(" [group {g}]"));
        s.push_str(&format!(
            "  {:>5.1} %  {} {unit}  {}: {}{task}{group}\n",
            100.0 * c.share,
            unit.fmt_ns(c.ns as f64),
            c.kind,
            c.name
        ));
    }
    if let Some(n) = why.nmis {
        s.push_str(&format!("  NMIs during it: {n}\n"));
    }
    if let Some(r) = &why.residual {
        s.push_str(&format!("  unexplained: {}\n", r.phrase()));
    }
    if !why.stack.is_empty() {
        s.push_str("  kernel stack at the wake-up:\n");
        for f in &why.stack {
            s.push_str(&format!("      {f}\n"));
        }
    }
    for n in &why.notes {
        s.push_str(&format!("  note: {n}\n"));
    }
    s
}
