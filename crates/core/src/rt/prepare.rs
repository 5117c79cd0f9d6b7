//! What a measurement asks of the machine before its threads start (real-time scheduling,
//! locked memory, a CPU idle-state limit) and what it got: each refusal a warning, or exit 3
//! under `--strict`.

use crate::config::Policy;
use crate::sys;

/// What a measurement asks of the machine before its threads start.
#[derive(Debug, Clone)]
pub struct Needs {
    /// The highest real-time (policy, priority) any thread will use, if any.
    pub rt: Option<(Policy, i32)>,
    /// Lock memory.
    pub mlock: bool,
    /// Value to hold in /dev/cpu_dma_latency.
    pub dma_latency_us: Option<i32>,
    /// Fail (exit 3) instead of degrading with a warning.
    pub strict: bool,
}

/// What `prepare` arranged.
#[derive(Debug)]
pub struct Prepared {
    /// False when real-time scheduling was refused: threads must run SCHED_OTHER.
    pub rt_granted: bool,
    /// The PM QoS request, held until dropped.
    _dma: Option<sys::dma::DmaLatency>,
}

/// A refusal latlab can run on without: a warning, or exit 3 (`--strict: WHY`) under `--strict`.
pub fn degrade(strict: bool, why: String, warnings: &mut Vec<String>) -> crate::Result<()> {
    if strict {
        return Err(crate::Error::Env(format!("--strict: {why}")));
    }
    warnings.push(why);
    Ok(())
}

/// Probes RT privilege, locks memory and holds `/dev/cpu_dma_latency`: each refusal becomes a
/// warning, or exit 3 under `--strict`.
pub fn prepare(n: &Needs, warnings: &mut Vec<String>) -> crate::Result<Prepared> {
    let mut rt_granted = true;
    if let Some((policy, prio)) = n.rt {
        if let Err(why) = sys::privilege::probe_policy(policy, prio) {
            if n.strict {
                return Err(crate::Error::Env(format!(
                    "real-time scheduling is required here (--strict, or a measurement that needs it): {why}"
                )));
            }
            warnings.push(format!("{why}; real-time threads fell back to SCHED_OTHER"));
            rt_granted = false;
        }
    }
    if n.mlock {
        if let Err(e) = sys::mem::mlockall() {
            let why = format!("mlockall failed ({e}); page faults may show up as latency. Raise RLIMIT_MEMLOCK or run as root");
            degrade(n.strict, why, warnings)?;
        }
    }
    let dma = match n.dma_latency_us {
        None => None,
        Some(v) => match sys::dma::DmaLatency::hold(v) {
            Ok(h) => Some(h),
            Err(e) => {
                let why = format!("/dev/cpu_dma_latency: {e}; CPU idle states were not limited (use --no-dma-latency to skip)");
                degrade(n.strict, why, warnings)?;
                None
            }
        },
    };
    Ok(Prepared {
        rt_granted,
        _dma: dma,
    })
}
