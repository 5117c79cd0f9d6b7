//! Snapshots: the samples of one interval, drained from the measuring threads' rings by the
//! control thread, become one stored run (kind `monitor`, one series per CPU); and the text
//! report at the end of a monitor.

use super::tally::Tally;
use super::{MonitorConfig, MonitorOutcome};
use crate::config::Policy;
use crate::result::{Run, Series};
use crate::stats::Recorder;
use rtrb::Consumer;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::SystemTime;

/// What every snapshot of a monitor shares.
pub struct Context<'a> {
    /// The monitor.
    pub cfg: &'a MonitorConfig,
    /// Policy in force.
    pub policy: Policy,
    /// Priority in force.
    pub prio: i32,
}

/// Counters at the start of an interval, to take differences from.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    overruns: u64,
    lost: u64,
    exceeded: u64,
}

impl Counts {
    fn of(t: &Tally) -> Counts {
        Counts {
            overruns: t.overruns.load(Relaxed),
            lost: t.lost.load(Relaxed),
            exceeded: t.exceeded.load(Relaxed),
        }
    }
}

/// The interval being collected.
pub struct Interval {
    started: SystemTime,
    recs: Vec<Recorder>,
    base: Vec<Counts>,
}

impl Interval {
    /// A new interval starting now.
    pub fn new(tallies: &[Arc<Tally>]) -> Interval {
        Interval {
            started: SystemTime::now(),
            recs: tallies.iter().map(|_| Recorder::new()).collect(),
            base: tallies.iter().map(|t| Counts::of(t)).collect(),
        }
    }

    /// Records everything waiting in the rings.
    pub fn drain(&mut self, rings: &mut [Consumer<u64>]) {
        for (ring, rec) in rings.iter_mut().zip(&mut self.recs) {
            let n = ring.slots();
            if n == 0 {
                continue;
            }
            if let Ok(chunk) = ring.read_chunk(n) {
                for v in chunk {
                    rec.record(v);
                }
            }
        }
    }

    /// Ends the interval as run number `seq` and starts the next one.
    pub fn take(
        &mut self,
        ctx: &Context,
        driver: &crate::driver::Ctx<'_>,
        seq: u64,
        tallies: &[Arc<Tally>],
        warnings: Vec<String>,
    ) -> Run {
        let cfg = ctx.cfg;
        let mut series = Vec::with_capacity(tallies.len());
        for (i, t) in tallies.iter().enumerate() {
            let now = Counts::of(t);
            let base = self.base[i];
            let mut s = Series::from_recorder(format!("cpu{}", cfg.cpus[i]), &self.recs[i]);
            s.cpu = Some(cfg.cpus[i]);
            s.policy = ctx.policy.to_string();
            s.prio = ctx.prio;
            s.interval_ns = Some(cfg.interval_ns);
            s.overruns = now.overruns - base.overruns;
            s.lost_samples = now.lost - base.lost;
            s.extra = Some(serde_json::json!({
                "threshold_exceeded": now.exceeded - base.exceeded,
            }));
            series.push(s);
            self.base[i] = now;
            self.recs[i].reset();
        }
        let mut parameters = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
        if let Some(o) = parameters.as_object_mut() {
            o.insert("snapshot".into(), seq.into());
        }
        let run = Run {
            series,
            ..driver.run_with(self.started, parameters, warnings)
        };
        self.started = SystemTime::now();
        run
    }
}

/// The text report: the whole session per CPU, and where the snapshots went.
pub fn render(cfg: &MonitorConfig, o: &MonitorOutcome) -> String {
    let rows: Vec<Vec<String>> = o
        .session
        .iter()
        .map(|(cpu, rec, overruns, lost)| {
            let s = rec.summary();
            let us = |ns: f64| format!("{:.1}", ns / 1e3);
            vec![
                cpu.to_string(),
                s.count.to_string(),
                us(if s.count == 0 { 0.0 } else { s.min_ns as f64 }),
                us(s.mean_ns),
                us(s.max_ns as f64),
                overruns.to_string(),
                lost.to_string(),
            ]
        })
        .collect();
    let mut out = format!(
        "monitor {} (http://{}/metrics): latencies in us over the whole session\n",
        cfg.monitor_id, o.listen
    );
    out.push_str(&crate::export::table::render(
        &["cpu", "count", "min", "avg", "max", "overruns", "lost"],
        &rows,
    ));
    out.push_str(&format!(
        "{} snapshots stored during the run, plus the last interval's ({})\n",
        o.snapshots, o.run.id
    ));
    out
}
