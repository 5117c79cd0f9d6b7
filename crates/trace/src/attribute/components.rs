//! The charged time as the components a result shows: put in words, the many small threads
//! folded per command, largest first, each with its share of the latency.

use super::{Charge, Note, Task};
use crate::event::Name;
use latlab_core::result::trace::{Component, TaskRef};

/// Threads named one by one in an attribution; the others are summed per command name
/// (a loaded CPU's long delay holds hundreds of threads, each a fraction of a percent:
/// naming them all made a `sched --all` result hundreds of megabytes, and most of its CPU).
pub(super) const NAMED_THREADS: usize = 16;
/// Commands folded in one spike beyond which they are found through a map.
const MANY_FOLDS: usize = 16;

/// The charged stretches as components, largest first, each with its share of the latency:
/// the [`NAMED_THREADS`] largest threads one by one, the others summed per command name and
/// priority class (a component with `folded` set, named after the largest of them).
pub(super) fn components(
    mut charged: Vec<(Charge, u64, Task)>,
    latency: u64,
    note: &Note,
) -> Vec<Component> {
    let threads = charged
        .iter()
        .filter(|c| matches!(c.0, Charge::Thread(..)))
        .count();
    // (the largest's charge, time and task; time, threads) per command name and priority
    // class.
    let mut folds: Vec<((Charge, u64, Task), u64, u32)> = Vec::new();
    if threads > NAMED_THREADS {
        // Threads last, the largest first; of equal times the smaller pid (the same choice
        // every run). Only which are named matters here.
        let key = |c: &(Charge, u64, Task)| match c.0 {
            Charge::Thread(_, pid, _) => (1, std::cmp::Reverse(c.1), pid),
            _ => (0, std::cmp::Reverse(0), 0),
        };
        let named = charged.len() - threads + NAMED_THREADS;
        charged.select_nth_unstable_by_key(named, key);
        // The others per command name and class: looked for among the folds so far (a few
        // commands, mostly the one before), through a map once there are many.
        let group = |c: &(Charge, u64, Task)| match c.0 {
            Charge::Thread(comm, _, prio) => (comm, prio),
            _ => (Name::default(), 0),
        };
        let mut at: crate::FastMap<(Name, i32), usize> = Default::default();
        for c in charged.drain(named..) {
            let g = group(&c);
            let found = if folds.len() <= MANY_FOLDS {
                folds.iter().rposition(|f| group(&f.0) == g)
            } else {
                at.get(&g).copied()
            };
            match found {
                Some(i) => {
                    let f = &mut folds[i];
                    if key(&c) < key(&f.0) {
                        f.0 = c;
                    }
                    f.1 += c.1;
                    f.2 += 1;
                }
                None => {
                    folds.push((c, c.1, 1));
                    if folds.len() == MANY_FOLDS + 1 {
                        at = folds
                            .iter()
                            .enumerate()
                            .map(|(i, f)| (group(&f.0), i))
                            .collect();
                    } else if folds.len() > MANY_FOLDS {
                        at.insert(g, folds.len() - 1);
                    }
                }
            }
        }
    }
    let mut charged: Vec<(String, String, u64, Task, u32)> = charged
        .into_iter()
        .map(|(k, ns, who)| {
            let (kind, name) = k.words(note);
            (kind, name, ns, who, 0)
        })
        .chain(folds.into_iter().map(|((k, _, who), ns, n)| {
            let (kind, name) = k.words(note);
            match (n, k) {
                (1, _) => (kind, name, ns, who, 0),
                (_, Charge::Thread(comm, ..)) => {
                    let more = if n == 2 { "thread" } else { "threads" };
                    let name = format!("{name} and {} more {} {more}", n - 1, comm.as_str());
                    (kind, name, ns, who, n)
                }
                _ => (kind, name, ns, who, n),
            }
        }))
        .collect();
    charged.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
    charged
        .into_iter()
        .map(|(kind, name, ns, who, folded)| Component {
            kind,
            name,
            ns,
            share: ns as f64 / latency as f64,
            task: who.map(|(c, pid, prio)| TaskRef {
                pid,
                comm: c.as_str().into_owned(),
                prio,
            }),
            group: None,
            chain: Default::default(),
            folded,
        })
        .collect()
}
