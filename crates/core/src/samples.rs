//! The raw sample log (`--samples`): a compact binary format (docs/samples-format.md), the
//! writer thread that drains the measuring threads' lock-free rings into it, and its reader.
//!
//! Layout, all little-endian:
//! header  `b"LATLABSM"`, u32 version (1), u32 series count, then per series
//!         u16 name length, name bytes (UTF-8), i32 cpu (-1: not pinned);
//! blocks  u32 series index, u32 n, n × u64 latency ns (in loop order within a series);
//! trailer u32 0xFFFF_FFFF, u32 series count, per series u64 lost samples.
//! A file without a trailer was cut short (crash); every complete block is still readable.

use crate::error::{Error, Result};
use rtrb::{Consumer, Producer, RingBuffer};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// File magic.
pub const MAGIC: &[u8; 8] = b"LATLABSM";
/// Format version.
pub const VERSION: u32 = 1;
const TRAILER: u32 = 0xFFFF_FFFF;
/// Most samples in one block.
const MAX_BLOCK: usize = 4096;
/// How long the end of a run waits for a log's reader (a FIFO) that stopped reading.
const READER_GRACE: Duration = Duration::from_millis(500);
/// Largest sample log `latlab samples` and `compare` read (it is read whole: 8 bytes a sample).
pub(crate) const MAX_LOG_BYTES: u64 = 4 << 30;

/// A series as named in the log header.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesHeader {
    /// Series name (`T0`).
    pub name: String,
    /// Pinned CPU, if any.
    pub cpu: Option<usize>,
}

/// Creates one ring per series: producers go to the measuring threads, consumers to the writer.
pub fn rings(n: usize, capacity: usize) -> (Vec<Producer<u64>>, Vec<Consumer<u64>>) {
    (0..n).map(|_| RingBuffer::new(capacity)).unzip()
}

/// The writer thread's handle: stop it with the lost-sample counts to finish the file.
pub struct SampleWriter {
    done: Arc<AtomicBool>,
    lost: Arc<std::sync::Mutex<Vec<u64>>>,
    handle: std::thread::JoinHandle<std::io::Result<u64>>,
    path: String,
}

impl SampleWriter {
    /// Creates the file, writes the header and starts draining `consumers` on a normal-priority
    /// thread. Fails (naming the path) if the file cannot be created.
    pub fn start(
        path: &Path,
        series: &[SeriesHeader],
        consumers: Vec<Consumer<u64>>,
    ) -> Result<SampleWriter> {
        let pstr = path.display().to_string();
        // Never through a symlink someone planted at the path.
        let mut out = crate::output::create_nofollow(path)
            .map_err(|e| Error::Usage(format!("--samples {pstr}: {e}")))?;
        let mut head = Vec::new();
        write_header(&mut head, series).map_err(|e| Error::io(&pstr, e))?;
        let t0 = Instant::now();
        crate::output::write_patiently(&mut out, &head, &|| t0.elapsed() > READER_GRACE)
            .map_err(|e| Error::Usage(format!("--samples {pstr}: {e}")))?;
        let done = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(std::sync::Mutex::new(vec![0u64; series.len()]));
        let (d, l) = (done.clone(), lost.clone());
        let handle = std::thread::Builder::new()
            .name("latlab-samples".into())
            .stack_size(crate::sys::mem::HELPER_STACK)
            .spawn(move || drain(out, consumers, d, l))
            .map_err(|e| crate::rt::start_error("cannot start the sample writer thread", e))?;
        Ok(SampleWriter {
            done,
            lost,
            handle,
            path: pstr,
        })
    }

    /// Drains what is left, writes the trailer with `lost` per series and closes the file.
    /// Returns the number of samples written.
    pub fn finish(self, lost: &[u64]) -> Result<u64> {
        if let Ok(mut l) = self.lost.lock() {
            l.copy_from_slice(lost);
        }
        self.done.store(true, Ordering::Release);
        match self.handle.join() {
            Ok(r) => r.map_err(|e| Error::io(self.path, e)),
            Err(_) => Err(Error::Env(format!(
                "{}: sample writer thread panicked",
                self.path
            ))),
        }
    }
}

fn write_header(out: &mut Vec<u8>, series: &[SeriesHeader]) -> std::io::Result<()> {
    use std::io::Write;
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&(series.len() as u32).to_le_bytes())?;
    for s in series {
        let name = s.name.as_bytes();
        out.write_all(&(name.len() as u16).to_le_bytes())?;
        out.write_all(name)?;
        let cpu = s.cpu.map_or(-1i32, |c| c as i32);
        out.write_all(&cpu.to_le_bytes())?;
    }
    Ok(())
}

