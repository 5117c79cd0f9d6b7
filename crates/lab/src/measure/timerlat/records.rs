//! The records `latlab timerlat` reads from its instance's per-CPU raw buffers, decoded by
//! the layouts the running kernel describes (`events/*/*/format`): the tracer's own samples
//! (`ftrace/timerlat`: sequence number, context, latency), and for explanations the context
//! switches, the kernel's stacks and its accounting of interrupts, softirqs and NMIs
//! (`osnoise:*_noise`).

use latlab_core::error::{Error, Result};
use latlab_trace::event::{bytes, int, Decoder, Event, Name};
use latlab_trace::format::{parse_format, parse_header_page, Field, PageHeader};
use std::collections::HashMap;
use std::path::Path;

/// Where a sample was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// The timer interrupt's handler.
    Irq,
    /// The kernel's timerlat thread, once it ran.
    Thread,
    /// A user-space timerlat thread (`timerlat_fd`, newer kernels).
    User,
}

/// What the kernel accounted as noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Noise {
    /// A hardware interrupt or vector.
    Irq,
    /// A softirq.
    Softirq,
    /// An NMI.
    Nmi,
    /// Another thread (`osnoise:thread_noise`: `comm:pid`).
    Thread,
}

/// One decoded record.
#[derive(Debug, Clone)]
pub(crate) enum Rec {
    /// A timerlat sample.
    Sample {
        /// The period's number on its CPU (1 for the first).
        seq: u64,
        /// Where it was taken.
        ctx: Context,
        /// Its latency, ns.
        ns: u64,
    },
    /// An interrupt, softirq or NMI the kernel accounted (recorded at its end).
    Noise {
        /// Which.
        class: Noise,
        /// Its name (`local_timer:236`, `TIMER`).
        name: Name,
        /// How long it ran, ns.
        ns: u64,
    },
    /// The osnoise tracer's summary of one period on its CPU (`ftrace/osnoise`).
    Period {
        /// Noise in the period, ns.
        noise_ns: u64,
        /// The period's runtime, ns.
        runtime_ns: u64,
        /// Its largest single noise, ns.
        max_ns: u64,
        /// The kernel's counts: hardware, NMI, IRQ, softirq, thread.
        counts: [u64; 5],
    },
    /// One noise at or above `tracing_thresh` (`osnoise:sample_threshold`).
    Threshold {
        /// Its length, ns.
        ns: u64,
        /// Interferences the kernel saw during it (0: hardware noise).
        interference: u64,
    },
    /// A context switch, a kernel stack, or another event the trace decoder knows.
    Other(Event),
}

#[derive(Debug, Clone)]
enum Layout {
    Sample([Field; 3]),
    Noise(Noise, Option<Field>, Option<Field>, Field),
    Period(Box<[Field; 8]>),
    Threshold([Field; 2]),
    ThreadNoise([Field; 3]),
}

/// The layouts of every record latlab enabled.
#[derive(Debug, Clone)]
pub(crate) struct Layouts {
    /// The ring buffer's page layout.
    pub(crate) header: PageHeader,
    own: HashMap<u16, Layout>,
    dec: Decoder,
}

fn at(p: &Path, e: impl std::fmt::Display) -> Error {
    Error::Env(format!("timerlat: {}: {e}", p.display()))
}

impl Layouts {
    /// Learns the layouts under tracefs `root`: the sample's always (exit 3 naming it when the
    /// kernel lacks it), `explain`'s events when they exist.
    pub(crate) fn learn(root: &Path, explain: &[String]) -> Result<Layouts> {
        Layouts::learn_for(root, "ftrace/timerlat", explain)
    }

