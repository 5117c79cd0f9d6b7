//! The reader's pass over one of the in-kernel recorder's rings: decodes what it holds past
//! the last pass into the CPU's log, in time order (an event from an interrupt can take the
//! slot after one it interrupted and be earlier), counting what was overwritten unread.

use super::{now_mono, CpuLog, MAX_LOSSES};
use crate::bpf::flight::Rings;
use crate::event::Decoder;
use std::sync::Mutex;

/// Reads ring `i` into `log`; true when it stopped with more left to read.
pub(super) fn drain(
    rings: &mut Rings,
    i: usize,
    dec: &Decoder,
    log: &Mutex<CpuLog>,
    (keep_ns, hold): (u64, u64),
) -> bool {
    let before = now_mono();
    let mut batch = Vec::new();
    let pass = rings.read(i, |ts, rec| {
        if let Some(e) = dec.decode(ts, rec) {
            batch.push(e);
        }
    });
    batch.sort_by_key(|e| e.ts);
    let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
    if pass.lost > 0 {
        l.lost += pass.lost;
        if l.losses.len() < MAX_LOSSES {
            let at = batch.first().map_or(before, |e| e.ts);
            l.losses.push((at, pass.lost));
        }
    }
    // Never before what the log holds: the two of a pair split across passes stay in order.
    let last = l.events.back().map_or(0, |e| e.ts);
    for mut e in batch {
        e.ts = e.ts.max(last);
        l.push(e, keep_ns, hold);
    }
    if !pass.more {
        l.complete_to = l.complete_to.max(before);
    } else if let Some(e) = l.events.back() {
        // Behind (a flood): read in order, so what came before the newest event read was read,
        // or counted lost where the pass skipped ahead.
        l.complete_to = l.complete_to.max(e.ts);
    }
    pass.more
}
