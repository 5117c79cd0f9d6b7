//! Decoded trace events: the few fields attribution needs, read from a record with the offsets
//! the kernel's `format` files give, into a small `Copy` value the flight recorder can keep.

use super::format::{Field, Format};
use std::collections::HashMap;

/// A short name (comm, IRQ name, vector), NUL-padded; longer names are cut.
#[derive(Clone, Copy, Eq, Default)]
pub struct Name(pub [u8; 24]);

impl std::hash::Hash for Name {
    /// The bytes, as equality compares them.
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.hash(h);
    }
}

impl PartialEq for Name {
    /// As three words (compared per event by the replay and attribution; no `memcmp` call).
    fn eq(&self, o: &Name) -> bool {
        let w = |n: &Name, i: usize| {
            u64::from_ne_bytes(n.0[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]))
        };
        (0..3).all(|i| w(self, i) == w(o, i))
    }
}

impl Name {
    /// From bytes up to the first NUL.
    pub fn new(b: &[u8]) -> Name {
        let mut n = [0u8; 24];
        let b = b.split(|&c| c == 0).next().unwrap_or(&[]);
        let k = b.len().min(24);
        n[..k].copy_from_slice(&b[..k]);
        Name(n)
    }

    /// As text (lossy), on one line (a task may name itself `a\nb`).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(24);
        match String::from_utf8_lossy(&self.0[..end]) {
            std::borrow::Cow::Borrowed(t) => latlab_core::output::one_line(t),
            std::borrow::Cow::Owned(t) => {
                std::borrow::Cow::Owned(latlab_core::output::one_line(&t).into_owned())
            }
        }
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// What happened. Small (the largest variant is a context switch's two names): every event
/// read is copied into the flight recorder, and out of it for each replay and attribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `sched_switch`: `prev` leaves the CPU (in `prev_state`), `next` runs.
    Switch {
        /// Leaving task.
        prev_comm: Name,
        /// Its pid.
        prev_pid: i32,
        /// Its kernel priority.
        prev_prio: i32,
        /// Its state (0: runnable, preempted).
        prev_state: i64,
        /// Task that runs next.
        next_comm: Name,
        /// Its pid.
        next_pid: i32,
        /// Its kernel priority (0..99 real-time: 99 - rt prio; 100..139 normal).
        next_prio: i32,
    },
    /// `sched_waking`: a task is woken.
    Waking {
        /// Woken task.
        comm: Name,
        /// Its pid.
        pid: i32,
    },
    /// A hardware IRQ or an interrupt vector (`irq_vectors`) starts.
    IrqEntry {
        /// IRQ number (-1 for a vector).
        irq: i32,
        /// Handler or vector name.
        name: Name,
    },
    /// It ends.
    IrqExit,
    /// A softirq starts.
    SoftirqEntry {
        /// Vector number.
        vec: u32,
    },
    /// It ends.
    SoftirqExit,
    /// An hrtimer callback starts.
    TimerEntry {
        /// Callback address.
        function: u64,
    },
    /// It ends.
    TimerExit,
    /// `sched_process_exec`: task `pid` now runs a new program, named `comm` (the file's
    /// base name, as the kernel names the task).
    Exec {
        /// The task (the thread group leader after exec).
        pid: i32,
        /// The thread that called exec.
        old_pid: i32,
        /// The new command name.
        comm: Name,
    },
    /// `ftrace/kernel_stack`: a kernel stack (a `stacktrace` trigger fired), innermost first.
    Stack {
        /// Return addresses (at most [`STACK_DEPTH`] kept), boxed: the rare stack event must
        /// not make every event as large as itself.
        frames: Box<[u64]>,
    },
    /// `nmi/nmi_handler`: an NMI handler ran (recorded at its end).
    Nmi {
        /// How long it ran (ns).
        delta_ns: u64,
    },
    /// `sched_migrate_task`: task `pid` moves to `dest_cpu`.
    Migrate {
        /// The task.
        pid: i32,
        /// The CPU it moves to.
        dest_cpu: i32,
    },
    /// `sched_stat_runtime`: task `pid` ran `runtime` ns since its run time was last
    /// accounted (at its switch-in, or the previous tick).
    Runtime {
        /// The task.
        pid: i32,
        /// Nanoseconds.
        runtime: u64,
    },
    /// `sched_process_exit`: task `pid` exits (its last switch-out follows).
    Exit {
        /// The task.
        pid: i32,
    },
    /// `sched_process_fork`: `parent` made task `child` (a process or a thread).
    Fork {
        /// The creating task.
        parent_pid: i32,
        /// The new task.
        child_pid: i32,
        /// Its name at birth (the parent's).
        child_comm: Name,
    },
}