    /// As [`Layouts::learn`] for the tracer whose entry is `entry` (`ftrace/timerlat` or
    /// `ftrace/osnoise`, required), with `explain`'s events where they exist.
    pub(crate) fn learn_for(root: &Path, entry: &str, explain: &[String]) -> Result<Layouts> {
        let ev = root.join("events");
        let hp = ev.join("header_page");
        let header =
            parse_header_page(&latlab_trace::tracefs::read(&hp)?).map_err(|e| at(&hp, e))?;
        let format = |sys: &str, name: &str| -> Result<latlab_trace::format::Format> {
            let p = ev.join(sys).join(name).join("format");
            parse_format(&latlab_trace::tracefs::read(&p)?).map_err(|e| at(&p, e))
        };
        let mut own = HashMap::new();
        let get = |f: &latlab_trace::format::Format, n: &str| {
            f.field(n)
                .cloned()
                .ok_or_else(|| Error::Env(format!("timerlat: ftrace/{}: no field '{n}'", f.name)))
        };
        let (esys, ename) = entry.split_once('/').unwrap_or(("ftrace", entry));
        let f = format(esys, ename)?;
        let l = if ename == "osnoise" {
            let g = |n: &str| get(&f, n);
            Layout::Period(Box::new([
                g("noise")?,
                g("runtime")?,
                g("max_sample")?,
                g("hw_count")?,
                g("nmi_count")?,
                g("irq_count")?,
                g("softirq_count")?,
                g("thread_count")?,
            ]))
        } else {
            Layout::Sample([get(&f, "seqnum")?, get(&f, "context")?, get(&f, "timer_latency")?])
        };
        own.insert(f.id, l);
        let mut dec = Decoder::default();
        for e in explain {
            let Some((sys, name)) = e.split_once('/') else {
                continue;
            };
            let f = format(sys, name)?;
            if name == "sample_threshold" {
                own.insert(
                    f.id,
                    Layout::Threshold([get(&f, "duration")?, get(&f, "interference")?]),
                );
                continue;
            }
            if name == "thread_noise" {
                own.insert(
                    f.id,
                    Layout::ThreadNoise([get(&f, "comm")?, get(&f, "pid")?, get(&f, "duration")?]),
                );
                continue;
            }
            let class = match name {
                "irq_noise" => Some(Noise::Irq),
                "softirq_noise" => Some(Noise::Softirq),
                "nmi_noise" => Some(Noise::Nmi),
                _ => None,
            };
            match class {
                Some(c) => {
                    let l = Layout::Noise(
                        c,
                        f.field("desc").cloned(),
                        f.field("vector").cloned(),
                        get(&f, "duration")?,
                    );
                    own.insert(f.id, l);
                }
                None => dec
                    .learn(sys, &f)
                    .map_err(|e| Error::Env(format!("timerlat: {e}")))?,
            }
        }
        if explain.iter().any(|e| e.starts_with("sched/")) {
            // The stack the tracer prints at a thread sample over osnoise/print_stack.
            if let Ok(f) = format("ftrace", "kernel_stack") {
                let _ = dec.learn("ftrace", &f);
            }
        }
        Ok(Layouts { header, own, dec })
    }

    /// Decodes one record (None: a type not learned, or a record too short).
    pub(crate) fn decode(&self, ts: u64, b: &[u8]) -> Option<Rec> {
        let id = u16::from_le_bytes(b.get(0..2)?.try_into().ok()?);
        match self.own.get(&id) {
            Some(Layout::Sample(f)) => Some(Rec::Sample {
                seq: int(b, &f[0])? as u32 as u64,
                ctx: match int(b, &f[1])? {
                    0 => Context::Irq,
                    1 => Context::Thread,
                    _ => Context::User,
                },
                ns: int(b, &f[2])?.max(0) as u64,
            }),
            Some(Layout::Noise(class, desc, vector, dur)) => {
                let vec = vector.as_ref().and_then(|v| int(b, v));
                let name = match (class, desc.as_ref().and_then(|d| bytes(b, d))) {
                    (Noise::Softirq, _) => Name::new(
                        latlab_trace::event::softirq_name(vec.unwrap_or(0) as u32).as_bytes(),
                    ),
                    (_, Some(d)) => {
                        let d = d.split(|&c| c == 0).next().unwrap_or(&[]);
                        let text = match vec {
                            Some(v) => format!("{}:{v}", String::from_utf8_lossy(d)),
                            None => String::from_utf8_lossy(d).into_owned(),
                        };
                        Name::new(text.as_bytes())
                    }
                    (Noise::Nmi, None) => Name::new(b"nmi"),
                    (_, None) => Name::new(b"irq"),
                };
                Some(Rec::Noise {
                    class: *class,
                    name,
                    ns: int(b, dur)?.max(0) as u64,
                })
            }
            Some(Layout::Period(f)) => {
                let u = |k: usize| int(b, &f[k]).map(|v| v.max(0) as u64);
                Some(Rec::Period {
                    noise_ns: u(0)?,
                    runtime_ns: u(1)?,
                    max_ns: u(2)?,
                    counts: [u(3)?, u(4)?, u(5)?, u(6)?, u(7)?],
                })
            }
            Some(Layout::Threshold(f)) => Some(Rec::Threshold {
                ns: int(b, &f[0])?.max(0) as u64,
                interference: int(b, &f[1])?.max(0) as u64,
            }),
            Some(Layout::ThreadNoise(f)) => {
                let comm = bytes(b, &f[0])?;
                let comm = comm.split(|&c| c == 0).next().unwrap_or(&[]);
                let pid = int(b, &f[1])?;
                Some(Rec::Noise {
                    class: Noise::Thread,
                    name: Name::new(format!("{}:{pid}", String::from_utf8_lossy(comm)).as_bytes()),
                    ns: int(b, &f[2])?.max(0) as u64,
                })
            }
            None => self.dec.decode(ts, b).map(Rec::Other),
        }
    }
}

/// The per-CPU raw buffers of one instance, read without blocking and decoded by `layouts`.
pub(crate) struct Pipes {
    files: Vec<std::fs::File>,
    buf: Vec<u8>,
    /// The layouts records are decoded by.
    pub(crate) layouts: Layouts,
    /// Per pipe: events the kernel said it lost before a page.
    pub(crate) missed: Vec<u64>,
    /// Per pipe: pages that did not parse (their records up to the fault are kept).
    pub(crate) bad_pages: Vec<u64>,
}

