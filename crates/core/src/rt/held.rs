//! Where a thread really ran: its placement as the kernel holds it, read at a measuring
//! loop's ends ([`Held`]), and the wake-ups it made elsewhere, counted inside the loop
//! ([`Stray`]). A placement another process changed under a run is said, never assumed.

use super::policy;
use crate::config::Policy;
use crate::sys;

/// A thread's placement as the kernel holds it: allowed CPUs, policy and priority. Read when a
/// measuring loop starts and again when it ends, a difference is a placement that another
/// process (taskset, chrt, a cgroup's cpuset) or a CPU taken offline changed under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    cpus: Vec<usize>,
    policy: Option<(libc::c_int, i32)>,
}

impl Held {
    /// The calling thread's placement now (not for a hot path: it allocates).
    pub fn read() -> Held {
        Held {
            cpus: sys::sched::affinity().unwrap_or_default(),
            policy: sys::sched::policy_now(),
        }
    }

    /// Starts watching the calling thread's (`name`'s) policy from outside it ([`policy`]);
    /// None when it could not be read.
    pub fn watch(&self, name: &str) -> Option<policy::PolicyWatch> {
        self.policy.map(|p| policy::watch(name, p))
    }

    /// A policy change [`policy::news`] reported, as [`Held::drift`] words it.
    pub fn policy_news(name: &str, own: (libc::c_int, i32), seen: (libc::c_int, i32)) -> String {
        let h = |p| Held {
            cpus: Vec::new(),
            policy: Some(p),
        };
        h(own)
            .drift_said(&h(seen), name, "while it measures")
            .unwrap_or_default()
    }

    /// What moved since `self` was read, said of thread `name`: [`Held::drift`] to the
    /// placement now, or else a policy `watch` saw changed in between (and put back).
    pub fn moved(&self, name: &str, watch: Option<policy::PolicyWatch>) -> Option<String> {
        let seen = watch.and_then(policy::PolicyWatch::end);
        let now = Held::read();
        if let Some(d) = self.drift(&now, name) {
            return Some(d);
        }
        let other = Held {
            cpus: now.cpus,
            policy: seen,
        };
        seen.and_then(|_| self.drift(&other, name))
            .map(|d| format!("{d} (seen while it measured; put back by its end)"))
    }

    /// What moved from `self` to `now`, said of thread `name`; None when nothing did.
    pub(crate) fn drift(&self, now: &Held, name: &str) -> Option<String> {
        self.drift_said(now, name, "while it measured")
    }

    /// [`Held::drift`], said `when` ("while it measured", or "while it measures" of a run
    /// still going).
    fn drift_said(&self, now: &Held, name: &str, when: &str) -> Option<String> {
        let cpus = |v: &[usize]| crate::config::CpuSet::from_cpus(v.iter().copied()).to_string();
        let policy = |p: Option<(libc::c_int, i32)>| match p {
            Some((pol, prio)) => format!(
                "{} {prio}",
                Policy::from_libc(pol).map_or_else(|| pol.to_string(), |p| p.to_string())
            ),
            None => "unknown".into(),
        };
        let mut moved = Vec::new();
        if self.cpus != now.cpus {
            moved.push(format!(
                "its CPUs from {} to {}",
                cpus(&self.cpus),
                cpus(&now.cpus)
            ));
        }
        if self.policy != now.policy {
            moved.push(format!(
                "its policy from {} to {}",
                policy(self.policy),
                policy(now.policy)
            ));
        }
        (!moved.is_empty()).then(|| {
            format!(
                "{name}: {} {when} (another process, or a CPU taken offline, moved it): its samples may not all come from where it was placed",
                moved.join(" and ")
            )
        })
    }
}

/// The wake-ups (or spins) a thread pinned to one CPU made on another, counted inside its loop:
/// [`Held`] is read only at the loop's ends, so a thread moved away and back in between
/// (`taskset -p` there and back) is seen only here. The check is `sched_getcpu`, a load from
/// the thread's rseq area on glibc ≥ 2.35 (a vDSO call before).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stray {
    pinned: Option<usize>,
    /// Checks made on another CPU than the pinned one.
    pub count: u64,
    /// The first other CPU seen.
    pub(crate) first: Option<usize>,
}

impl Stray {
    /// Counting for a thread placed as `held` (nothing is counted unless it holds one CPU).
    pub fn for_held(held: &Held) -> Stray {
        Stray {
            pinned: match held.cpus.as_slice() {
                [c] => Some(*c),
                _ => None,
            },
            ..Stray::default()
        }
    }

    /// Notes the CPU the calling thread is on now; that other CPU when it is not the pinned
    /// one.
    #[inline(always)]
    pub fn check(&mut self) -> Option<usize> {
        let p = self.pinned?;
        match sys::sched::current_cpu() {
            Some(c) if c != p => {
                self.count += 1;
                self.first.get_or_insert(c);
                Some(c)
            }
            _ => None,
        }
    }

    /// What thread `name` did elsewhere, of `of` `what` ("wake-ups"); None when nothing.
    pub fn said(&self, name: &str, of: u64, what: &str) -> Option<String> {
        let (p, c) = (self.pinned?, self.first?);
        Some(format!(
            "{name}: {} of its {of} {what} ran on CPU {c}, not on CPU {p} where it was pinned (another process moved it, perhaps and back, while it measured): those samples do not come from where it was placed",
            self.count
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_that_moved_says_what_moved_and_one_that_held_says_nothing() {
        let at = |cpus: Vec<usize>, p| Held { cpus, policy: p };
        let start = at(vec![1], Some((libc::SCHED_FIFO, 80)));
        assert_eq!(start.drift(&start.clone(), "T0"), None);
        let w = start
            .drift(&at(vec![0, 1], Some((libc::SCHED_FIFO, 80))), "T0")
            .unwrap();
        assert!(
            w.starts_with("T0: its CPUs from 1 to 0-1 while it measured"),
            "{w}"
        );
        let w = start
            .drift(&at(vec![1], Some((libc::SCHED_OTHER, 0))), "cpu1")
            .unwrap();
        assert!(
            w.starts_with("cpu1: its policy from fifo 80 to other 0 while"),
            "{w}"
        );
        let w = start.drift(&at(vec![1], None), "T0").unwrap();
        assert!(w.contains("to unknown"), "{w}");
        assert_eq!(Held::read(), Held::read());
    }
}
