//! The largest samples of a raw sample log (`--samples`, docs/samples-format.md) in one
//! streaming pass: a log of 10⁸ samples is 800 MB, too much to hold (as `SampleLog::read`
//! does) just to keep its top few thousand. Each sample costs one comparison; the few that
//! beat the current cut-off go through a bounded min-heap.

use latlab_core::error::{Error, Result};
use latlab_core::stats::evt::Exceedance;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Read;
use std::path::Path;

/// What a pass over a sample log found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scan {
    /// Series names in header order.
    pub(crate) names: Vec<String>,
    /// Samples read per series.
    pub(crate) counts: Vec<u64>,
    /// Lost samples per series from the trailer (None: no trailer, the log was cut short).
    pub(crate) lost: Option<Vec<u64>>,
    /// The largest `keep` samples of the selected series (series = header index, pos = index
    /// within its series); every sample above the smallest of them is among them.
    pub(crate) top: Vec<Exceedance>,
}

const TRAILER: u32 = 0xFFFF_FFFF;

/// Reads `path`, keeping the `keep` largest samples of the series `want` accepts.
pub(crate) fn scan(path: &Path, keep: usize, want: &dyn Fn(&str) -> bool) -> Result<Scan> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    scan_reader(&mut r, keep, want).map_err(|e| Error::Usage(format!("{name}: {e}")))
}

/// `scan` over any reader; the error says what is wrong at which byte.
pub(crate) fn scan_reader(
    r: &mut impl Read,
    keep: usize,
    want: &dyn Fn(&str) -> bool,
) -> std::result::Result<Scan, String> {
    let mut src = Counted { r, pos: 0 };
    let names = header(&mut src)?;
    let s = names.len();
    let selected: Vec<bool> = names.iter().map(|n| want(n)).collect();
    let mut counts = vec![0u64; s];
    let mut top = Top {
        heap: BinaryHeap::with_capacity(keep + 1),
        keep,
        cut: 0,
    };
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let at = src.pos;
        let Some((idx, n)) = block_header(&mut src)? else {
            return Ok(finish(names, counts, None, top));
        };
        if idx == TRAILER {
            let lost = trailer(&mut src, at, n, s)?;
            return Ok(finish(names, counts, Some(lost), top));
        }
        let i = idx as usize;
        if i >= s {
            return Err(format!("block at byte {at} names series {idx} of {s}"));
        }
        if n > 65536 {
            return Err(format!("block at byte {at} claims {n} samples"));
        }
        buf.resize(n * 8, 0);
        if src.exact(&mut buf).is_err() {
            // The last block cut short by a kill: the complete blocks stand.
            return Ok(finish(names, counts, None, top));
        }
        let base = counts[i];
        counts[i] += n as u64;
        if !selected[i] || keep == 0 {
            continue;
        }
        for (j, c) in buf.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            top.offer(v, idx, base + j as u64);
        }
    }
}

/// A reader that counts the bytes read from it, for messages that say where.
struct Counted<'r, R> {
    r: &'r mut R,
    /// Bytes read so far.
    pos: u64,
}

impl<R: Read> Counted<'_, R> {
    /// Fills `buf`, or says where the log ends short.
    fn exact(&mut self, buf: &mut [u8]) -> std::result::Result<(), String> {
        self.r
            .read_exact(buf)
            .map_err(|_| format!("truncated at byte {}", self.pos))?;
        self.pos += buf.len() as u64;
        Ok(())
    }
}

/// The series names of the log's header, its magic and version checked.
fn header<R: Read>(src: &mut Counted<R>) -> std::result::Result<Vec<String>, String> {
    let mut head = [0u8; 16];
    src.exact(&mut head)
        .map_err(|_| "not a latlab sample log (too short)")?;
    if &head[..8] != latlab_core::samples::MAGIC {
        return Err("not a latlab sample log (bad magic)".into());
    }
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if version != latlab_core::samples::VERSION {
        return Err(format!(
            "sample log version {version} is not supported (this latlab reads {})",
            latlab_core::samples::VERSION
        ));
    }
    let s = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as usize;
    if s > 1 << 20 {
        return Err(format!("implausible series count {s}"));
    }
    let mut names = Vec::with_capacity(s);
    for _ in 0..s {
        let mut l = [0u8; 2];
        src.exact(&mut l)?;
        let mut b = vec![0u8; u16::from_le_bytes(l) as usize];
        src.exact(&mut b)?;
        let at = src.pos;
        names.push(
            String::from_utf8(b)
                .map_err(|_| format!("series name before byte {at} is not UTF-8"))?,
        );
        let mut cpu = [0u8; 4];
        src.exact(&mut cpu)?;
    }
    Ok(names)
}

/// The next block's header: its series index (or [`TRAILER`]) and its sample count; `None`
/// where the log ends before one, cleanly between blocks or cut inside the header (a log
/// cut short: everything before it stands).
fn block_header<R: Read>(
    src: &mut Counted<R>,
) -> std::result::Result<Option<(u32, usize)>, String> {
    let at = src.pos;
    let mut bh = [0u8; 8];
    match src.r.read(&mut bh[..1]) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(format!("read failed at byte {at}: {e}")),
    }
    src.pos += 1;
    if src.exact(&mut bh[1..]).is_err() {
        return Ok(None);
    }
    let idx = u32::from_le_bytes(bh[..4].try_into().expect("4 bytes"));
    let n = u32::from_le_bytes(bh[4..].try_into().expect("4 bytes")) as usize;
    Ok(Some((idx, n)))
}

