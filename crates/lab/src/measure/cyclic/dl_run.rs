//! The SCHED_DEADLINE mode of a `cyclic` run, kept out of the common run: what it prepares
//! before the threads start (the kernel's limits, `--hrtick`, the SIGXCPU count), how a
//! thread the kernel refused ends the run (exit 3 with the numbers), and what it adds to the
//! result (per-thread job counts, the limits and the signals counted).

use super::config::{CyclicConfig, ThreadPlan};
use super::deadline;
use super::worker::DeadlineOut;
use crate::driver::Ctx;
use latlab_core::error::Result;
use std::sync::{Arc, Mutex};

/// Set by each deadline thread before the barrier: whether it got its reservation (and the
/// overrun signal), or the kernel's refusal.
pub(crate) type Outcome = Arc<Mutex<Option<std::io::Result<bool>>>>;

/// What a run with SCHED_DEADLINE threads prepared before they start.
pub(crate) struct Setup {
    limits: deadline::Limits,
    /// Every deadline thread's reservation (for a refusal's numbers).
    reservations: Vec<latlab_core::sys::deadline::DlParams>,
    /// SIGXCPU is counted, so threads may ask for SCHED_FLAG_DL_OVERRUN.
    pub(crate) signal: bool,
}

impl Setup {
    /// Checks the kernel's limits, turns HRTICK on (`--hrtick`) and counts SIGXCPU, for a
    /// plan with deadline threads (None without any); the warnings to record go to `warnings`.
    pub(crate) fn prepare(
        cfg: &CyclicConfig,
        ctx: &mut Ctx<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Setup>> {
        let reservations: Vec<_> = deadline::threads(cfg).iter().map(|(_, p)| *p).collect();
        if reservations.is_empty() {
            return Ok(None);
        }
        let limits = deadline::Limits::read(
            &latlab_core::sys::roots::Roots::host(),
            ctx.environment().cpus_online,
        );
        deadline::check_periods(cfg, &limits)?;
        // Held by the driver, which puts it back when the run ends, whatever the way.
        let hrtick = if cfg.hrtick {
            Some(crate::settings::hrtick::Hrtick::enable(ctx.settings()?)?)
        } else {
            None
        };
        warnings.extend(cfg.notes.iter().cloned());
        warnings.extend(deadline::hrtick_advice(cfg));
        warnings.extend(hrtick.as_ref().map(|h| h.warning()));
        Ok(Some(Setup {
            limits,
            reservations,
            signal: latlab_core::sys::deadline::count_sigxcpu().is_ok(),
        }))
    }

    /// After the barrier: the first thread the kernel refused (its name and the error), if
    /// any; a thread that got its reservation without the overrun signal is a warning.
    pub(crate) fn refused(
        &self,
        threads: &[ThreadPlan],
        outcomes: &[Outcome],
        warnings: &mut Vec<String>,
    ) -> Option<(String, std::io::Error)> {
        threads
            .iter()
            .zip(outcomes)
            .find_map(|(t, r)| match r.lock().ok()?.take() {
                Some(Err(e)) => Some((t.name.clone(), e)),
                Some(Ok(signal)) => {
                    if signal != self.signal {
                        warnings.push(format!(
                            "{}: the kernel does not know SCHED_FLAG_DL_OVERRUN; no SIGXCPU on \
                             overruns",
                            t.name
                        ));
                    }
                    None
                }
                None => None,
            })
    }

    /// For a refused thread, the refusal (exit 3 with the bandwidth asked and the limit) is
    /// the run's end (the driver puts HRTICK back on that way out too).
    pub(crate) fn finish(&self, refused: Option<(String, std::io::Error)>) -> Result<()> {
        match refused {
            Some((name, e)) => Err(deadline::refusal(
                &name,
                &e,
                &self.reservations,
                &self.limits,
            )),
            None => Ok(()),
        }
    }

    /// The clock's count of jobs over their runtime against the kernel's SIGXCPU signals
    /// ([`deadline::kernel_check`]): the verdict for `parameters`, and a warning where they
    /// disagree.
    pub(crate) fn kernel_check(
        &self,
        series: &[latlab_core::result::Series],
        sigxcpu: u64,
    ) -> (&'static str, Option<String>) {
        let over: u64 = series
            .iter()
            .filter_map(|s| s.extra.as_ref()?.get("runtime_overruns")?.as_u64())
            .sum();
        deadline::kernel_check(over, self.signal, sigxcpu)
    }

    /// The run's `parameters.deadline`: how overruns were counted, the signals and limits,
    /// and whether the kernel's signals agree with the clock's count.
    pub(crate) fn parameters(&self, sigxcpu: u64, kernel: &str) -> serde_json::Value {
        serde_json::json!({
            "runtime_overruns_from": deadline::OVERRUN_METHOD,
            "dl_overrun_signal": self.signal,
            "sigxcpu": sigxcpu,
            "runtime_overruns_kernel_check": kernel,
            "sched_rt_runtime_us": self.limits.rt_runtime_us,
            "sched_rt_period_us": self.limits.rt_period_us,
        })
    }
}

/// A deadline thread's `series[].extra`: its reservation and job counts.
pub(crate) fn series_extra(out: Option<DeadlineOut>, plan: &ThreadPlan) -> Option<serde_json::Value> {
    let (d, p) = (out?, plan.deadline?);
    Some(serde_json::json!({
        "runtime_ns": p.params.runtime_ns,
        "deadline_ns": p.params.deadline_ns,
        "period_ns": p.params.period_ns,
        "work_ns": p.work_ns,
        "jobs": d.jobs,
        "deadline_misses": d.misses,
        "runtime_overruns": d.runtime_overruns,
    }))
}
