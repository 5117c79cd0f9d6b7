//! `latlab ipc`'s text report: one row per method, like `cyclic`'s per-thread table.

use super::{cpus_text, IpcConfig, IpcOutcome};
use latlab_analysis::export::columns;

/// The report.
pub(crate) fn render(o: &IpcOutcome, cfg: &IpcConfig) -> String {
    let u = cfg.unit;
    // What the tasks got (a fallback without privileges), else what was asked.
    let (policy, prio, sender_prio) =
        o.methods
            .first()
            .map_or((cfg.policy.to_string(), cfg.prio, cfg.sender_prio()), |m| {
                (
                    m.applied[super::methods::RECEIVER].policy.to_string(),
                    m.applied[super::methods::RECEIVER].prio,
                    m.applied[super::methods::SENDER].prio,
                )
            });
    let mut s = format!(
        "latlab ipc  {}  {}{} receiver {} / sender {}  interval {}  run {}\n",
        cpus_text(cfg.cpus),
        if cfg.tasks == latlab_core::config::TaskKind::Processes {
            "sender in its own process  "
        } else {
            ""
        },
        policy,
        prio,
        sender_prio,
        u.fmt_ns(cfg.interval_ns as f64) + " " + &u.to_string(),
        o.run.id
    );
    if let Some(n) = cfg.ring {
        // signaltest's ring: another layout, another figure.
        s = format!(
            "latlab ipc  ring of {n} threads ({})  {policy} {prio}  {} round trips every {}  \
             run {}\n",
            match cfg.cpus {
                [Some(a), Some(b)] if a == b => format!("CPU {a}"),
                [Some(a), Some(b)] => format!("alternating CPUs {a} and {b}"),
                _ => "unpinned".into(),
            },
            cfg.burst,
            u.fmt_ns(cfg.interval_ns as f64) + " " + &u.to_string(),
            o.run.id
        );
        s.push_str(&format!(
            "round trip of one signal through the ring (sigwait, tgkill), {u}\n"
        ));
    } else {
        s.push_str(&format!(
            "send to receiver running, {u} (one answer per message, so every message is \
             timed)\n"
        ));
    }
    let rows: Vec<Vec<String>> = o
        .run
        .series
        .iter()
        .zip(&o.methods)
        .map(|(ser, m)| {
            let x = &ser.summary;
            vec![
                ser.name.clone(),
                m.sent.to_string(),
                x.count.to_string(),
                u.fmt_ns(x.min_ns as f64),
                u.fmt_ns(x.mean_ns),
                x.percentiles.supported(x.count)[0].map_or("-".to_string(), |p| u.fmt_ns(p as f64)),
                x.percentiles.supported(x.count)[2].map_or("-".to_string(), |p| u.fmt_ns(p as f64)),
                u.fmt_ns(x.max_ns as f64),
                ser.overruns.to_string(),
            ]
        })
        .collect();
    s.push_str(&columns::render(
        &[
            "method", "sent", "timed", "min", "avg", "median", "p99", "max", "overruns",
        ],
        &rows,
    ));
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}