/// Frames of a kernel stack kept.
pub(crate) const STACK_DEPTH: usize = 24;

/// The kernel's task name length (TASK_COMM_LEN - 1).
const COMM_LEN: usize = 15;

/// The command name exec gives a task running `path`: its base name, cut to 15 bytes.
pub(crate) fn comm_of_path(path: &[u8]) -> Name {
    let path = path.split(|&c| c == 0).next().unwrap_or(&[]);
    let base = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
    Name::new(&base[..base.len().min(COMM_LEN)])
}

/// One event: when (trace clock ns) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Time stamp, ns on the instance's trace clock.
    pub ts: u64,
    /// The task current on the CPU when it was recorded (`common_pid`; for an IRQ, the
    /// interrupted task).
    pub pid: i32,
    /// What.
    pub kind: Kind,
}

/// How to read one event type.
#[derive(Debug, Clone)]
enum Layout {
    Switch(Box<[Field; 7]>),
    Waking([Field; 2]),
    IrqEntry([Field; 2]),
    Vector(Name),
    VectorExit,
    IrqExit,
    SoftirqEntry(Field),
    SoftirqExit,
    TimerEntry(Field),
    TimerExit,
    Exec([Field; 3]),
    Fork([Field; 3]),
    Migrate([Field; 2]),
    Exit(Field),
    Runtime([Field; 2]),
    Stack(Field, usize),
    Nmi(Field),
}

/// Field `f` of record `b` as a signed integer (1, 2, 4 or 8 bytes, little-endian).
pub fn int(b: &[u8], f: &Field) -> Option<i64> {
    let s = b.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 => i64::from(s[0] as i8),
        2 => i64::from(i16::from_le_bytes(s.try_into().ok()?)),
        4 => i64::from(i32::from_le_bytes(s.try_into().ok()?)),
        8 => i64::from_le_bytes(s.try_into().ok()?),
        _ => return None,
    })
}

/// Field `f` of record `b` as bytes (a `__data_loc` field's real data).
pub fn bytes<'a>(b: &'a [u8], f: &Field) -> Option<&'a [u8]> {
    if f.data_loc {
        let loc = int(b, f)? as u32;
        let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        return b.get(off..off + len);
    }
    b.get(f.offset..f.offset + f.size)
}

fn text(b: &[u8], f: &Field) -> Option<Name> {
    bytes(b, f).map(Name::new)
}

/// Turns records into events, by type id.
#[derive(Debug, Default, Clone)]
pub struct Decoder {
    layouts: HashMap<u16, Layout>,
    common_pid: Option<Field>,
}

