//! The in-kernel half of `--trace`'s flight recorder: loads bpf/flight.bpf.c (embedded, built
//! by scripts/build-bpf.sh), attaches its one program to every traced tracepoint and reads
//! each measured CPU's overwrite ring through a read-only mapping: no system call per event,
//! and nothing on the CPUs not measured. The records are the tracepoints' own, decoded by the
//! same format files as tracefs pages. Nothing is pinned: the programs go with the process.

use crate::format::{parse_format, Format};
use latlab_core::sys::shared::SharedView;
use std::path::Path;

/// The object, as scripts/build-bpf.sh built it from bpf/flight.bpf.c (one for every kernel:
/// it copies records whole, whatever their header).
static OBJECT: &[u8] = aya::include_bytes_aligned!("flight.bpf.o");

/// `DATA`, `NAME_AT`, `MAX_CPUS` and `MAX_EVENTS` of bpf/flight.h.
const DATA: usize = 80;
#[cfg(test)]
const NAME_AT: usize = 64;
const MAX_CPUS: usize = 4096;
const MAX_EVENTS: usize = 32;
/// `struct config`.
const CONFIG: usize = 16 + 8 * MAX_EVENTS;
/// `struct slot` and `struct head` of bpf/flight.h.
const SLOT: usize = 128;
const HEAD: usize = 64;

/// The programs' names in the kernel (`restore` looks for them): program K is attached to
/// the K-th tracepoint traced.
pub fn programs() -> impl Iterator<Item = String> {
    (0..MAX_EVENTS).map(|k| format!("latlab_fl_{k}"))
}

/// Slots per measured CPU (128 bytes each: 4 MiB), a power of two: at the reader's 10 ms
/// pace, 3 million events a second on one CPU before any is overwritten unread.
pub const RING: u32 = 32768;

/// Slots read from one ring before the reader turns to the next (a quarter ring).
const PER_PASS: u64 = RING as u64 / 4;

/// The program, attached, and the measured CPUs' rings.
pub struct Rings {
    /// The programs' attachments, detached together on drop.
    links: Vec<aya::programs::trace_point::TracePointLink>,
    /// Holds the programs and maps.
    _bpf: aya::Ebpf,
    slots: SharedView,
    heads: SharedView,
    ring: u32,
    /// Per ring: the next event to read.
    next: Vec<u64>,
}

/// What one pass over a ring did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Events overwritten (or torn) before they were read.
    pub lost: u64,
    /// Whether it stopped with more to read.
    pub more: bool,
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// The layouts of `events` (`sys/name`) under tracefs `root`, each checked to fit a slot.
fn formats(root: &Path, events: &[String]) -> Result<Vec<(String, Format)>, String> {
    let mut v = Vec::new();
    for e in events {
        let p = root.join("events").join(e).join("format");
        let text = std::fs::read_to_string(&p).map_err(|x| err(&p.display().to_string(), x))?;
        let f = parse_format(&text).map_err(|x| err(&p.display().to_string(), x))?;
        let end = record_len(&f);
        let at = |n: &str| f.field(n).map(|x| (x.offset, x.size));
        if at("common_type") != Some((0, 2)) || at("common_pid") != Some((4, 4)) {
            return Err(format!(
                "tracepoint {e}: common_type and common_pid are not at offsets 0 and 4"
            ));
        }
        if end > DATA {
            return Err(format!(
                "tracepoint {e}: its record is {end} bytes, the in-kernel recorder keeps {DATA}"
            ));
        }
        v.push((e.clone(), f));
    }
    if v.len() > MAX_EVENTS {
        return Err(format!(
            "{} tracepoints to trace, the in-kernel recorder has {MAX_EVENTS} programs",
            v.len()
        ));
    }
    Ok(v)
}

/// The bytes of a record before any dynamic data (where its last field ends).
fn record_len(f: &Format) -> usize {
    f.fields
        .iter()
        .map(|f| f.offset + f.size)
        .max()
        .unwrap_or(0)
}