fn drain(
    mut out: File,
    mut consumers: Vec<Consumer<u64>>,
    done: Arc<AtomicBool>,
    lost: Arc<std::sync::Mutex<Vec<u64>>>,
) -> std::io::Result<u64> {
    let mut written = 0u64;
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    // Once the run has ended, a reader (a FIFO) that stopped reading is waited on briefly,
    // then given up on: what it took is complete blocks, and the run goes on to save.
    let ended: std::cell::Cell<Option<Instant>> = std::cell::Cell::new(None);
    let give_up = || {
        if !done.load(Ordering::Acquire) {
            return false;
        }
        let t = ended.get().unwrap_or_else(Instant::now);
        ended.set(Some(t));
        t.elapsed() > READER_GRACE
    };
    loop {
        // Read `done` before draining, so nothing pushed before it was set is left behind.
        let finishing = done.load(Ordering::Acquire);
        buf.clear();
        let mut moved = 0usize;
        for (idx, c) in consumers.iter_mut().enumerate() {
            loop {
                let n = c.slots().min(MAX_BLOCK);
                if n == 0 || buf.len() >= 1 << 20 {
                    break;
                }
                let chunk = c.read_chunk(n).expect("slots() said n are readable");
                buf.extend_from_slice(&(idx as u32).to_le_bytes());
                buf.extend_from_slice(&(n as u32).to_le_bytes());
                let (a, b) = chunk.as_slices();
                for v in a.iter().chain(b.iter()) {
                    buf.extend_from_slice(&v.to_le_bytes());
                }
                chunk.commit_all();
                moved += n;
            }
        }
        // Complete blocks reach the file at once: a SIGKILL leaves every one of them.
        crate::output::write_patiently(&mut out, &buf, &give_up)?;
        written += moved as u64;
        if finishing && moved == 0 {
            break;
        }
        if moved == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let lost = lost.lock().map(|l| l.clone()).unwrap_or_default();
    buf.clear();
    buf.extend_from_slice(&TRAILER.to_le_bytes());
    buf.extend_from_slice(&(lost.len() as u32).to_le_bytes());
    for l in &lost {
        buf.extend_from_slice(&l.to_le_bytes());
    }
    crate::output::write_patiently(&mut out, &buf, &give_up)?;
    // A FIFO or a terminal cannot be synced; a regular file must be.
    match out.sync_data() {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
        r => r?,
    }
    Ok(written)
}

/// A whole sample log read back.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleLog {
    /// The series, in header order.
    pub series: Vec<SeriesHeader>,
    /// Samples per series, in loop order.
    pub samples: Vec<Vec<u64>>,
    /// Lost samples per series (None: no trailer, the file was cut short).
    pub lost: Option<Vec<u64>>,
    /// Where the file was cut inside a block (a full disk, a copy interrupted): the blocks
    /// before it are read, that last block's samples are not.
    pub cut_at: Option<u64>,
}

impl SampleLog {
    /// Reads a sample log; errors name the path and what is wrong at which byte offset.
    pub fn read(path: &Path) -> Result<SampleLog> {
        let p = path.display().to_string();
        let f = crate::io::open_input(path, Some(MAX_LOG_BYTES))?;
        Self::from_reader(BufReader::new(f)).map_err(|e| Error::Usage(format!("{p}: {e}")))
    }

    /// Reads a sample log from any reader; the error says what is wrong at which byte offset.
    pub fn from_reader<R: Read>(inner: R) -> std::result::Result<SampleLog, String> {
        let mut r = Counting { inner, pos: 0 };
        Self::parse(&mut r)
    }

    /// The header, then blocks until the trailer, the end of the file or a cut.
    fn parse<R: Read>(r: &mut Counting<R>) -> std::result::Result<SampleLog, String> {
        let series = read_header(r)?;
        let mut samples = vec![Vec::new(); series.len()];
        let (lost, cut_at) = loop {
            let at = r.pos;
            match read_block(r, &mut samples)? {
                Block::Samples => {}
                Block::End => break (None, None),
                Block::Cut => break (None, Some(at)),
                Block::Trailer(lost) => break (Some(lost), None),
            }
        };
        Ok(SampleLog {
            series,
            samples,
            lost,
            cut_at,
        })
    }
}

/// What the next piece of a log after its header was.
enum Block {
    /// A block of samples, added to its series.
    Samples,
    /// The end of the file, without a trailer.
    End,
    /// The file was cut inside this block (or trailer): the blocks before it stand.
    Cut,
    /// The trailer, with each series' lost samples.
    Trailer(Vec<u64>),
}