impl Decoder {
    /// Learns the layout of event `system/name` from its parsed format; an event this decoder
    /// does not use, or a format without the fields it needs, is an error naming the field.
    pub fn learn(&mut self, system: &str, f: &Format) -> std::result::Result<(), String> {
        let get = |n: &str| {
            f.field(n)
                .cloned()
                .ok_or_else(|| format!("{system}/{}: no field '{n}'", f.name))
        };
        let l = match (system, f.name.as_str()) {
            ("sched", "sched_switch") => Layout::Switch(Box::new([
                get("prev_comm")?,
                get("prev_pid")?,
                get("prev_prio")?,
                get("prev_state")?,
                get("next_comm")?,
                get("next_pid")?,
                get("next_prio")?,
            ])),
            ("sched", "sched_waking")
            | ("sched", "sched_wakeup")
            | ("sched", "sched_wakeup_new") => Layout::Waking([get("comm")?, get("pid")?]),
            ("irq", "irq_handler_entry") => Layout::IrqEntry([get("irq")?, get("name")?]),
            ("irq", "irq_handler_exit") => Layout::IrqExit,
            ("irq", "softirq_entry") => Layout::SoftirqEntry(get("vec")?),
            ("irq", "softirq_exit") => Layout::SoftirqExit,
            ("timer", "hrtimer_expire_entry") => Layout::TimerEntry(get("function")?),
            ("timer", "hrtimer_expire_exit") => Layout::TimerExit,
            ("irq_vectors", n) if n.ends_with("_entry") => {
                Layout::Vector(Name::new(n.trim_end_matches("_entry").as_bytes()))
            }
            ("irq_vectors", n) if n.ends_with("_exit") => Layout::VectorExit,
            ("nmi", "nmi_handler") => Layout::Nmi(get("delta_ns")?),
            ("ftrace", "kernel_stack") => Layout::Stack(get("size")?, get("caller")?.offset),
            ("sched", "sched_process_exec") => {
                Layout::Exec([get("filename")?, get("pid")?, get("old_pid")?])
            }
            ("sched", "sched_process_fork") => {
                Layout::Fork([get("parent_pid")?, get("child_pid")?, get("child_comm")?])
            }
            ("sched", "sched_migrate_task") => Layout::Migrate([get("pid")?, get("dest_cpu")?]),
            ("sched", "sched_process_exit") => Layout::Exit(get("pid")?),
            ("sched", "sched_stat_runtime") => Layout::Runtime([get("pid")?, get("runtime")?]),
            (s, n) => return Err(format!("{s}/{n}: not an event latlab decodes")),
        };
        self.layouts.insert(f.id, l);
        if self.common_pid.is_none() {
            self.common_pid = Some(get("common_pid")?);
        }
        Ok(())
    }

    /// Decodes one record (None: a type not learned, or a record too short for its layout).
    pub fn decode(&self, ts: u64, b: &[u8]) -> Option<Event> {
        let id = u16::from_le_bytes(b.get(0..2)?.try_into().ok()?);
        let kind = match self.layouts.get(&id)? {
            Layout::Switch(f) => Kind::Switch {
                prev_comm: text(b, &f[0])?,
                prev_pid: int(b, &f[1])? as i32,
                prev_prio: int(b, &f[2])? as i32,
                prev_state: int(b, &f[3])?,
                next_comm: text(b, &f[4])?,
                next_pid: int(b, &f[5])? as i32,
                next_prio: int(b, &f[6])? as i32,
            },
            Layout::Waking(f) => Kind::Waking {
                comm: text(b, &f[0])?,
                pid: int(b, &f[1])? as i32,
            },
            Layout::IrqEntry(f) => Kind::IrqEntry {
                irq: int(b, &f[0])? as i32,
                name: text(b, &f[1])?,
            },
            Layout::Vector(name) => Kind::IrqEntry {
                irq: -1,
                name: *name,
            },
            Layout::IrqExit | Layout::VectorExit => Kind::IrqExit,
            Layout::SoftirqEntry(f) => Kind::SoftirqEntry {
                vec: int(b, f)? as u32,
            },
            Layout::SoftirqExit => Kind::SoftirqExit,
            Layout::TimerEntry(f) => Kind::TimerEntry {
                function: int(b, f)? as u64,
            },
            Layout::TimerExit => Kind::TimerExit,
            Layout::Exec(f) => Kind::Exec {
                comm: comm_of_path(bytes(b, &f[0])?),
                pid: int(b, &f[1])? as i32,
                old_pid: int(b, &f[2])? as i32,
            },
            Layout::Stack(size, at) => {
                let n = (int(b, size)?.max(0) as usize)
                    .min(b.len().saturating_sub(*at) / 8)
                    .min(STACK_DEPTH);
                let mut frames = vec![0u64; n];
                for (i, f) in frames.iter_mut().enumerate() {
                    *f = u64::from_le_bytes(b.get(at + 8 * i..at + 8 * i + 8)?.try_into().ok()?);
                }
                Kind::Stack {
                    frames: frames.into(),
                }
            }
            Layout::Nmi(f) => Kind::Nmi {
                delta_ns: int(b, f)?.max(0) as u64,
            },
            Layout::Fork(f) => Kind::Fork {
                parent_pid: int(b, &f[0])? as i32,
                child_pid: int(b, &f[1])? as i32,
                child_comm: text(b, &f[2])?,
            },
            Layout::Migrate(f) => Kind::Migrate {
                pid: int(b, &f[0])? as i32,
                dest_cpu: int(b, &f[1])? as i32,
            },
            Layout::Exit(f) => Kind::Exit {
                pid: int(b, f)? as i32,
            },
            Layout::Runtime(f) => Kind::Runtime {
                pid: int(b, &f[0])? as i32,
                runtime: int(b, &f[1])?.max(0) as u64,
            },
        };
        let pid = self
            .common_pid
            .as_ref()
            .and_then(|f| int(b, f))
            .unwrap_or(-1) as i32;
        Some(Event { ts, pid, kind })
    }
}

