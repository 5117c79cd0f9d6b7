//! Decoded trace events: the few fields attribution needs, read from a record with the offsets
//! the kernel's `format` files give, into a small `Copy` value the flight recorder can keep.

use super::format::{Field, Format};
use std::collections::HashMap;

/// A short name (comm, IRQ name, vector), NUL-padded; longer names are cut.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Name(pub [u8; 24]);

impl Name {
    /// From bytes up to the first NUL.
    pub fn new(b: &[u8]) -> Name {
        let mut n = [0u8; 24];
        let b = b.split(|&c| c == 0).next().unwrap_or(&[]);
        let k = b.len().min(24);
        n[..k].copy_from_slice(&b[..k]);
        Name(n)
    }

    /// As text (lossy).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(24);
        String::from_utf8_lossy(&self.0[..end])
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// One event: when (trace clock ns) and what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

fn int(b: &[u8], f: &Field) -> Option<i64> {
    let s = b.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 => i64::from(s[0] as i8),
        2 => i64::from(i16::from_le_bytes(s.try_into().ok()?)),
        4 => i64::from(i32::from_le_bytes(s.try_into().ok()?)),
        8 => i64::from_le_bytes(s.try_into().ok()?),
        _ => return None,
    })
}

fn text(b: &[u8], f: &Field) -> Option<Name> {
    if f.data_loc {
        let loc = int(b, f)? as u32;
        let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        return Some(Name::new(b.get(off..off + len)?));
    }
    Some(Name::new(b.get(f.offset..f.offset + f.size)?))
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
            ("sched", "sched_waking") | ("sched", "sched_wakeup") => {
                Layout::Waking([get("comm")?, get("pid")?])
            }
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