/// The header: magic, version and the series.
fn read_header<R: Read>(r: &mut Counting<R>) -> std::result::Result<Vec<SeriesHeader>, String> {
    let mut magic = [0u8; 8];
    r.exact(&mut magic)
        .map_err(|_| "not a latlab sample log (too short)".to_string())?;
    if &magic != MAGIC {
        return Err("not a latlab sample log (bad magic)".into());
    }
    let version = r.u32()?;
    if version != VERSION {
        return Err(format!(
            "sample log version {version} is not supported (this latlab reads {VERSION})"
        ));
    }
    let n = r.u32()? as usize;
    if n > 1 << 20 {
        return Err(format!("implausible series count {n}"));
    }
    let mut series = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.u16()? as usize;
        let mut name = vec![0u8; len];
        r.exact(&mut name)?;
        let name = String::from_utf8(name)
            .map_err(|_| format!("series name at byte {} is not UTF-8", r.pos))?;
        let cpu = r.i32()?;
        series.push(SeriesHeader {
            name,
            cpu: (cpu >= 0).then_some(cpu as usize),
        });
    }
    Ok(series)
}

/// A read that ran into the end of a file cut short is None (what came before it stands);
/// any other error stays one.
fn unless_cut<T>(read: std::result::Result<T, String>) -> std::result::Result<Option<T>, String> {
    match read {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.starts_with("truncated") => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads the next block (or the trailer) into `samples`, one list per series of the header.
fn read_block<R: Read>(
    r: &mut Counting<R>,
    samples: &mut [Vec<u64>],
) -> std::result::Result<Block, String> {
    let at = r.pos;
    let n = samples.len();
    // A block header cut in the middle: the complete blocks before it stand.
    let idx = match unless_cut(r.u32_or_eof())? {
        Some(Some(i)) => i,
        Some(None) => return Ok(Block::End),
        None => return Ok(Block::Cut),
    };
    let Some(count) = unless_cut(r.u32())?.map(|c| c as usize) else {
        return Ok(Block::Cut);
    };
    if idx == TRAILER {
        return read_trailer(r, at, count, n);
    }
    let s = samples
        .get_mut(idx as usize)
        .ok_or_else(|| format!("block at byte {at} names series {idx} of {n}"))?;
    if count > MAX_BLOCK * 16 {
        return Err(format!("block at byte {at} claims {count} samples"));
    }
    let before = s.len();
    for _ in 0..count {
        match unless_cut(r.u64())? {
            Some(v) => s.push(v),
            // The last block cut short: it is dropped whole (as `tail` reads it).
            None => {
                s.truncate(before);
                return Ok(Block::Cut);
            }
        }
    }
    Ok(Block::Samples)
}

/// The trailer starting at byte `at`, after its marker and its series count (`count`, which
/// must be the header's `n`): the lost counts, then the end of the file.
fn read_trailer<R: Read>(
    r: &mut Counting<R>,
    at: u64,
    count: usize,
    n: usize,
) -> std::result::Result<Block, String> {
    if count != n {
        return Err(format!(
            "trailer at byte {at} names {count} series, header {n}"
        ));
    }
    let lost = (0..n)
        .map(|_| r.u64())
        .collect::<std::result::Result<Vec<_>, _>>();
    // Cut inside the trailer: every block stands, the lost counts are unknown.
    let Some(lost) = unless_cut(lost)? else {
        return Ok(Block::Cut);
    };
    // The trailer ends the file: anything after it is not latlab's.
    let end = r.pos;
    if !r.at_eof()? {
        return Err(format!(
            "unexpected data after the trailer (which ends at byte {end})"
        ));
    }
    Ok(Block::Trailer(lost))
}

struct Counting<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Counting<R> {
    fn exact(&mut self, buf: &mut [u8]) -> std::result::Result<(), String> {
        self.inner
            .read_exact(buf)
            .map_err(|_| format!("truncated at byte {}", self.pos))?;
        self.pos += buf.len() as u64;
        Ok(())
    }
    fn u16(&mut self) -> std::result::Result<u16, String> {
        let mut b = [0u8; 2];
        self.exact(&mut b)?;
        Ok(u16::from_le_bytes(b))
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        let mut b = [0u8; 4];
        self.exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn i32(&mut self) -> std::result::Result<i32, String> {
        Ok(self.u32()? as i32)
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        let mut b = [0u8; 8];
        self.exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn at_eof(&mut self) -> std::result::Result<bool, String> {
        let mut b = [0u8; 1];
        loop {
            match self.inner.read(&mut b) {
                Ok(0) => return Ok(true),
                Ok(_) => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    fn u32_or_eof(&mut self) -> std::result::Result<Option<u32>, String> {
        let mut b = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match self.inner.read(&mut b[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(format!("truncated at byte {}", self.pos + got as u64)),
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        self.pos += 4;
        Ok(Some(u32::from_le_bytes(b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.bin");
        let hdr = vec![
            SeriesHeader {
                name: "T0".into(),
                cpu: Some(1),
            },
            SeriesHeader {
                name: "T1".into(),
                cpu: None,
            },
        ];
        let (mut prods, cons) = rings(2, 64);
        let w = SampleWriter::start(&path, &hdr, cons).unwrap();
        let p1 = prods.pop().unwrap();
        let mut p0 = prods.pop().unwrap();
        let t = std::thread::spawn(move || {
            let mut p1 = p1;
            for i in 0..10_000u64 {
                while p1.push(i * 3).is_err() {
                    std::thread::yield_now();
                }
            }
        });
        for i in 0..5000u64 {
            while p0.push(i).is_err() {
                std::thread::yield_now();
            }
        }
        t.join().unwrap();
        assert_eq!(w.finish(&[0, 7]).unwrap(), 15_000);
        let log = SampleLog::read(&path).unwrap();
        assert_eq!(log.series, hdr);
        assert_eq!(log.samples[0], (0..5000).collect::<Vec<_>>());
        assert_eq!(
            log.samples[1],
            (0..10_000).map(|i| i * 3).collect::<Vec<_>>()
        );
        assert_eq!(log.lost, Some(vec![0, 7]));
    }

    #[test]
    fn a_log_cut_inside_a_block_keeps_the_blocks_before_it() {
        let mut log = Vec::new();
        write_header(
            &mut log,
            &[SeriesHeader {
                name: "T0".into(),
                cpu: None,
            }],
        )
        .unwrap();
        for block in [[1u64, 2], [3, 4]] {
            log.extend_from_slice(&0u32.to_le_bytes());
            log.extend_from_slice(&2u32.to_le_bytes());
            for v in block {
                log.extend_from_slice(&v.to_le_bytes());
            }
        }
        let whole = log.len();
        // Cut inside the trailer: both blocks stand.
        let mut whole_log = log.clone();
        whole_log.extend_from_slice(&TRAILER.to_le_bytes());
        whole_log.extend_from_slice(&1u32.to_le_bytes());
        whole_log.extend_from_slice(&0u64.to_le_bytes());
        let r = SampleLog::from_reader(&whole_log[..whole_log.len() - 3]).unwrap();
        assert_eq!(r.samples, vec![vec![1, 2, 3, 4]]);
        assert_eq!((r.lost, r.cut_at), (None, Some(whole as u64)));
        // Cut inside the second block's samples, inside its header, and between blocks.
        for (cut, cut_at) in [
            (whole - 3, Some(whole as u64 - 24)),
            (whole - 22, Some(whole as u64 - 24)),
            (whole - 24, None),
        ] {
            let r = SampleLog::from_reader(&log[..cut]).unwrap();
            assert_eq!(r.samples, vec![vec![1, 2]], "cut at {cut}");
            assert_eq!((r.lost, r.cut_at), (None, cut_at), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_after_the_trailer_is_reported() {
        let mut log = Vec::new();
        write_header(
            &mut log,
            &[SeriesHeader {
                name: "T0".into(),
                cpu: None,
            }],
        )
        .unwrap();
        for w in [0u32, 2] {
            log.extend_from_slice(&w.to_le_bytes());
        }
        log.extend_from_slice(&5u64.to_le_bytes());
        log.extend_from_slice(&7u64.to_le_bytes());
        log.extend_from_slice(&TRAILER.to_le_bytes());
        log.extend_from_slice(&1u32.to_le_bytes());
        log.extend_from_slice(&0u64.to_le_bytes());
        let ok = SampleLog::from_reader(&log[..]).unwrap();
        assert_eq!(ok.samples, vec![vec![5, 7]]);
        for tail in [&b"x"[..], b"junk", &[0u8; 64][..]] {
            let mut bad = log.clone();
            bad.extend_from_slice(tail);
            let e = SampleLog::from_reader(&bad[..]).unwrap_err();
            assert!(e.contains("after the trailer"), "{e}");
        }
    }

    #[test]
    fn rejects_garbage_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk");
        std::fs::write(&path, b"hello world, not samples").unwrap();
        let e = SampleLog::read(&path).unwrap_err();
        assert!(e.to_string().contains("junk") && e.to_string().contains("magic"));
    }
}
