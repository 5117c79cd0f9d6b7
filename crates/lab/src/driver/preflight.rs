//! What is checked before anything starts: loads that outrank or share the measured CPUs,
//! real-time company already there, and measured CPUs this process cannot be pinned to. Each
//! is a warning, or under `--strict` a refusal before any time is spent.

use super::{ground, Common, Footprint, Measurement};
use latlab_core::error::{Error, Result};
use latlab_core::rt;

/// What is ready once the checks passed and the real-time preparation is done.
pub(super) struct Ready {
    /// Warnings for the result: the command line's, the checks', the loads' policies'.
    pub(super) warnings: Vec<String>,
    /// The machine as captured before measuring.
    pub(super) environment: latlab_core::result::Environment,
    /// What the real-time preparation arranged, and its warnings (the measurement's context
    /// records them).
    pub(super) prepared: rt::Prepared,
    pub(super) prep_warnings: Vec<String>,
    /// The run's placement log (under `--strict` a failed placement stops the run at once).
    pub(super) placement: rt::PlacementLog,
    /// The real-time tasks the company check saw on the pinned CPUs (None: nothing pinned).
    pub(super) company_seen: Option<ground::Keyed>,
}

/// Checks `m`'s loads and CPUs and prepares the real-time footprint it asks for, in that
/// order: a refusal under `--strict` comes before anything starts.
pub(super) fn ready<M: Measurement>(
    m: &M,
    common: &Common,
    control: &rt::Control,
) -> Result<Ready> {
    let footprint = m.footprint();
    let mut warnings = common.warnings.clone();
    warnings.extend(outranking(&footprint, common)?);
    warnings.extend(overlapping(m.measured_cpus().as_ref(), common));
    let environment = latlab_core::result::Environment::capture();
    let mut prep_warnings = Vec::new();
    let prepared = rt::prepare(
        &rt::Needs {
            rt: footprint.rt,
            mlock: footprint.mlock,
            dma_latency_us: footprint.dma_latency_us,
            strict: common.strict || footprint.rt_required,
        },
        &mut prep_warnings,
    )?;
    // Under --strict a failed placement ends the run at once (it would be refused at the end).
    let placement = if common.strict {
        rt::PlacementLog::stopping(control.stop.clone())
    } else {
        rt::PlacementLog::default()
    };
    warnings.extend(unplaceable(m.pinned_cpus().as_ref(), common.strict)?);
    let (company_warnings, company_seen) = company(m.pinned_cpus().as_ref(), common.strict)?;
    warnings.extend(company_warnings);
    for why in crate::loadgen::policy_refusals(&common.loads) {
        rt::degrade(common.strict, why, &mut warnings)?;
    }
    Ok(Ready {
        warnings,
        environment,
        prepared,
        prep_warnings,
        placement,
        company_seen,
    })
}

/// Warnings (or, under `--strict`, a refusal) for loads that outrank the measurement: an
/// unpinned real-time load at or above the measuring threads' priority can starve them.
pub(super) fn outranking(m: &Footprint, c: &Common) -> Result<Vec<String>> {
    let mut w = Vec::new();
    let Some(mine) = m.min_rt_prio else {
        return Ok(w);
    };
    for l in &c.loads {
        if let Some(p) = l.rt_prio() {
            if p >= mine {
                let why = format!(
                    "--load {}: its real-time priority {p} is not below the measurement's ({mine}); \
                     it can starve measuring threads (the driver stops loads at the deadline)",
                    l.text
                );
                if c.strict {
                    return Err(Error::Usage(format!("--strict: {why}")));
                }
                w.push(why);
            }
        }
    }
    Ok(w)
}

/// Warnings for loads confined to CPUs that overlap the measured ones.
pub(super) fn overlapping(
    measured: Option<&latlab_core::config::CpuSet>,
    c: &Common,
) -> Vec<String> {
    let Some(m) = measured else {
        return Vec::new();
    };
    c.loads
        .iter()
        .filter_map(|l| {
            let cpus = l.cpus()?;
            let shared = cpus.difference(&cpus.difference(m));
            (!shared.is_empty()).then(|| {
                format!(
                    "--load {}: its CPUs {cpus} overlap the measured CPUs {m} (shared: {shared})",
                    l.text
                )
            })
        })
        .collect()
}

/// Real-time tasks of other processes allowed on the measured CPUs: a warning each; another
/// latlab measuring there too is exit 3 under `--strict` (each would disturb the other).
/// Also every real-time task the scan saw there, for the run's watch (None when nothing is
/// pinned: nothing was scanned).
pub(super) fn company(
    pinned: Option<&latlab_core::config::CpuSet>,
    strict: bool,
) -> Result<(Vec<String>, Option<ground::Keyed>)> {
    let Some(cpus) = pinned else {
        return Ok((Vec::new(), None));
    };
    let cpus: Vec<usize> = cpus.iter().collect();
    let found = ground::company_at_start(&cpus);
    if strict && found.twin {
        return Err(Error::Env(format!(
            "--strict: {}",
            found
                .warnings
                .iter()
                .find(|w| w.contains("another latlab"))
                .cloned()
                .unwrap_or_default()
        )));
    }
    Ok((found.warnings, Some(found.seen)))
}

/// The online CPUs other than `measured` (None when there are none, or nothing is measured).
pub(super) fn housekeeping(measured: Option<&latlab_core::config::CpuSet>) -> Option<Vec<usize>> {
    let m = measured?;
    let rest: Vec<usize> = latlab_core::config::CpuSet::online_here()
        .iter()
        .filter(|&c| !m.contains(c))
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// Measured CPUs no thread of this process can be pinned to (a cpuset narrower than them, or
/// an offline CPU): exit 3 naming them under `--strict`, before anything starts; else a
/// warning (each thread's own placement is recorded as it happens). A `taskset` narrower than
/// them is not one: it sets only the affinity threads inherit, and each measuring thread pins
/// itself, so each CPU outside it is tried (on a thread that then ends).
pub(super) fn unplaceable(
    measured: Option<&latlab_core::config::CpuSet>,
    strict: bool,
) -> Result<Vec<String>> {
    let Some(m) = measured else {
        return Ok(Vec::new());
    };
    let Ok(allowed) = latlab_core::sys::sched::affinity() else {
        return Ok(Vec::new());
    };
    let outside: Vec<usize> = m.iter().filter(|c| !allowed.contains(c)).collect();
    if outside.is_empty() {
        return Ok(Vec::new());
    }
    let refused = std::thread::scope(|sc| {
        std::thread::Builder::new()
            .name("latlab-probe".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn_scoped(sc, || {
                outside
                    .iter()
                    .copied()
                    .filter(|&c| latlab_core::sys::sched::pin_to_cpu(c).is_err())
                    .collect::<Vec<usize>>()
            })
            .ok()
            .and_then(|h| h.join().ok())
            .unwrap_or_else(|| outside.clone())
    });
    if refused.is_empty() {
        return Ok(Vec::new());
    }
    let list = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let why = format!(
        "the measured CPU(s) {} are outside the CPUs this process may use ({}: a cpuset or \
         an offline CPU); threads meant for them cannot be pinned there",
        list(&refused),
        list(&allowed)
    );
    if strict {
        return Err(Error::Env(format!("--strict: {why}")));
    }
    Ok(vec![why])
}