/// `struct config` of bpf/flight.h for `formats`.
fn config(ring: u32, formats: &[(String, Format)]) -> [u8; CONFIG] {
    let irq = formats
        .iter()
        .position(|(e, _)| e == "irq/irq_handler_entry");
    let (prog, loc) = irq
        .and_then(|k| Some((k, formats[k].1.field("name").filter(|n| n.data_loc)?.offset)))
        .map_or((0u32, u32::MAX), |(k, off)| (k as u32 + 1, off as u32));
    let mut c = [0u8; CONFIG];
    c[0..4].copy_from_slice(&ring.to_ne_bytes());
    c[4..8].copy_from_slice(&prog.to_ne_bytes());
    c[8..12].copy_from_slice(&loc.to_ne_bytes());
    let lens = 16 + 4 * MAX_EVENTS;
    for (k, (_, f)) in formats.iter().enumerate().take(MAX_EVENTS) {
        c[16 + 4 * k..20 + 4 * k].copy_from_slice(&u32::from(f.id).to_ne_bytes());
        let len = (record_len(f) as u32).clamp(8, DATA as u32);
        c[lens + 4 * k..lens + 4 + 4 * k].copy_from_slice(&len.to_ne_bytes());
    }
    c
}

/// The object's array map `name`.
fn array<'a, V: aya::Pod>(
    bpf: &'a mut aya::Ebpf,
    name: &str,
) -> Result<aya::maps::Array<&'a mut aya::maps::MapData, V>, String> {
    let m = bpf
        .map_mut(name)
        .ok_or_else(|| format!("the BPF object has no map {name}"))?;
    aya::maps::Array::try_from(m).map_err(|e| err(name, e))
}

/// A length rounded up to whole pages (what a mapping covers).
fn pages(len: usize) -> usize {
    len.div_ceil(4096) * 4096
}

