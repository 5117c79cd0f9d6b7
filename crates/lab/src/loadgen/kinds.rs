//! The load bodies: each runs until its stop flag is set and reports what it achieved.

use super::hackbench::Hackbench;
use super::spec::{LoadKind, LoadSpec};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub(crate) use latlab_core::result::LoadReport;

pub(super) fn report(
    spec: &LoadSpec,
    count: u64,
    unit: &str,
    t0: Instant,
    note: Option<String>,
) -> LoadReport {
    let seconds = t0.elapsed().as_secs_f64();
    LoadReport {
        spec: spec.text.clone(),
        kind: spec.kind.to_string(),
        count,
        unit: unit.into(),
        seconds,
        rate_per_s: if seconds > 0.0 {
            count as f64 / seconds
        } else {
            0.0
        },
        note,
        cpus: None,
        stopped_s: None,
    }
}

/// What a kind's reports count.
pub(crate) fn unit_of(kind: LoadKind) -> &'static str {
    match kind {
        LoadKind::Hackbench => "messages",
        LoadKind::Cpu | LoadKind::Exec => "loops",
        LoadKind::Memory | LoadKind::Io | LoadKind::Net => "bytes",
        LoadKind::Build => "builds",
    }
}

/// The hackbench configuration a spec describes.
pub(crate) fn hackbench_of(spec: &LoadSpec) -> Hackbench {
    Hackbench {
        groups: spec.num("groups", 10).unwrap_or(10) as usize,
        fds: spec.num("fds", 20).unwrap_or(20) as usize,
        loops: spec.num("loops", 100).unwrap_or(100) as usize,
        datasize: spec.num("datasize", 100).unwrap_or(100) as usize,
        threads: spec.str("mode", "process") == "thread",
        pipes: spec.str("ipc", "socket") == "pipe",
    }
}

/// Runs `spec` until `stop` is set, keeping `progress` at the count done so far (what its
/// report will count), for the reports a worker prints while it runs.
pub(crate) fn run(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &Arc<AtomicU64>,
) -> std::io::Result<LoadReport> {
    let t0 = Instant::now();
    match spec.kind {
        LoadKind::Hackbench => hackbench_load(spec, stop, progress, t0),
        LoadKind::Cpu => Ok(cpu_load(spec, stop, progress, t0)),
        LoadKind::Memory => Ok(memory_load(spec, stop, progress, t0)),
        LoadKind::Io => io_load(spec, stop, progress, t0),
        LoadKind::Net => net_load(spec, stop, progress, t0),
        LoadKind::Build => super::build::run(spec, stop, progress)
            .map(|(builds, note)| report(spec, builds, "builds", t0, Some(note))),
        LoadKind::Exec => exec_load(spec, stop, progress, t0),
    }
}

/// Hackbench runs one after the other, counted in messages.
fn hackbench_load(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &AtomicU64,
    t0: Instant,
) -> std::io::Result<LoadReport> {
    let h = hackbench_of(spec);
    let mut runs = 0u64;
    // A run in flight when the stop comes is abandoned (its tasks die with this
    // process), so a long run never holds the measurement past its end.
    while !stop.load(Ordering::Relaxed) {
        if h.run_once_unless(stop)?.is_some() {
            runs += 1;
            progress.store(runs * h.messages(), Ordering::Relaxed);
        }
    }
    let mut r = report(spec, runs * h.messages(), "messages", t0, None);
    r.note = Some(format!("{runs} hackbench runs"));
    Ok(r)
}

/// `threads=` spinning threads at `policy=`/`prio=`, counted in loops of 1024 steps.
fn cpu_load(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &Arc<AtomicU64>,
    t0: Instant,
) -> LoadReport {
    let policy: latlab_core::config::Policy = spec
        .str("policy", "other")
        .parse()
        .unwrap_or(latlab_core::config::Policy::Other);
    let prio = spec
        .opts
        .get("prio")
        .and_then(|p| p.parse().ok())
        .unwrap_or(if policy.is_rt() { 1 } else { 0 });
    on_threads(spec, stop, progress, move |stop, total| {
        // The worker is its own process: a refusal is said on its stderr.
        if let Err(e) = latlab_core::sys::sched::set_policy(policy, prio) {
            latlab_core::note!("latlab: cpu load thread: {policy} {prio} refused: {e}");
        }
        let mut x = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..1024 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            total.fetch_add(1024, Ordering::Relaxed);
        }
    });
    report(spec, progress.load(Ordering::Relaxed), "loops", t0, None)
}

/// `threads=` threads each copying half of a `size=` buffer onto the other, counted in bytes.
fn memory_load(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &Arc<AtomicU64>,
    t0: Instant,
) -> LoadReport {
    let size = spec.num("size", 256 << 20).unwrap_or(256 << 20) as usize;
    on_threads(spec, stop, progress, move |stop, total| {
        let mut buf = vec![1u8; size];
        let half = size / 2;
        while !stop.load(Ordering::Relaxed) {
            let (a, b) = buf.split_at_mut(half);
            b[..half].copy_from_slice(&a[..half]);
            std::hint::black_box(&buf);
            total.fetch_add(2 * half as u64, Ordering::Relaxed);
        }
    });
    report(spec, progress.load(Ordering::Relaxed), "bytes", t0, None)
}

