//! `latlab pi`'s text report: the cycles, the high task's waits, and the verdict.

use super::{PiConfig, PiOutcome};
use latlab_analysis::export::columns;

/// The report.
pub(crate) fn render(o: &PiOutcome, cfg: &PiConfig) -> String {
    let u = cfg.unit;
    let mut s = format!(
        "latlab pi  protocol {}  CPU {}  fifo low {} / medium {} / high {}  critical section \
         {} {u}, medium spin {} {u}  run {}\n",
        super::protocol_name(cfg.protocol),
        cfg.cpu,
        cfg.prio - 2,
        cfg.prio - 1,
        cfg.prio,
        u.fmt_ns(cfg.cs_ns as f64),
        u.fmt_ns(cfg.spin_ns as f64),
        o.run.id
    );
    if let Some(ser) = o.run.series.first() {
        let x = &ser.summary;
        s.push_str(&format!("high task's wait for the mutex, {u}\n"));
        s.push_str(&columns::render(
            &[
                "cycles",
                "inversions",
                "medium runs",
                "min",
                "median",
                "p99",
                "max",
            ],
            &[vec![
                o.cycles.to_string(),
                o.inversions.to_string(),
                o.medium_runs.to_string(),
                u.fmt_ns(x.min_ns as f64),
                x.percentiles.supported(x.count)[0].map_or("-".to_string(), |p| u.fmt_ns(p as f64)),
                x.percentiles.supported(x.count)[2].map_or("-".to_string(), |p| u.fmt_ns(p as f64)),
                u.fmt_ns(x.max_ns as f64),
            ]],
        ));
    }
    if o.inversions > 0 {
        s.push_str(&format!(
            "INVERSION: in {} of {} cycles the medium task ran while the high task waited \
             (the wait includes medium's spin)\n",
            o.inversions, o.cycles
        ));
    } else {
        s.push_str(
            "no inversion: the medium task never ran while the high task waited for the mutex\n",
        );
    }
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}