/// The trailer (its header at byte `at` naming `n` series): the lost samples of each of the
/// header's `s` series, and nothing after them.
fn trailer<R: Read>(
    src: &mut Counted<R>,
    at: u64,
    n: usize,
    s: usize,
) -> std::result::Result<Vec<u64>, String> {
    if n != s {
        return Err(format!("trailer at byte {at} names {n} series, header {s}"));
    }
    let mut lost = Vec::with_capacity(s);
    for _ in 0..s {
        let mut b = [0u8; 8];
        src.exact(&mut b)?;
        lost.push(u64::from_le_bytes(b));
    }
    let mut extra = [0u8; 1];
    if matches!(src.r.read(&mut extra), Ok(n) if n > 0) {
        return Err(format!(
            "unexpected data after the trailer (which ends at byte {})",
            src.pos
        ));
    }
    Ok(lost)
}

/// The `keep` largest samples seen so far, as (value, series, position) in a min-heap.
struct Top {
    heap: BinaryHeap<Reverse<(u64, u32, u64)>>,
    keep: usize,
    /// The smallest value kept once `keep` are: only a larger one gets in.
    cut: u64,
}

impl Top {
    /// Keeps sample `pos` of `series`, `v`, if it is among the largest. Runs once per sample:
    /// one comparison for most, the heap only for the few above the cut.
    #[inline]
    fn offer(&mut self, v: u64, series: u32, pos: u64) {
        if v > self.cut || self.heap.len() < self.keep {
            self.heap.push(Reverse((v, series, pos)));
            if self.heap.len() > self.keep {
                self.heap.pop();
            }
            if self.heap.len() == self.keep {
                self.cut = self.heap.peek().map_or(0, |x| x.0 .0);
            }
        }
    }
}

/// What the pass found once the log ends (`lost`: its trailer's, if it has one).
fn finish(names: Vec<String>, counts: Vec<u64>, lost: Option<Vec<u64>>, top: Top) -> Scan {
    let top = top
        .heap
        .into_iter()
        .map(|Reverse((v, series, pos))| Exceedance {
            value: v as f64,
            series,
            pos,
        })
        .collect();
    Scan {
        names,
        counts,
        lost,
        top,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(series: &[&str], blocks: &[(u32, Vec<u64>)], trailer: bool) -> Vec<u8> {
        let mut b = b"LATLABSM".to_vec();
        b.extend(1u32.to_le_bytes());
        b.extend((series.len() as u32).to_le_bytes());
        for s in series {
            b.extend((s.len() as u16).to_le_bytes());
            b.extend(s.as_bytes());
            b.extend((-1i32).to_le_bytes());
        }
        for (i, v) in blocks {
            b.extend(i.to_le_bytes());
            b.extend((v.len() as u32).to_le_bytes());
            for x in v {
                b.extend(x.to_le_bytes());
            }
        }
        if trailer {
            b.extend(TRAILER.to_le_bytes());
            b.extend((series.len() as u32).to_le_bytes());
            for _ in series {
                b.extend(0u64.to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn keeps_the_largest_with_their_positions() {
        let b = log(
            &["T0", "T1"],
            &[(0, vec![5, 90, 3]), (1, vec![70, 1]), (0, vec![80, 2, 100])],
            true,
        );
        let s = scan_reader(&mut b.as_slice(), 3, &|_| true).unwrap();
        assert_eq!(s.counts, vec![6, 2]);
        assert_eq!(s.lost, Some(vec![0, 0]));
        let mut top: Vec<_> = s.top.iter().map(|e| (e.value, e.series, e.pos)).collect();
        top.sort_by(|a, b| b.0.total_cmp(&a.0));
        assert_eq!(top, vec![(100.0, 0, 5), (90.0, 0, 1), (80.0, 0, 3)]);
        // One series only.
        let s = scan_reader(&mut b.as_slice(), 10, &|n| n == "T1").unwrap();
        assert_eq!(s.top.len(), 2);
        // The same numbers as the reader that holds everything.
        let whole = latlab_core::samples::SampleLog::from_reader(b.as_slice()).unwrap();
        assert_eq!(whole.samples[0].len() as u64, 6);
    }

    #[test]
    fn a_cut_log_keeps_its_complete_blocks_and_garbage_is_named() {
        let mut b = log(&["T0"], &[(0, vec![1, 2, 3]), (0, vec![4, 5])], false);
        b.truncate(b.len() - 4);
        let s = scan_reader(&mut b.as_slice(), 10, &|_| true).unwrap();
        assert_eq!((s.counts[0], s.lost.clone()), (3, None));
        let e = scan_reader(&mut &b"LATLABSX\x01\0\0\0\0\0\0\0"[..], 1, &|_| true).unwrap_err();
        assert!(e.contains("bad magic"), "{e}");
        let e = scan_reader(&mut &b"LAT"[..], 1, &|_| true).unwrap_err();
        assert!(e.contains("too short"), "{e}");
        let bad = log(&["T0"], &[(3, vec![1])], true);
        let e = scan_reader(&mut bad.as_slice(), 1, &|_| true).unwrap_err();
        assert!(e.contains("series 3 of 1"), "{e}");
    }
}
