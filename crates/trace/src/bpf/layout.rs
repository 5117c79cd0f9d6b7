//! The records `bpf/sched.h` defines, read by offset from the bytes a map or a ring hands
//! over: no cast of raw memory, and a record shorter than its layout is refused, not read past.

use crate::event::Name;

/// Bytes of a task's record (`struct task`).
pub(crate) const TASK: usize = 2592;
/// Bytes of a spike's record (`struct spike`).
pub(crate) const SPIKE: usize = 304;
/// Bytes of the settings (`struct config`).
pub(crate) const CONFIG: usize = 40;
/// Histogram buckets (`NB`).
pub(crate) const NB: usize = 280;
/// Switches a spike carries (`RING`).
pub(crate) const RING: usize = 8;
/// Wakers kept per task (`WAKERS`).
const WAKERS: usize = 4;
/// CPUs the masks hold (`MASK_WORDS` * 64).
pub const MASK_CPUS: usize = 256;

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default())
}

fn name_at(b: &[u8], o: usize) -> Name {
    let raw = &b[o..o + 16];
    let end = raw.iter().position(|&c| c == 0).unwrap_or(16);
    Name::new(&raw[..end])
}

/// One side of a task's delays, as the kernel aggregated them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delays {
    /// Delays counted.
    pub n: u64,
    /// Their sum (ns), exact.
    pub sum: u64,
    /// The largest (ns), exact.
    pub max: u64,
    /// The largest's CPU, start and end (monotonic ns); None while none was counted.
    pub worst: Option<(usize, u64, u64)>,
    /// Counts per bucket ([`bucket_bounds`]).
    pub hist: Vec<u32>,
}

/// The lowest value of bucket `b` and its width (ns): 8 buckets of 1 ns, then 8 per octave.
pub fn bucket_bounds(b: usize) -> (u64, u64) {
    if b < 8 {
        return (b as u64, 1);
    }
    let e = (b - 8) / 8 + 3;
    let sub = ((b - 8) % 8) as u64;
    let w = 1u64 << (e - 3);
    ((8 + sub) * w, w)
}

/// A task's figures from the kernel's table (or its exit record).
#[derive(Debug, Clone, Default)]
pub struct TaskStat {
    /// Thread id.
    pub tid: i32,
    /// Process id (0 until the task was first switched out or exited).
    pub tgid: i32,
    /// Latest kernel priority.
    pub prio: i32,
    /// Who forked it, when its first wake-up was seen (0: before the run).
    pub parent: i32,
    /// Latest name.
    pub comm: Name,
    /// First and last event that concerned it (monotonic ns).
    pub first_ns: u64,
    /// See `first_ns`.
    pub last_ns: u64,
    /// A wake-up still waiting for a CPU.
    pub pending: bool,
    /// Wake-up latencies.
    pub wake: Delays,
    /// Preemption delays.
    pub preempt: Delays,
    /// Time on a CPU (ns), runs, switches-in on another CPU than the last.
    pub run_ns: u64,
    /// See `run_ns`.
    pub runs: u64,
    /// See `run_ns`.
    pub migrations: u64,
    /// Wake-ups whose switch-in was not traced.
    pub unmatched: u64,
    /// CPUs it was switched in on.
    pub cpus: Vec<usize>,
    /// Its wakers (`task COMM`, `irq N`, `softirq NAME`, `hrtimer`, `idle`) and counts; `other` for the rest.
    pub wakers: Vec<(String, u64)>,
    /// It exited.
    pub exited: bool,
}

fn delays(b: &[u8], counts: usize, worst: usize, hist: usize) -> Delays {
    let n = u64_at(b, counts);
    Delays {
        n,
        sum: u64_at(b, counts + 8),
        max: u64_at(b, counts + 16),
        worst: (n > 0).then(|| {
            (
                u32_at(b, worst + 16) as usize,
                u64_at(b, worst),
                u64_at(b, worst + 8),
            )
        }),
        hist: (0..NB).map(|i| u32_at(b, hist + 4 * i)).collect(),
    }
}

