//! `latlab load KIND[:opts]` as a measurement (the loads themselves are `crate::loadgen`): the load runs in the foreground through the
//! driver (signals, outputs, store), and its achieved rate becomes a run of kind `load`.
//! hackbench without a duration does one run and prints `Time:` as hackbench does; its run
//! also has a `time` series (ns) like an imported hackbench run, so `compare` and `gate` read
//! both alike.

pub(crate) mod args;

use crate::driver::{Ctx, Footprint, Measurement, Text};
use latlab_core::error::{Error, Result};
use crate::loadgen::{kinds, LoadKind, LoadSet, LoadSpec};
use latlab_core::result::{LoadReport, Run, Series};
use latlab_core::stats::Recorder;
use std::time::{Duration, Instant};

/// A load run in the foreground.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Foreground {
    /// What to run.
    #[serde(skip)]
    pub(crate) spec: LoadSpec,
    /// The spec as given (recorded in the run's parameters).
    pub(crate) load: String,
    /// How long (ns; None: hackbench does one run, others run until Ctrl-C).
    pub(crate) duration_ns: Option<u64>,
}

/// The finished load: its run and the lines it prints.
pub(crate) struct ForegroundOutcome {
    /// The result (its `loads` hold the achieved rate).
    pub(crate) run: Run,
    text: String,
}

impl Measurement for Foreground {
    type Outcome = ForegroundOutcome;
    const KIND: &'static str = "load";

    fn planned(&self) -> Option<Duration> {
        self.duration_ns.map(Duration::from_nanos)
    }

    fn footprint(&self) -> Footprint {
        Footprint::default()
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<ForegroundOutcome> {
        let params = serde_json::to_value(&*self).unwrap_or_default();
        if self.spec.kind == LoadKind::Hackbench && self.duration_ns.is_none() {
            return self.hackbench_once(ctx, params);
        }
        // The load runs in a worker process, as under a measurement, so whatever it starts
        // dies with latlab even after a SIGKILL (the worker kills its whole group when we die).
        let control = ctx.control().clone();
        for why in crate::loadgen::policy_refusals(std::slice::from_ref(&self.spec)) {
            let strict = ctx.strict();
            latlab_core::rt::degrade(strict, why, ctx.warnings())?;
        }
        let t0 = Instant::now();
        let set = LoadSet::start(std::slice::from_ref(&self.spec), &control)?;
        let until = self.duration_ns.map(Duration::from_nanos);
        while !control.was_interrupted() && until.is_none_or(|d| t0.elapsed() < d) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let crate::loadgen::Stopped {
            reports,
            warnings,
            ground,
        } = set.stop(&[]);
        let mut text = String::new();
        for r in &reports {
            text.push_str(&format!(
                "{}: {} {} in {:.2} s = {} {}/s{}{}\n",
                r.spec,
                r.count,
                r.unit,
                r.seconds,
                latlab_core::config::units::si(r.rate_per_s),
                r.unit,
                r.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
                if control.was_interrupted() {
                    " (interrupted)"
                } else {
                    ""
                }
            ));
        }
        for w in &warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
        ctx.warnings().extend(warnings);
        let mut run = Run {
            loads: reports,
            duration_s: t0.elapsed().as_secs_f64(),
            ..ctx.run(params)
        };
        run.ground.extend(ground);
        Ok(ForegroundOutcome { run, text })
    }

    fn result(o: &mut ForegroundOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &ForegroundOutcome) -> Text {
        Text {
            report: o.text.clone(),
            figures: None,
            loads_shown: true,
        }
    }
}

impl Foreground {
    fn hackbench_once(
        &self,
        ctx: &mut Ctx<'_>,
        params: serde_json::Value,
    ) -> Result<ForegroundOutcome> {
        let h = kinds::hackbench_of(&self.spec);
        let mode = if h.threads { "threaded" } else { "process" };
        let t0 = Instant::now();
        let d = h
            .run_once_unless(&ctx.control().stop)
            .map_err(|e| Error::Env(format!("hackbench: {e}")))?;
        let time = match d {
            Some(d) => format!("Time: {:.3}\n", d.as_secs_f64()),
            None => format!(
                "Time: {:.3} (interrupted; the run did not finish)\n",
                t0.elapsed().as_secs_f64()
            ),
        };
        let text = format!(
            "Running in {mode} mode with {} groups using {} file descriptors each (== {} tasks)\nEach sender will pass {} messages of {} bytes\n{time}",
            h.groups,
            2 * h.fds,
            2 * h.fds * h.groups,
            h.loops,
            h.datasize,
        );
        let mut series = Vec::new();
        let mut loads = Vec::new();
        if let Some(d) = d {
            let mut rec = Recorder::new();
            rec.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            let s = Series::from_recorder("time".into(), &rec);
            series.push(s);
            let messages = (h.groups * h.fds * h.fds * h.loops) as u64;
            loads.push(LoadReport {
                spec: self.load.clone(),
                kind: "hackbench".into(),
                count: messages,
                unit: "messages".into(),
                seconds: d.as_secs_f64(),
                rate_per_s: messages as f64 / d.as_secs_f64().max(1e-9),
                note: Some(format!("one run in {mode} mode")),
                cpus: None,
                stopped_s: None,
            });
        }
        let run = Run {
            series,
            loads,
            duration_s: t0.elapsed().as_secs_f64(),
            ..ctx.run(params)
        };
        Ok(ForegroundOutcome { run, text })
    }
}
