//! Scheduling policies and the priority range each one accepts.

use std::fmt;
use std::str::FromStr;

/// A Linux scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// SCHED_FIFO: real-time, run until blocked or preempted by higher priority.
    Fifo,
    /// SCHED_RR: real-time with a time slice among equal priorities.
    Rr,
    /// SCHED_OTHER: the normal time-sharing policy.
    Other,
    /// SCHED_BATCH: time-sharing, treated as CPU-bound.
    Batch,
    /// SCHED_IDLE: runs only when nothing else wants the CPU.
    Idle,
    /// SCHED_DEADLINE: runtime/deadline/period reservations (EDF + CBS), above every
    /// real-time priority. Set with `sys::deadline`, never through `sched_setscheduler`; only
    /// `cyclic` accepts it ([`Policy::parse_any`]).
    Deadline,
}

impl Policy {
    /// True for the real-time policies (fifo, rr).
    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// The inclusive priority range the kernel accepts for this policy.
    pub(crate) fn prio_range(self) -> (i32, i32) {
        if self.is_rt() {
            (1, 99)
        } else {
            (0, 0)
        }
    }

    /// Checks `prio` against the policy's range, with an explanation on failure.
    pub fn check_prio(self, prio: i32) -> Result<(), String> {
        let (lo, hi) = self.prio_range();
        if prio < lo || prio > hi {
            if self.is_rt() {
                Err(format!(
                    "priority {prio} is outside {self}'s range {lo}..{hi}"
                ))
            } else {
                Err(format!("policy {self} takes priority 0 only (got {prio})"))
            }
        } else {
            Ok(())
        }
    }

    /// The `SCHED_*` constant.
    pub fn as_libc(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::Rr => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
            Policy::Deadline => libc::SCHED_DEADLINE,
        }
    }

    /// The policy of a `SCHED_*` constant (None for one latlab does not know).
    pub fn from_libc(p: libc::c_int) -> Option<Policy> {
        [
            Policy::Fifo,
            Policy::Rr,
            Policy::Other,
            Policy::Batch,
            Policy::Idle,
            Policy::Deadline,
        ]
        .into_iter()
        .find(|x| x.as_libc() == p)
    }

    /// Parses any policy, `deadline` included (only `cyclic` takes it; the plain parser
    /// refuses it so no other measurement meets a policy it cannot set).
    pub fn parse_any(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "deadline" | "sched_deadline" => Ok(Policy::Deadline),
            _ => s.parse().map_err(|_| {
                format!("unknown policy '{s}' (use fifo, rr, other, batch, idle or deadline)")
            }),
        }
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "fifo" | "sched_fifo" => Ok(Policy::Fifo),
            "rr" | "sched_rr" => Ok(Policy::Rr),
            "other" | "normal" | "sched_other" => Ok(Policy::Other),
            "batch" | "sched_batch" => Ok(Policy::Batch),
            "idle" | "sched_idle" => Ok(Policy::Idle),
            _ => Err(format!(
                "unknown policy '{s}' (use fifo, rr, other, batch or idle)"
            )),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Deadline => "deadline",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert!(Policy::Fifo.check_prio(99).is_ok());
        assert!(Policy::Fifo.check_prio(0).is_err());
        assert!(Policy::Rr.check_prio(100).is_err());
        assert!(Policy::Other.check_prio(0).is_ok());
        assert!(Policy::Other.check_prio(5).is_err());
        assert_eq!("SCHED_FIFO".parse::<Policy>(), Ok(Policy::Fifo));
        assert!("deadline".parse::<Policy>().is_err());
        assert_eq!(Policy::parse_any("deadline"), Ok(Policy::Deadline));
        assert_eq!(Policy::parse_any("FIFO"), Ok(Policy::Fifo));
        assert!(Policy::parse_any("edf").unwrap_err().contains("deadline"));
        assert!(!Policy::Deadline.is_rt());
        assert!(Policy::Deadline.check_prio(1).is_err());
    }
}