/// Runs `body` on `threads=` threads (1 unless said) until they all end, each with the stop
/// flag and the count they add to.
fn on_threads(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &Arc<AtomicU64>,
    body: impl Fn(Arc<AtomicBool>, Arc<AtomicU64>) + Clone + Send + 'static,
) {
    let n = spec.num("threads", 1).unwrap_or(1) as usize;
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let (stop, total, body) = (stop.clone(), progress.clone(), body.clone());
            std::thread::spawn(move || body(stop, total))
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
}

/// `cmd=` run again and again, each to its end (or the stop), counted in loops.
fn exec_load(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &AtomicU64,
    t0: Instant,
) -> std::io::Result<LoadReport> {
    let cmd = spec.str("cmd", "true");
    let mut loops = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut c = latlab_core::sys::process::spawn_command(&cmd)?;
        let group = c.id() as i32;
        latlab_core::sys::process::track_group(group);
        // Poll, so a stop does not wait for a long command to end by itself.
        loop {
            if let Ok(Some(_)) = c.try_wait() {
                loops += 1;
                progress.store(loops, Ordering::Relaxed);
                // Whatever the command left running goes with it: in its group, or
                // adopted by this worker (a subreaper) from a session of its own.
                latlab_core::sys::process::signal_group(group, libc::SIGKILL);
                end_strays();
                break;
            }
            if stop.load(Ordering::Relaxed) {
                latlab_core::sys::process::signal_group(group, libc::SIGKILL);
                let _ = c.wait();
                end_strays();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    latlab_core::sys::process::track_group(0);
    Ok(report(spec, loops, "loops", t0, None))
}

fn io_load(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &AtomicU64,
    t0: Instant,
) -> std::io::Result<LoadReport> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let block = spec.num("block", 1 << 20).unwrap_or(1 << 20) as usize;
    let direct = spec.str("direct", "0") == "1";
    let mut note = None;
    let (file, len) = match spec.opts.get("path") {
        Some(p) => {
            // Never waits at open (a FIFO swapped in since the check is not waited on).
            let open = |flags| {
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(flags | libc::O_NONBLOCK)
                    .open(p)
            };
            let f = if direct {
                open(libc::O_DIRECT).or_else(|e| {
                    note = Some(format!(
                        "O_DIRECT refused ({e}); reading through the page cache"
                    ));
                    open(0)
                })?
            } else {
                open(0)?
            };
            let mut len = f.metadata()?.len();
            if len == 0 {
                // Block devices report 0: ask for their size.
                len = std::fs::read_to_string(format!(
                    "/sys/class/block/{}/size",
                    std::path::Path::new(p)
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                ))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .map_or(0, |sectors| sectors * 512);
            }
            (f, len)
        }
        None => {
            // An unlinked scratch file: it vanishes whatever happens to latlab.
            let size = spec.num("size", 64 << 20).unwrap_or(64 << 20) as usize;
            let dir = std::env::var_os("TMPDIR")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| "/var/tmp".into());
            let path = dir.join(format!("latlab-io-{}", std::process::id()));
            let mut f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            let _ = std::fs::remove_file(&path);
            let chunk = vec![0xa5u8; 1 << 20];
            let mut left = size;
            while left > 0 {
                let n = left.min(chunk.len());
                f.write_all(&chunk[..n])?;
                left -= n;
            }
            f.sync_all()?;
            note = Some(format!("{} MiB scratch file, page cache", size >> 20));
            (f, size as u64)
        }
    };
    let layout = std::alloc::Layout::from_size_align(block, 4096)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut buf = vec![0u8; block + 4096];
    let off = buf.as_ptr().align_offset(layout.align());
    let aligned = &mut buf[off..off + block];
    let (mut pos, mut total) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let n = file.read_at(aligned, pos)?;
        if n == 0 && pos == 0 {
            // Emptied since it was checked: nothing left to read, and no spinning on it.
            return Err(std::io::Error::other("the file is empty (nothing to read)"));
        }
        if n == 0 || (len > 0 && pos + n as u64 >= len) {
            pos = 0;
        } else {
            pos += n as u64;
        }
        total += n as u64;
        progress.store(total, Ordering::Relaxed);
    }
    Ok(report(spec, total, "bytes", t0, note))
}

fn net_load(
    spec: &LoadSpec,
    stop: &Arc<AtomicBool>,
    progress: &AtomicU64,
    t0: Instant,
) -> std::io::Result<LoadReport> {
    let size = spec.num("size", 64 << 10).unwrap_or(64 << 10) as usize;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let sink = std::thread::spawn(move || -> u64 {
        let Ok((mut s, _)) = listener.accept() else {
            return 0;
        };
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    let mut out = std::net::TcpStream::connect(addr)?;
    let buf = vec![0x42u8; size];
    while !stop.load(Ordering::Relaxed) {
        if out.write_all(&buf).is_err() {
            break;
        }
        progress.fetch_add(buf.len() as u64, Ordering::Relaxed);
    }
    drop(out);
    let total = sink.join().unwrap_or(0);
    Ok(report(spec, total, "bytes", t0, None))
}

/// Kills and reaps what an `exec:` command left running outside its process group (a
/// `setsid` daemon this worker adopted as a subreaper); one syscall when there is none.
pub(super) fn end_strays() {
    let _ = latlab_core::sys::family::end_children(std::time::Duration::ZERO);
}
