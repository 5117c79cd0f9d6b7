//! Each measuring thread's scheduling policy and priority, read from outside it every poll of
//! the ground watch (200 ms): [`super::Held`] is read only at a loop's ends, so a thread demoted
//! and restored in between (`chrt -o -p 0 TID`, then back) is seen only here, and its own
//! loop pays nothing for it.

use crate::sys;
use std::sync::Mutex;

/// A thread watched: its id and name, the policy it measures at, the first other one seen,
/// and whether [`news`] has said it.
struct Watched {
    key: u64,
    tid: i32,
    name: String,
    policy: (libc::c_int, i32),
    seen: Option<(libc::c_int, i32)>,
    said: bool,
}

static WATCHED: Mutex<(u64, Vec<Watched>)> = Mutex::new((0, Vec::new()));

/// A calling thread's watch, from [`watch`] to [`PolicyWatch::end`].
#[derive(Debug)]
pub struct PolicyWatch {
    key: u64,
}

/// Watches the calling thread, `name`, which measures at `policy` (policy, priority) from now
/// on.
pub(crate) fn watch(name: &str, policy: (libc::c_int, i32)) -> PolicyWatch {
    let mut w = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    w.0 += 1;
    let key = w.0;
    w.1.push(Watched {
        key,
        tid: sys::sched::gettid(),
        name: name.to_string(),
        policy,
        seen: None,
        said: false,
    });
    PolicyWatch { key }
}

impl PolicyWatch {
    /// Stops watching; the first policy other than the thread's own seen while it measured.
    pub(crate) fn end(self) -> Option<(libc::c_int, i32)> {
        let mut w = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
        let i = w.1.iter().position(|x| x.key == self.key)?;
        w.1.swap_remove(i).seen
    }
}

/// Reads the policy of every watched thread (the ground watch's poller calls this).
pub fn poll() {
    let mut w = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    for x in w.1.iter_mut().filter(|x| x.seen.is_none()) {
        match sys::sched::policy_of(x.tid) {
            Some(p) if p != x.policy => x.seen = Some(p),
            _ => {}
        }
    }
}

/// A policy and priority, as the kernel gives them.
pub(crate) type PolicyPrio = (libc::c_int, i32);

/// The changes seen since the last call, once each, as (thread name, its policy, the one
/// seen): a session that never ends (`monitor`) says them in the interval they happened.
pub fn news() -> Vec<(String, PolicyPrio, PolicyPrio)> {
    let mut w = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    w.1.iter_mut()
        .filter(|x| !x.said)
        .filter_map(|x| {
            let seen = x.seen?;
            x.said = true;
            Some((x.name.clone(), x.policy, seen))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_policy_changed_and_back_between_the_ends_is_seen_by_a_poll() {
        let Some(own) = crate::sys::sched::policy_now() else {
            return;
        };
        // Pretend the thread measures at another priority than it has: a poll sees "a change".
        let w = super::watch("T9", (own.0, own.1 + 1));
        super::poll();
        // Said once as news (other tests' threads may be watched at the same time).
        let said =
            |n: &[(String, super::PolicyPrio, super::PolicyPrio)]| n.iter().any(|x| x.0 == "T9");
        assert!(said(&super::news()));
        assert!(!said(&super::news()));
        assert_eq!(w.end(), Some(own));
        // Its own policy: nothing seen.
        let w = super::watch("T9", own);
        super::poll();
        assert!(!said(&super::news()));
        assert_eq!(w.end(), None);
    }
}
