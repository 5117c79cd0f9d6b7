//! One binary ring-buffer page from `per_cpu/cpuN/trace_pipe_raw`, walked record by record: the
//! page header (base time stamp, commit word with its missed-events flags) and the compressed
//! event headers (5-bit type, 27-bit time delta) with their padding, time-extend and absolute
//! time-stamp records, as the kernel's ring buffer writes them (kbuffer is the reference).

use super::format::PageHeader;

/// Record type: padding (a discarded event, or with a zero delta the end of the page).
const TYPE_PADDING: u32 = 29;
/// Record type: time extend (adds `array[0] << 27 | delta`).
const TYPE_TIME_EXTEND: u32 = 30;
/// Record type: absolute time stamp.
const TYPE_TIME_STAMP: u32 = 31;
/// Width of the delta in the event header.
const TS_SHIFT: u32 = 27;
/// Commit word bits: events were lost before this page; their count is stored after the data.
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;

/// What the page header said beyond its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageInfo {
    /// Events lost before this page (the kernel's count, or 1 when it only flagged a loss).
    pub missed: u64,
    /// Records handed to the callback.
    pub(crate) records: u64,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Walks `page`, calling `each(time stamp ns, record data)` for every event record in order.
/// A malformed page ends the walk with an error after the records read so far.
pub fn walk(
    page: &[u8],
    h: &PageHeader,
    mut each: impl FnMut(u64, &[u8]),
) -> Result<PageInfo, String> {
    let mut ts = u64_at(page, h.ts_offset).ok_or("page shorter than its header")?;
    let commit = if h.commit_size == 8 {
        u64_at(page, h.commit_offset)
    } else {
        u32_at(page, h.commit_offset).map(u64::from)
    }
    .ok_or("page shorter than its header")?;
    let len = (commit & COMMIT_MASK) as usize;
    let data = page
        .get(h.data_offset..h.data_offset + len)
        .ok_or_else(|| format!("commit length {len} runs past the page"))?;
    let mut info = PageInfo::default();
    if commit & MISSED_EVENTS != 0 {
        info.missed = 1;
        if commit & MISSED_STORED != 0 {
            let at = h.data_offset + len;
            let stored = if h.commit_size == 8 {
                u64_at(page, at)
            } else {
                u32_at(page, at).map(u64::from)
            };
            info.missed = stored.unwrap_or(1).max(1);
        }
    }
    let mut i = 0usize;
    while i + 4 <= data.len() {
        let head = u32_at(data, i).unwrap_or(0);
        let (kind, delta) = (head & 0x1f, u64::from(head >> 5));
        let arr = u32_at(data, i + 4).map(u64::from);
        match kind {
            TYPE_PADDING => {
                if delta == 0 {
                    break; // the rest of the page is empty
                }
                let n = arr.ok_or("truncated padding record")? as usize;
                i += 4 + n;
            }
            TYPE_TIME_EXTEND => {
                ts += (arr.ok_or("truncated time extend")? << TS_SHIFT) + delta;
                i += 8;
            }
            TYPE_TIME_STAMP => {
                let abs = (arr.ok_or("truncated time stamp")? << TS_SHIFT) | delta;
                // The record keeps 59 bits; the top bits come from the running stamp.
                let top = ts & !((1u64 << 59) - 1);
                ts = top | abs;
                i += 8;
            }
            0 => {
                let n = arr.ok_or("truncated long record")? as usize;
                if n < 4 {
                    return Err(format!("record length {n} at byte {i}"));
                }
                let body = data
                    .get(i + 8..i + 4 + n)
                    .ok_or_else(|| format!("record at byte {i} runs past the data"))?;
                ts += delta;
                each(ts, body);
                info.records += 1;
                i += (4 + n + 3) & !3;
            }
            n => {
                let n = n as usize * 4;
                let body = data
                    .get(i + 4..i + 4 + n)
                    .ok_or_else(|| format!("record at byte {i} runs past the data"))?;
                ts += delta;
                each(ts, body);
                info.records += 1;
                i += 4 + n;
            }
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: PageHeader = PageHeader {
        ts_offset: 0,
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
        page_size: 4096,
    };

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../../tests/fixtures/trace/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// Time stamps (µs, as the text `trace` file prints them) of a text fixture.
    fn text_stamps(name: &str) -> Vec<u64> {
        let t = String::from_utf8(fixture(name)).unwrap();
        t.lines()
            .filter_map(|l| {
                let before = l.split(": ").next()?;
                let ts = before.split_whitespace().last()?;
                let (s, us) = ts.split_once('.')?;
                Some(s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?)
            })
            .collect()
    }

    #[test]
    fn recorded_pages_match_the_kernels_text() {
        for cpu in ["cpu0", "cpu1"] {
            let raw = fixture(&format!("{cpu}.raw"));
            let mut stamps = Vec::new();
            for page in raw.chunks(H.page_size) {
                let info = walk(page, &H, |ts, body| {
                    assert!(body.len() >= 8);
                    stamps.push((ts + 500) / 1000); // the text rounds to µs
                })
                .unwrap();
                assert_eq!(info.missed, 0);
            }
            let want = text_stamps(&format!("{cpu}.txt"));
            assert_eq!(stamps.len(), want.len(), "{cpu}: record count");
            let differ = stamps.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert_eq!(differ, 0, "{cpu}: time stamps");
        }
    }

    fn page(records: &[u32], commit_flags: u64) -> Vec<u8> {
        let mut p = vec![0u8; 64];
        p[0..8].copy_from_slice(&1000u64.to_le_bytes());
        let len = records.len() as u64 * 4;
        p[8..16].copy_from_slice(&(len | commit_flags).to_le_bytes());
        for (k, r) in records.iter().enumerate() {
            p[16 + 4 * k..20 + 4 * k].copy_from_slice(&r.to_le_bytes());
        }
        p
    }

    #[test]
    fn time_extend_padding_and_missed_events() {
        // extend by (1 << 27) + 5, then a 4-byte event with delta 3, a discarded 4-byte event
        // (padding whose array[0] is 4: 8 bytes in all, delta 7), an event with delta 2, then
        // end-of-page padding.
        let recs = [
            (5 << 5) | 30,
            1,
            (3 << 5) | 1,
            0xAAAA,
            (7 << 5) | 29,
            4,
            (2 << 5) | 1,
            0xCCCC,
            29,
        ];
        let p = page(&recs, MISSED_EVENTS);
        let mut got = Vec::new();
        let info = walk(&p, &H, |ts, b| got.push((ts, b.to_vec()))).unwrap();
        let base = 1000 + (1 << 27) + 5;
        assert_eq!(got[0], (base + 3, 0xAAAAu32.to_le_bytes().to_vec()));
        assert_eq!(got[1], (base + 5, 0xCCCCu32.to_le_bytes().to_vec()));
        assert_eq!(
            info,
            PageInfo {
                missed: 1,
                records: 2
            }
        );
    }

    #[test]
    fn absolute_time_stamp_and_long_record() {
        let recs = [(9 << 5) | 31, 2, 0, 12, 0x1111, 0x2222];
        let p = page(&recs, 0);
        let mut got = Vec::new();
        walk(&p, &H, |ts, b| got.push((ts, b.len()))).unwrap();
        assert_eq!(got, vec![((2 << 27) | 9, 8)]);
    }

    #[test]
    fn malformed_pages_are_errors() {
        assert!(walk(&[0u8; 8], &H, |_, _| {}).is_err());
        let mut p = page(&[], 0);
        p[8..16].copy_from_slice(&5000u64.to_le_bytes());
        assert!(walk(&p, &H, |_, _| {}).is_err());
        let p = page(&[0, 2], 0);
        assert!(walk(&p, &H, |_, _| {}).is_err());
        let p = page(&[3], 0);
        assert!(walk(&p, &H, |_, _| {}).is_err());
    }
}