impl Pipes {
    /// Opens `paths` (`per_cpu/cpuN/trace_pipe_raw`), non-blocking.
    pub(crate) fn open(paths: &[std::path::PathBuf], layouts: Layouts) -> Result<Pipes> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut files = Vec::new();
        for p in paths {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(p)
                .map_err(|e| at(p, e))?;
            files.push(f);
        }
        Ok(Pipes {
            buf: vec![0u8; layouts.header.page_size.max(4096)],
            missed: vec![0; files.len()],
            bad_pages: vec![0; files.len()],
            files,
            layouts,
        })
    }

    /// Reads every page each buffer holds now (at most a buffer's worth per pipe, so one busy
    /// CPU cannot hold the others), handing each record to `each` with its pipe's index;
    /// returns the number of pages read.
    pub(crate) fn drain(&mut self, each: &mut dyn FnMut(usize, u64, Rec)) -> u64 {
        use std::io::Read;
        let mut pages = 0;
        let mut recs: Vec<(u64, Rec)> = Vec::new();
        for (i, f) in self.files.iter_mut().enumerate() {
            for _ in 0..1024 {
                let n = match f.read(&mut self.buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break, // WouldBlock: empty for now
                };
                pages += 1;
                let layouts = &self.layouts;
                match latlab_trace::page::walk(&self.buf[..n], &layouts.header, |ts, b| {
                    recs.extend(layouts.decode(ts, b).map(|r| (ts, r)));
                }) {
                    Ok(info) => self.missed[i] += info.missed,
                    Err(_) => self.bad_pages[i] += 1,
                }
                for (ts, r) in recs.drain(..) {
                    each(i, ts, r);
                }
            }
        }
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u16, len: usize, fill: impl Fn(&mut [u8])) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0..2].copy_from_slice(&id.to_le_bytes());
        fill(&mut b);
        b
    }

    /// A ring-buffer page holding `recs`, 1 µs apart from `ts`.
    fn page(ts: u64, recs: &[Vec<u8>]) -> Vec<u8> {
        let mut data = Vec::new();
        for r in recs {
            assert!(r.len() % 4 == 0 && r.len() <= 112);
            let head = ((1000u32) << 5) | (r.len() / 4) as u32;
            data.extend_from_slice(&head.to_le_bytes());
            data.extend_from_slice(r);
        }
        let mut p = vec![0u8; 4096];
        p[0..8].copy_from_slice(&ts.to_le_bytes());
        p[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        p[16..16 + data.len()].copy_from_slice(&data);
        p
    }

    #[test]
    fn samples_and_noise_decode_by_the_rt_kernels_layouts() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/timerlat");
        let l = Layouts::learn(&root, &["osnoise/irq_noise".to_string()]).unwrap();
        let irq = record(17, 32, |b| {
            b[12..16].copy_from_slice(&7u32.to_le_bytes());
            b[16..20].copy_from_slice(&0i32.to_le_bytes());
            b[24..32].copy_from_slice(&4_321u64.to_le_bytes());
        });
        let thread = record(17, 32, |b| {
            b[12..16].copy_from_slice(&7u32.to_le_bytes());
            b[16..20].copy_from_slice(&1i32.to_le_bytes());
            b[24..32].copy_from_slice(&30_000_123u64.to_le_bytes());
        });
        let noise = record(449, 56, |b| {
            b[24..32].copy_from_slice(&2_000u64.to_le_bytes());
            // desc: 16 bytes at offset 40 (length << 16 | offset).
            b[32..36].copy_from_slice(&((16u32 << 16) | 40).to_le_bytes());
            b[36..40].copy_from_slice(&236i32.to_le_bytes());
            b[40..51].copy_from_slice(b"local_timer");
        });
        let p = page(5_000_000, &[irq, noise, thread]);
        let mut got = Vec::new();
        latlab_trace::page::walk(&p, &l.header, |ts, b| got.push((ts, l.decode(ts, b))))
            .unwrap();
        assert_eq!(got.len(), 3);
        assert!(matches!(
            got[0].1,
            Some(Rec::Sample { seq: 7, ctx: Context::Irq, ns: 4_321 })
        ));
        match &got[1].1 {
            Some(Rec::Noise { class, name, ns }) => {
                assert_eq!((*class, name.as_str().as_ref(), *ns), (Noise::Irq, "local_timer:236", 2_000));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            got[2].1,
            Some(Rec::Sample { seq: 7, ctx: Context::Thread, ns: 30_000_123 })
        ));
        // The page's records are 1 µs apart in time.
        assert_eq!(got[2].0 - got[0].0, 2_000);
    }

    #[test]
    fn a_kernel_without_the_sample_event_is_exit_3_naming_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("events")).unwrap();
        std::fs::copy(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/timerlat/events/header_page"),
            d.path().join("events/header_page"),
        )
        .unwrap();
        let e = Layouts::learn(d.path(), &[]).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("ftrace/timerlat"), "{e}");
    }
}