fn wakers(b: &[u8]) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for i in 0..WAKERS {
        let o = 192 + 24 * i;
        let n = u32_at(b, o + 4) as u64;
        if n == 0 {
            continue;
        }
        let label = match u32_at(b, o) {
            1 => format!("task {}", name_at(b, o + 8).as_str()),
            2 => format!("irq {}", u32_at(b, o + 8)),
            3 => format!("softirq {}", crate::event::softirq_name(u32_at(b, o + 8))),
            5 => "hrtimer".to_string(),
            _ => "idle".to_string(),
        };
        out.push((label, n));
    }
    let other = u64_at(b, 288);
    if other > 0 {
        out.push(("other".into(), other));
    }
    out.sort_by_key(|w| std::cmp::Reverse(w.1));
    out
}

impl TaskStat {
    /// Reads a `struct task`; None for a record too short.
    pub fn parse(b: &[u8]) -> Option<TaskStat> {
        if b.len() < TASK {
            return None;
        }
        let mut cpus = Vec::new();
        for w in 0..4 {
            let m = u64_at(b, 160 + 8 * w);
            cpus.extend((0..64).filter(|i| m >> i & 1 == 1).map(|i| w * 64 + i));
        }
        Some(TaskStat {
            tid: u32_at(b, 0) as i32,
            tgid: u32_at(b, 4) as i32,
            prio: u32_at(b, 8) as i32,
            parent: u32_at(b, 12) as i32,
            comm: name_at(b, 16),
            first_ns: u64_at(b, 32),
            last_ns: u64_at(b, 40),
            pending: u64_at(b, 48) != 0,
            wake: delays(b, 80, 296, 352),
            preempt: delays(b, 104, 320, 1472),
            run_ns: u64_at(b, 128),
            runs: u64_at(b, 136),
            migrations: u64_at(b, 144),
            unmatched: u64_at(b, 152),
            cpus,
            wakers: wakers(b),
            exited: u32_at(b, 344) & 1 == 1,
        })
    }
}

/// What ran on a CPU from `ts`.
#[derive(Debug, Clone)]
pub struct Ran {
    /// When it was switched in (monotonic ns).
    pub ts: u64,
    /// Its tid (0: the CPU idled).
    pub pid: i32,
    /// Its kernel priority.
    pub prio: i32,
    /// Its name.
    pub comm: Name,
}

/// A delay at or over the threshold, with what its CPU ran while the task waited.
#[derive(Debug, Clone)]
pub struct Spike {
    /// The task delayed.
    pub tid: i32,
    /// Its name.
    pub comm: Name,
    /// The CPU it was switched in on.
    pub cpu: usize,
    /// A wake-up (false: a preemption).
    pub wake: bool,
    /// Woken (or preempted) at, and switched in at (monotonic ns).
    pub from: u64,
    /// See `from`.
    pub to: u64,
    /// What the CPU ran over `[from, to]`, oldest first, each with the time it ran in it;
    /// `complete` is false when the CPU switched more often than the kernel remembers.
    pub ran: Vec<(Ran, u64)>,
    /// See `ran`.
    pub complete: bool,
}

impl Spike {
    /// Reads a `struct spike`; None for a record too short.
    pub fn parse(b: &[u8]) -> Option<Spike> {
        if b.len() < SPIKE {
            return None;
        }
        let head = u32_at(b, 12) as usize;
        let (from, to) = (u64_at(b, 16), u64_at(b, 24));
        // The ring, oldest first: slot head % RING is the oldest of the last RING switches.
        let mut slots: Vec<Ran> = (0..RING.min(head))
            .map(|k| {
                let i = (head + RING - RING.min(head) + k) % RING;
                let o = 48 + 32 * i;
                Ran {
                    ts: u64_at(b, o),
                    pid: u32_at(b, o + 8) as i32,
                    prio: u32_at(b, o + 12) as i32,
                    comm: name_at(b, o + 16),
                }
            })
            .collect();
        slots.retain(|s| s.ts < to);
        // The last switch-in at or before `from` ran at its start: the ones from there on.
        let first = slots.iter().rposition(|s| s.ts <= from);
        let complete = first.is_some();
        let kept: Vec<Ran> = slots.split_off(first.unwrap_or(0));
        let mut ran = Vec::new();
        for (i, r) in kept.iter().enumerate() {
            let start = r.ts.max(from);
            let end = kept.get(i + 1).map_or(to, |n| n.ts).min(to);
            ran.push((r.clone(), end.saturating_sub(start)));
        }
        Some(Spike {
            tid: u32_at(b, 0) as i32,
            comm: name_at(b, 32),
            cpu: u32_at(b, 4) as usize,
            wake: u32_at(b, 8) != 0,
            from,
            to,
            ran,
            complete,
        })
    }
}