impl Rings {
    /// Loads the program, gives `cpus` a ring of `ring` slots each and attaches the program to
    /// `events` (`sys/name`, layouts under tracefs `root`). Why not, where it cannot.
    pub fn start(
        root: &Path,
        events: &[String],
        cpus: &[usize],
        ring: u32,
    ) -> Result<Rings, String> {
        if !ring.is_power_of_two() || cpus.is_empty() {
            return Err(format!("{ring} slots for {} CPUs", cpus.len()));
        }
        if let Some(c) = cpus.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(format!(
                "CPU {c}: the in-kernel recorder reaches CPU {}",
                MAX_CPUS - 1
            ));
        }
        let formats = formats(root, events)?;
        let n = cpus.len() as u32;
        let mut bpf = aya::EbpfLoader::new()
            .btf(None)
            .set_max_entries("slots", n * ring)
            .set_max_entries("heads", n)
            .load(OBJECT)
            .map_err(|e| err("loading the BPF object", e))?;
        array::<[u8; CONFIG]>(&mut bpf, "settings")?
            .set(0, config(ring, &formats), 0)
            .map_err(|e| err("writing the settings", e))?;
        let mut index = array::<u32>(&mut bpf, "rings")?;
        for (i, &c) in cpus.iter().enumerate() {
            index
                .set(c as u32, i as u32 + 1, 0)
                .map_err(|e| err("writing the CPUs' rings", e))?;
        }
        let view = |bpf: &aya::Ebpf, name: &str, len: usize| -> Result<SharedView, String> {
            let m = bpf
                .map(name)
                .ok_or_else(|| format!("the BPF object has no map {name}"))?;
            let data = match m {
                aya::maps::Map::Array(d) => d,
                _ => return Err(format!("map {name} is not an array")),
            };
            SharedView::map(std::os::fd::AsFd::as_fd(data.fd()), pages(len))
                .map_err(|e| err(&format!("mapping {name}"), e))
        };
        let slots = view(&bpf, "slots", n as usize * ring as usize * SLOT)?;
        let heads = view(&bpf, "heads", n as usize * HEAD)?;
        let mut links = Vec::with_capacity(formats.len());
        for ((e, _), name) in formats.iter().zip(programs()) {
            let prog: &mut aya::programs::TracePoint = bpf
                .program_mut(&name)
                .ok_or_else(|| format!("the BPF object has no program {name}"))?
                .try_into()
                .map_err(|x| err(&name, x))?;
            prog.load().map_err(|x| {
                let why = err(&format!("loading {name}"), x);
                super::keep_log(&why);
                why
            })?;
            let (sys, tp) = e.split_once('/').unwrap_or((e, ""));
            let id = prog
                .attach(sys, tp)
                .map_err(|x| err(&format!("attaching {name} to {sys}:{tp}"), x))?;
            links.push(prog.take_link(id).map_err(|x| err(&name, x))?);
        }
        Ok(Rings {
            links,
            _bpf: bpf,
            slots,
            heads,
            ring,
            next: vec![0; cpus.len()],
        })
    }

    /// Hands `f` each event ring `i` holds that was not read yet (time, record), at most
    /// [`PER_PASS`], stopping at one still being written.
    pub fn read(&mut self, i: usize, mut f: impl FnMut(u64, &[u8])) -> Pass {
        let mut pass = Pass::default();
        let (Some(head), Some(next)) = (self.heads.load_u64(i * HEAD), self.next.get_mut(i)) else {
            return pass;
        };
        let ring = u64::from(self.ring);
        // Half a ring behind: events come faster than they are read (a flood of interrupts).
        // The newest quarter is read, so that spikes as they come have their windows, and
        // what is passed over is counted lost, never waited for.
        if head.saturating_sub(*next) > ring / 2 {
            pass.lost += head - *next - ring / 4;
            *next = head - ring / 4;
        }
        // The slot's time stamp and record (not its padding).
        let mut slot = [0u8; 16 + DATA];
        let end = head.min(*next + PER_PASS);
        while *next < end {
            let n = *next;
            let off = (i * self.ring as usize + (n % ring) as usize) * SLOT;
            let seq = self.slots.load_u64(off).unwrap_or(0);
            if seq != n + 1 {
                // Being written (a writer finishes in microseconds), unless far behind the
                // head: then overwritten since, or a writer that never finished.
                if seq <= n && head - n < ring / 2 {
                    return pass;
                }
                pass.lost += 1;
                *next += 1;
                continue;
            }
            let ok = self.slots.copy(off, &mut slot);
            *next += 1;
            if !ok || self.slots.load_u64(off) != Some(seq) {
                pass.lost += 1;
                continue;
            }
            let ts = u64::from_ne_bytes(slot[8..16].try_into().unwrap_or_default());
            f(ts, &slot[16..]);
        }
        pass.more = *next < head;
        pass
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        super::detach(std::mem::take(&mut self.links));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(name: &str, fields: &[(&str, usize, usize, bool)]) -> Format {
        let mut t = format!(
            "name: {name}\nID: 42\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t\
             size:2;\tsigned:0;\n"
        );
        for (f, o, s, loc) in fields {
            let ty = if *loc { "__data_loc char[]" } else { "int" };
            t.push_str(&format!(
                "\tfield:{ty} {f};\toffset:{o};\tsize:{s};\tsigned:1;\n"
            ));
        }
        parse_format(&t).unwrap()
    }

    #[test]
    fn the_irq_name_is_found_and_a_record_too_long_is_refused() {
        let irq = format(
            "irq_handler_entry",
            &[("irq", 8, 4, false), ("name", 12, 4, true)],
        );
        let other = format("softirq_entry", &[("vec", 8, 4, false)]);
        let c = config(
            RING,
            &[
                ("irq/softirq_entry".into(), other),
                ("irq/irq_handler_entry".into(), irq),
            ],
        );
        let word = |c: &[u8], i: usize| u32::from_ne_bytes(c[i..i + 4].try_into().unwrap());
        assert_eq!(word(&c, 0), RING);
        // Program 1 (+ 1) has irq_handler_entry, whose name's location is at 12.
        assert_eq!(word(&c, 4), 2);
        assert_eq!(word(&c, 8), 12);
        assert_eq!((word(&c, 16), word(&c, 20)), (42, 42));
        // Each record's own bytes are copied: up to its last field.
        assert_eq!(
            (word(&c, 16 + 4 * MAX_EVENTS), word(&c, 20 + 4 * MAX_EVENTS)),
            (12, 16)
        );
        let none = config(RING, &[]);
        assert_eq!(word(&none, 4), 0);
        const { assert!(NAME_AT < DATA && NAME_AT.is_power_of_two()) };

        let d = tempfile::tempdir().unwrap();
        let ev = d.path().join("events/x/big");
        std::fs::create_dir_all(&ev).unwrap();
        std::fs::write(
            ev.join("format"),
            "name: big\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\t\
             signed:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\t\
             field:char s[80];\toffset:8;\tsize:80;\tsigned:0;\n",
        )
        .unwrap();
        let e = formats(d.path(), &["x/big".into()]).unwrap_err();
        assert!(e.contains("88 bytes"), "{e}");
        assert!(formats(d.path(), &["x/none".into()]).is_err());
    }
}