/// The kernel's softirq vector names, by number.
pub fn softirq_name(vec: u32) -> &'static str {
    const N: [&str; 10] = [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ];
    N.get(vec as usize).copied().unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::parse_format;

    #[test]
    fn a_task_name_is_one_line() {
        assert_eq!(
            Name::new(b"evil\nT9 fake\tx").as_str(),
            "evil\\nT9 fake\\tx"
        );
        assert_eq!(Name::new(b"kworker/0:1").as_str(), "kworker/0:1");
    }

    fn layout(rel: &str) -> Format {
        parse_format(
            &std::fs::read_to_string(format!(
                "{}/../../tests/fixtures/trace/events/{rel}/format",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
        )
        .unwrap()
    }

    /// A record of `f`'s type with `fixed` bytes after the common header and `tail` appended.
    fn record(f: &Format, fixed: &[u8], tail: &[u8]) -> Vec<u8> {
        let mut r = vec![0u8; 8];
        r[0..2].copy_from_slice(&f.id.to_le_bytes());
        r[4..8].copy_from_slice(&77i32.to_le_bytes());
        r.extend_from_slice(fixed);
        r.extend_from_slice(tail);
        r
    }

    fn loc(off: usize, len: usize) -> [u8; 4] {
        ((len << 16 | off) as u32).to_le_bytes()
    }

    #[test]
    fn exec_and_fork_records_decode() {
        let (ex, fk) = (
            layout("sched/sched_process_exec"),
            layout("sched/sched_process_fork"),
        );
        let mut d = Decoder::default();
        d.learn("sched", &ex).unwrap();
        d.learn("sched", &fk).unwrap();
        // exec: filename (data_loc at 8), pid at 12, old_pid at 16, string at 20.
        let path = b"/usr/lib/very/long/path/to/a-command-with-a-long-name\0";
        let mut fixed = loc(20, path.len()).to_vec();
        fixed.extend_from_slice(&42i32.to_le_bytes());
        fixed.extend_from_slice(&43i32.to_le_bytes());
        let e = d.decode(5, &record(&ex, &fixed, path)).unwrap();
        assert_eq!(e.pid, 77);
        let Kind::Exec { pid, old_pid, comm } = e.kind else {
            panic!("{e:?}")
        };
        assert_eq!(
            (pid, old_pid, comm.as_str().into_owned()),
            (42, 43, "a-command-with-".into())
        );
        // fork: parent_comm (8), parent_pid (12), child_comm (16), child_pid (20), strings at 24.
        let mut fixed = loc(24, 8).to_vec();
        fixed.extend_from_slice(&10i32.to_le_bytes());
        fixed.extend_from_slice(&loc(32, 8));
        fixed.extend_from_slice(&11i32.to_le_bytes());
        let e = d
            .decode(6, &record(&fk, &fixed, b"timeout\0timeout\0"))
            .unwrap();
        assert_eq!(
            e.kind,
            Kind::Fork {
                parent_pid: 10,
                child_pid: 11,
                child_comm: Name::new(b"timeout")
            }
        );
        assert_eq!(comm_of_path(b"sh").as_str(), "sh");
    }

    #[test]
    fn an_event_stays_small() {
        // Two names, pids, priorities and a state: a context switch is the largest.
        assert!(
            std::mem::size_of::<Event>() <= 96,
            "{}",
            std::mem::size_of::<Event>()
        );
    }
}
