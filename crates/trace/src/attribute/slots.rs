//! The table of a window's tasks the replay charges time to: a slot per pid, found by open
//! addressing, its memory kept from window to window (a replay attributes thousands).

use crate::event::{Kind, Name};

/// The tasks of one window, each in a slot of its own: the latest name and priority the
/// window's switches give it (a switch put back by `repaired` names nobody), and the time
/// charged to it. Stretches are charged by slot; names are settled after the replay.
#[derive(Default)]
pub(super) struct Slots {
    /// Each pid's slot: open addressing on the pid's low bits (pids come in runs), an entry
    /// (generation, pid, slot) taken when stamped with this window's generation, so a new
    /// window empties the table by counting one up.
    table: Vec<(u32, i32, u32)>,
    generation: u32,
    /// (pid, name, priority, time as another thread, own time)
    pub(super) tasks: Vec<(i32, Name, i32, u64, u64)>,
}

thread_local! {
    pub(super) static SLOTS: std::cell::Cell<Slots> = std::cell::Cell::new(Slots::default());
}

impl Slots {
    /// Empties the slots for a new window, keeping their memory.
    pub(super) fn clear(&mut self) {
        self.tasks.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 || self.table.is_empty() {
            self.table = vec![(0, 0, 0); self.table.len().max(256)];
            self.generation = 1;
        }
    }

    /// The slot of `pid`, a new one the first time this window sees it.
    pub(super) fn slot(&mut self, pid: i32) -> u32 {
        let mask = self.table.len() - 1;
        let mut i = pid as u32 as usize & mask;
        loop {
            let e = self.table[i];
            if e.0 != self.generation {
                let n = self.tasks.len() as u32;
                self.table[i] = (self.generation, pid, n);
                self.tasks.push((pid, Name::new(b"?"), 120, 0, 0));
                if self.tasks.len() * 2 > self.table.len() {
                    self.grow();
                }
                return n;
            }
            if e.1 == pid {
                return e.2;
            }
            i = (i + 1) & mask;
        }
    }

    /// Twice the table, the slots of this window put back in it.
    fn grow(&mut self) {
        self.table = vec![(0, 0, 0); self.table.len() * 2];
        let mask = self.table.len() - 1;
        for (n, t) in self.tasks.iter().enumerate() {
            let mut i = t.0 as u32 as usize & mask;
            while self.table[i].0 == self.generation {
                i = (i + 1) & mask;
            }
            self.table[i] = (self.generation, t.0, n as u32);
        }
    }

    /// `pid` seen in a switch as `comm` at `prio` (the name kept unless `comm` is nobody's).
    fn seen(&mut self, pid: i32, comm: Name, prio: i32, nobody: Name) -> u32 {
        let i = self.slot(pid);
        if comm != nobody {
            let t = &mut self.tasks[i as usize];
            (t.1, t.2) = (comm, prio);
        }
        i
    }

    /// The tasks a switch names (`kind`, if a switch), seen; the slot of the one switched in.
    pub(super) fn switch(&mut self, kind: &Kind, nobody: Name) -> Option<u32> {
        let Kind::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            next_comm,
            next_pid,
            next_prio,
            ..
        } = *kind
        else {
            return None;
        };
        self.seen(prev_pid, prev_comm, prev_prio, nobody);
        Some(self.seen(next_pid, next_comm, next_prio, nobody))
    }

    /// The task in slot `i`: its name, pid and priority.
    pub(super) fn task(&self, i: u32) -> (Name, i32, i32) {
        let t = &self.tasks[i as usize];
        (t.1, t.0, t.2)
    }
}