/// The settings record: the threshold and the CPUs whose delays count.
pub(crate) fn config(threshold_ns: u64, cpus: Option<&[usize]>) -> [u8; CONFIG] {
    let mut b = [0u8; CONFIG];
    b[..8].copy_from_slice(&threshold_ns.to_le_bytes());
    for w in 0..4 {
        let m: u64 = match cpus {
            None => u64::MAX,
            Some(c) => c
                .iter()
                .filter(|&&c| c / 64 == w)
                .fold(0, |m, &c| m | 1 << (c % 64)),
        };
        b[8 + 8 * w..16 + 8 * w].copy_from_slice(&m.to_le_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_in_eighths_of_an_octave() {
        assert_eq!(bucket_bounds(0), (0, 1));
        assert_eq!(bucket_bounds(7), (7, 1));
        assert_eq!(bucket_bounds(8), (8, 1));
        assert_eq!(bucket_bounds(15), (15, 1));
        assert_eq!(bucket_bounds(16), (16, 2));
        // Each bucket starts where the one before ends.
        for b in 1..NB {
            let (lo, _) = bucket_bounds(b);
            let (plo, pw) = bucket_bounds(b - 1);
            assert_eq!(plo + pw, lo, "bucket {b}");
        }
        // The kernel's bucket() for 1000 ns: e = 9, sub = (1000 >> 6) & 7 = 7.
        assert_eq!(bucket_bounds(8 + 6 * 8 + 7), (960, 64));
    }

    fn spike_bytes(head: u32, from: u64, to: u64, slots: &[(u64, i32)]) -> Vec<u8> {
        let mut b = vec![0u8; SPIKE];
        b[0..4].copy_from_slice(&42u32.to_le_bytes());
        b[4..8].copy_from_slice(&1u32.to_le_bytes());
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        b[12..16].copy_from_slice(&head.to_le_bytes());
        b[16..24].copy_from_slice(&from.to_le_bytes());
        b[24..32].copy_from_slice(&to.to_le_bytes());
        for (k, &(ts, pid)) in slots.iter().enumerate() {
            // Written in order: the k-th switch went to slot k % RING.
            let o = 48 + 32 * (k % RING);
            b[o..o + 8].copy_from_slice(&ts.to_le_bytes());
            b[o + 8..o + 12].copy_from_slice(&pid.to_le_bytes());
            b[o + 16..o + 19].copy_from_slice(b"hog");
        }
        b
    }

    #[test]
    fn a_spike_shares_its_delay_among_what_ran_from_its_start() {
        // Switches at 100 (pid 7), 200 (pid 8), 300 (pid 9); woken at 150, in at 350.
        let b = spike_bytes(3, 150, 350, &[(100, 7), (200, 8), (300, 9)]);
        let s = Spike::parse(&b).unwrap();
        assert!(s.complete);
        let got: Vec<(i32, u64)> = s.ran.iter().map(|(r, ns)| (r.pid, *ns)).collect();
        assert_eq!(got, vec![(7, 50), (8, 100), (9, 50)]);
        assert!(Spike::parse(&b[..SPIKE - 1]).is_none());
    }

    #[test]
    fn a_ring_that_wrapped_keeps_the_newest_and_says_when_it_misses_the_start() {
        // Ten switches, 100 ns apart: the ring holds the last eight (300..1000).
        let slots: Vec<(u64, i32)> = (1..=10).map(|k| (k * 100, k as i32)).collect();
        let s = Spike::parse(&spike_bytes(10, 150, 1050, &slots)).unwrap();
        assert!(!s.complete, "the switch before 150 was overwritten");
        assert_eq!(s.ran.first().map(|r| r.0.pid), Some(3));
        assert_eq!(s.ran.len(), 8);
        let s = Spike::parse(&spike_bytes(10, 450, 1050, &slots)).unwrap();
        assert!(s.complete);
        assert_eq!(s.ran.first().map(|r| (r.0.pid, r.1)), Some((4, 50)));
    }

    #[test]
    fn the_settings_hold_the_threshold_and_the_cpus_as_masks() {
        let b = config(5000, Some(&[1, 65]));
        assert_eq!(u64_at(&b, 0), 5000);
        assert_eq!(u64_at(&b, 8), 2);
        assert_eq!(u64_at(&b, 16), 2);
        assert_eq!(u64_at(&b, 24), 0);
        assert_eq!(u64_at(&config(1, None), 32), u64::MAX);
    }
}
