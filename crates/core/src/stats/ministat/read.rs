//! Reading data sets exactly as ministat does: `fgets` lines, `strtok` on the delimiter set,
//! column N, `#` comments, `strtod` numbers, its error texts; a line longer than its buffer is
//! cut where `fgets` cuts it, each piece a line of its own. Where ministat would misbehave
//! (NaN/inf that crash its plot) this refuses clearly.

use super::lines::{self, Values};
use std::io::Read;

/// ministat's line buffer (`BUFSIZ`): longer lines are split by `fgets`.
pub(crate) const LINE_MAX: usize = 8191;
/// Largest value file `compare` and `ministat` read (1 GiB: about 10^8 values); stdin is not
/// limited.
pub const MAX_VALUES_BYTES: u64 = 1 << 30;

/// A data set: name, values and the order statistics ministat prints.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSet {
    /// File name as ministat prints it (`<stdin>` for standard input).
    pub name: String,
    /// The values, in no particular order.
    pub points: Vec<f64>,
    /// Smallest value (the first of ministat's sorted array).
    pub(crate) min: f64,
    /// Largest value (the last of ministat's sorted array).
    pub(crate) max: f64,
    /// Element n/2 of ministat's sorted array.
    pub(crate) median: f64,
    /// Sum of values in input order (ministat's `sy`).
    pub sy: f64,
    /// Sum of squares in input order (ministat's `syy`).
    pub syy: f64,
}

/// Why a data set could not be read, with ministat's wording where ministat has one.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// `ministat: Cannot open NAME: REASON` (exit 1).
    Open(String),
    /// `ministat: Invalid data on line N in NAME` (exit 2).
    Invalid(String),
    /// `Dataset NAME must contain at least 3 data points` (exit 2).
    TooFew(String),
    /// latlab's own refusal where ministat misbehaves (exit 2).
    Refused(String),
}

impl ReadError {
    /// The message, as ministat prints it to stderr (without the trailing newline).
    pub fn message(&self) -> &str {
        match self {
            ReadError::Open(m)
            | ReadError::Invalid(m)
            | ReadError::TooFew(m)
            | ReadError::Refused(m) => m,
        }
    }
    /// ministat's exit code for it.
    pub fn exit_code(&self) -> i32 {
        match self {
            ReadError::Open(_) => 1,
            _ => 2,
        }
    }
}

/// Parses a token as C's `strtod` would (leading white space skipped), requiring the whole
/// token to be the number: ministat's `*p != '\0'` check. Trailing white space of a line is
/// stripped before it is split (see `State::line`), so `5\r` at a line's end still reads.
pub fn strtod_whole(tok: &[u8]) -> Option<f64> {
    if let Some(v) = fast_decimal(tok) {
        return Some(v);
    }
    // Fast path: plain decimal numbers (what data files hold), parsed without any copying.
    if !tok.is_empty()
        && tok[0] != b'+'
        && tok
            .iter()
            .all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'e' | b'E' | b'+'))
    {
        // SAFETY-free: the bytes are ASCII, so this cannot fail.
        let s = std::str::from_utf8(tok).ok()?;
        if let Ok(v) = s.parse::<f64>() {
            return Some(v);
        }
    }
    const WS: [char; 6] = [' ', '\t', '\n', '\x0b', '\x0c', '\r'];
    let s = std::str::from_utf8(tok).ok()?;
    let s = s.trim_start_matches(WS);
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.starts_with(['+', '-']) {
        return None;
    }
    let v = if body.len() > 2 && (body.starts_with("0x") || body.starts_with("0X")) {
        super::hexfloat::parse(&body[2..])?
    } else {
        let lower = body.to_ascii_lowercase();
        if lower.starts_with("nan(") && lower.ends_with(')') {
            f64::NAN
        } else if !body.is_empty()
            && body
                .bytes()
                .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
            || ["inf", "infinity", "nan"].contains(&lower.as_str())
        {
            body.parse::<f64>().ok()?
        } else {
            return None;
        }
    };
    Some(if neg { -v } else { v })
}

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Clinger's fast path for `[-]digits[.digits]`: when the digits form an integer below 2^53 and
/// at most 22 follow the point, `m / 10^k` is one correctly rounded IEEE division of two exact
/// values, so the result equals strtod's. Anything else returns None (the general parser).
#[inline]
fn fast_decimal(tok: &[u8]) -> Option<f64> {
    scan_decimal(tok, 0).and_then(|(v, end)| (end == tok.len()).then_some(v))
}

/// The number that starts at `b[i]` under Clinger's fast path (see `fast_decimal`), and the
/// index just past it. None when the text there is not such a number.
#[inline(always)]
fn scan_decimal(b: &[u8], mut i: usize) -> Option<(f64, usize)> {
    let neg = b.get(i) == Some(&b'-');
    i += usize::from(neg);
    let mut m = 0u64;
    let int_end = digits(b, i, &mut m);
    let (mut nd, mut frac) = (int_end - i, 0);
    i = int_end;
    if b.get(i) == Some(&b'.') {
        let frac_end = digits(b, i + 1, &mut m);
        frac = frac_end - i - 1;
        nd += frac;
        i = frac_end;
    }
    // At most 19 digits, so m did not wrap.
    if nd == 0 || nd > 19 || m >= 1 << 53 || frac > 22 {
        return None;
    }
    let v = m as f64 / POW10[frac];
    Some((if neg { -v } else { v }, i))
}

/// Appends the decimal digits that start at `b[i]` to `m` (wrapping past 19 digits, which
/// callers reject) and returns the index of the first non-digit. Eight bytes at a time where
/// the buffer allows, without a branch per digit.
#[inline(always)]
fn digits(b: &[u8], mut i: usize, m: &mut u64) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let (v, n) = eight_digits(chunk.try_into().expect("eight bytes"));
        *m = m.wrapping_mul(POW10_U64[n]).wrapping_add(v);
        i += n;
        if n < 8 {
            return i;
        }
    }
    while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d < 10) {
        *m = m.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    i
}

const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// The value and count of the leading decimal digits of eight bytes (SWAR: a byte is a digit
/// when `byte ^ '0'` is below 10; the digits are combined pairwise with three multiplications).
#[inline(always)]
fn eight_digits(chunk: [u8; 8]) -> (u64, usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let d = u64::from_le_bytes(chunk) ^ (ONES * 0x30);
    // High bit set in every byte that is not a digit (a carry out of such a byte only disturbs
    // the bytes after it, and only the first non-digit counts).
    let non_digit = (d | d.wrapping_add(ONES * 0x76)) & (ONES * 0x80);
    let n = (non_digit.trailing_zeros() / 8) as usize;
    if n == 0 {
        return (0, 0);
    }
    // Keep the n digits, moved to the top bytes: leading zero digits fill the rest.
    let mut v = d << (8 * (8 - n));
    v = v.wrapping_mul(10).wrapping_add(v >> 8) & 0x00FF_00FF_00FF_00FF;
    v = v.wrapping_mul(100).wrapping_add(v >> 16) & 0x0000_FFFF_0000_FFFF;
    v = v.wrapping_mul(10_000).wrapping_add(v >> 32) & 0xFFFF_FFFF;
    (v, n)
}

/// Reads one data set from `r` (named `name`), taking column `column` (1-based) of tokens
/// split on any byte of `delim`.
pub fn read_set(
    r: impl Read,
    name: &str,
    column: usize,
    delim: &[u8],
) -> Result<DataSet, ReadError> {
    read_set_sized(r, None, name, column, delim)
}

/// Bytes read at a time: whole lines of each block are parsed in place (128 KiB: the block is
/// still in the L2 cache when it is parsed; 1 MiB blocks measured ~1.5 ms slower per 10^6 lines).
const BLOCK: usize = 1 << 17;

/// `read_set` for a source whose size is known (a regular file): the values' array is sized once
/// from the first block's line density instead of growing by copies.
pub fn read_set_sized(
    r: impl Read,
    size_hint: Option<u64>,
    name: &str,
    column: usize,
    delim: &[u8],
) -> Result<DataSet, ReadError> {
    let Values {
        mut points,
        zeros,
        sy,
        syy,
    } = read_points(r, size_hint, name, column, delim)?.v;
    let (min, max, median) = order_stats(&mut points, &zeros);
    Ok(DataSet {
        name: name.to_string(),
        points,
        min,
        max,
        median,
        sy,
        syy,
    })
}

/// The values of one data set in input order (`read_set_sized`'s reading rules and errors), for
/// analyses that need the order (`latlab tail` declusters bursts).
pub fn read_in_order(
    r: impl Read,
    size_hint: Option<u64>,
    name: &str,
    column: usize,
    delim: &[u8],
) -> Result<Vec<f64>, ReadError> {
    Ok(read_points(r, size_hint, name, column, delim)?.v.points)
}

fn read_points<'a>(
    mut r: impl Read,
    size_hint: Option<u64>,
    name: &'a str,
    column: usize,
    delim: &[u8],
) -> Result<State<'a>, ReadError> {
    let mut is_delim = [false; 256];
    for &b in delim {
        is_delim[b as usize] = true;
    }
    // The one-pass path reads column 1 when no delimiter can be part of a number or of a line
    // end; anything else (and every line it does not recognise) goes through `State::line`.
    let fast = column == 1
        && !delim
            .iter()
            .any(|b| b.is_ascii_digit() || b"+-.#\n\0".contains(b));
    let mut st = State {
        v: Values::default(),
        line: 0,
        name,
        column,
        is_delim,
        nul_possible: true,
    };
    let mut buf = vec![0u8; BLOCK];
    let (mut have, mut eof, mut sized) = (0usize, false, size_hint.is_none());
    let mut total_read = 0u64;
    loop {
        while have < buf.len() && !eof {
            match r.read(&mut buf[have..]) {
                Ok(0) => eof = true,
                Ok(n) => {
                    have += n;
                    total_read += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Refused(format!("latlab: {name}: {e}"))),
            }
        }
        let end = memchr::memrchr(b'\n', &buf[..have]).map_or(0, |i| i + 1);
        st.block(&buf[..end], fast)?;
        if !sized {
            sized = true;
            if let (Some(total), true) = (size_hint, end > 0) {
                let points = &mut st.v.points;
                let per_byte = points.len() as f64 / end as f64;
                let want = (total as f64 * per_byte * 1.02) as usize + 16;
                if want > points.capacity() {
                    // A fresh array, backed by huge pages where the system allows.
                    let mut all = Vec::with_capacity(want);
                    crate::sys::mem::advise_huge_pages(&mut all);
                    all.extend_from_slice(points);
                    *points = all;
                }
            }
        }
        if eof {
            // A file that ended before the size it had when opened was cut while it was read
            // (another process is writing it): what was read is not the file.
            if let Some(size) = size_hint.filter(|&n| total_read < n) {
                return Err(ReadError::Refused(format!(
                    "latlab: {name}: it shrank from {size} to {total_read} bytes while it was \
                     read (another process is writing it): read it again once it is complete"
                )));
            }
            if end < have {
                st.nul_possible = true;
                st.line(&buf[end..have], false)?;
            }
            break;
        }
        if end == 0 {
            // A full block without a line end: the pieces `fgets` reads of it so far; the rest
            // starts a piece of its own.
            st.nul_possible = true;
            let whole = have / LINE_MAX * LINE_MAX;
            for p in buf[..whole].chunks(LINE_MAX) {
                st.piece(p)?;
            }
            buf.copy_within(whole..have, 0);
            have -= whole;
            continue;
        }
        buf.copy_within(end..have, 0);
        have -= end;
    }
    if st.v.points.len() < 3 {
        return Err(ReadError::TooFew(format!(
            "Dataset {name} must contain at least 3 data points"
        )));
    }
    Ok(st)
}

/// What `read_set` accumulates line by line.
struct State<'a> {
    v: Values,
    line: usize,
    name: &'a str,
    column: usize,
    is_delim: [bool; 256],
    /// False when the current chunk has no NUL byte (saves a scan per line).
    nul_possible: bool,
}

impl State<'_> {
    /// Whole lines (`b` ends with a newline, or is empty).
    fn block(&mut self, b: &[u8], fast: bool) -> Result<(), ReadError> {
        // C strings end at the first NUL: only blocks holding one need the per-line check.
        self.nul_possible = memchr::memchr(0, b).is_some();
        let mut pos = 0;
        while pos < b.len() {
            if fast {
                // Runs of plain lines in bulk; the line a run stops at goes the ways below.
                let (next, n) = lines::plain_run(b, pos, &mut self.v);
                self.line += n;
                pos = next;
                if pos == b.len() {
                    break;
                }
                if let Some(next) = self.fast_line(b, pos) {
                    pos = next;
                    continue;
                }
            }
            let nl = pos + memchr::memchr(b'\n', &b[pos..]).unwrap_or(b.len() - pos);
            self.line(&b[pos..nl], nl < b.len())?;
            pos = nl + 1;
        }
        Ok(())
    }

    /// The line at `b[pos..]` in one pass when it is delimiters, a plain decimal in column 1,
    /// then a line end or a delimiter: adds it and returns where the next line starts. None
    /// leaves everything untouched for `line`, which then decides (also about errors).
    #[inline(always)]
    fn fast_line(&mut self, b: &[u8], pos: usize) -> Option<usize> {
        let mut i = pos;
        while self.is_delim[*b.get(i)? as usize] {
            i += 1;
        }
        let (d, i) = scan_decimal(b, i)?;
        let nl = match *b.get(i)? {
            b'\n' => i,
            c if self.is_delim[c as usize] => i + memchr::memchr(b'\n', &b[i..])?,
            _ => return None,
        };
        if nl - pos > LINE_MAX - 1 {
            return None;
        }
        self.line += 1;
        self.v.push(d);
        Some(nl + 1)
    }

    /// One line without its newline (`newline`: whether one ended it), read as ministat's
    /// `fgets` reads it: in pieces of at most [`LINE_MAX`] bytes, the newline counted in the
    /// last, each piece a line of its own to ministat (its own number and value).
    #[inline]
    fn line(&mut self, raw: &[u8], newline: bool) -> Result<(), ReadError> {
        if raw.len() + usize::from(newline) <= LINE_MAX {
            return self.piece(raw);
        }
        let mut rest = raw;
        while rest.len() >= LINE_MAX {
            self.piece(&rest[..LINE_MAX])?;
            rest = &rest[LINE_MAX..];
        }
        if !rest.is_empty() || newline {
            self.piece(rest)?;
        }
        Ok(())
    }

    /// What one `fgets` read (without a newline): find the column's token (strtok rules),
    /// parse, add.
    #[inline]
    fn piece(&mut self, raw: &[u8]) -> Result<(), ReadError> {
        self.line += 1;
        // C strings end at the first NUL byte; then ministat strips the line's trailing
        // `isspace` characters (the newline, a CR, blanks that are not delimiters) before
        // splitting it.
        let text = match self.nul_possible.then(|| memchr::memchr(0, raw)).flatten() {
            Some(i) => &raw[..i],
            None => raw,
        };
        let kept = text
            .iter()
            .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))
            .map_or(0, |p| p + 1);
        let text = &text[..kept];
        let (mut i, mut field) = (0usize, 0usize);
        let tok = loop {
            while i < text.len() && self.is_delim[text[i] as usize] {
                i += 1;
            }
            if i == text.len() || text[i] == b'#' {
                return Ok(());
            }
            let s = i;
            while i < text.len() && !self.is_delim[text[i] as usize] {
                i += 1;
            }
            field += 1;
            if field == self.column {
                break &text[s..i];
            }
        };
        let d = strtod_whole(tok).ok_or_else(|| {
            ReadError::Invalid(format!(
                "ministat: Invalid data on line {} in {}",
                self.line, self.name
            ))
        })?;
        if !d.is_finite() {
            return Err(ReadError::Refused(format!(
                "latlab: line {} in {}: '{}' is not a finite number (ministat would print garbage or crash)",
                self.line,
                self.name,
                String::from_utf8_lossy(tok)
            )));
        }
        self.v.push(d);
        Ok(())
    }
}

/// Tests: hands out data up to `.2` bytes at a time (a pseudo-random number of them, from the
/// seed `.1`), so lines straddle every possible refill.
#[cfg(test)]
pub(super) struct Trickle<'a>(pub &'a [u8], pub u64, pub usize);

#[cfg(test)]
impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.1 = self.1.wrapping_mul(6364136223846793005).wrapping_add(1);
        let n = ((self.1 >> 33) as usize % self.2)
            .min(out.len())
            .min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Tests: two readings of the same values agree bit for bit (values in any order, the sums in
/// input order, min, max and median).
#[cfg(test)]
pub(super) fn assert_same_reading(fast: &DataSet, slow: &DataSet) {
    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let (mut a, mut b) = (fast.points.clone(), slow.points.clone());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(fast.sy.to_bits(), slow.sy.to_bits());
    assert_eq!(fast.syy.to_bits(), slow.syy.to_bits());
    assert_eq!(
        [fast.min, fast.max, fast.median].map(f64::to_bits),
        [slow.min, slow.max, slow.median].map(f64::to_bits)
    );
}

/// Min, max and element n/2 of the array ministat sorts with glibc's stable `qsort`, found in
/// linear time without sorting. Values comparing equal are identical except -0 and +0, which
/// keep their input order (`zeros`) in a stable sort; that is all this has to reproduce.
/// Reorders `points`.
fn order_stats(points: &mut [f64], zeros: &[f64]) -> (f64, f64, f64) {
    let n = points.len();
    let (mut min, mut max) = (points[0], points[0]);
    let mut neg = 0usize;
    for &v in points.iter() {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
        if v < 0.0 {
            neg += 1;
        }
    }
    if min == 0.0 {
        min = zeros[0];
    }
    if max == 0.0 {
        max = zeros[zeros.len() - 1];
    }
    let k = n / 2;
    // Every value is finite, so `<` is a total order once -0 and +0 count as equal (which zero
    // ministat's stable sort puts at k is then read from `zeros`); one compare, not total_cmp's
    // bit twiddling.
    let (_, &mut med, _) = points.select_nth_unstable_by(k, |a, b| {
        a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
    });
    let median = if med == 0.0 { zeros[k - neg] } else { med };
    (min, max, median)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, col: usize, delim: &str) -> Result<DataSet, ReadError> {
        read_set(text.as_bytes(), "f", col, delim.as_bytes())
    }

    #[test]
    fn a_file_cut_while_it_is_read_is_refused() {
        // Six bytes read of a file that was 100 when opened.
        let e = read_set_sized("1\n2\n3\n".as_bytes(), Some(100), "v.txt", 1, b" ").unwrap_err();
        assert!(
            e.message()
                .contains("v.txt: it shrank from 100 to 6 bytes while it was read"),
            "{e:?}"
        );
        // Read whole, or grown meanwhile: read.
        assert!(read_set_sized("1\n2\n3\n".as_bytes(), Some(6), "v.txt", 1, b" ").is_ok());
        assert!(read_set_sized("1\n2\n3\n".as_bytes(), Some(2), "v.txt", 1, b" ").is_ok());
    }

    #[test]
    fn order_stats_match_a_stable_sort() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for round in 0..300 {
            let n = 3 + (round % 40);
            let mut v: Vec<f64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match x % 5 {
                        0 => -0.0,
                        1 => 0.0,
                        2 => (x % 7) as f64 - 3.0,
                        _ => ((x >> 8) % 100) as f64 / 10.0,
                    }
                })
                .collect();
            let zeros: Vec<f64> = v.iter().copied().filter(|&z| z == 0.0).collect();
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap()); // stable, -0 == +0
            let (min, max, med) = order_stats(&mut v, &zeros);
            let bits = |f: f64| f.to_bits();
            assert_eq!(bits(min), bits(sorted[0]));
            assert_eq!(bits(max), bits(sorted[n - 1]));
            assert_eq!(bits(med), bits(sorted[n / 2]), "{sorted:?}");
        }
    }

    #[test]
    fn fast_path_agrees_with_the_general_parser() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = 1 + (x % 17) as usize;
            let dot = (x >> 8) as usize % (digits + 1);
            let mut t: String = (0..digits)
                .map(|i| char::from(b'0' + ((x >> (i * 3)) % 10) as u8))
                .collect();
            if dot < digits {
                t.insert(dot, '.');
            }
            if x & 1 == 0 {
                t.insert(0, '-');
            }
            let fast = fast_decimal(t.as_bytes());
            if let Some(v) = fast {
                assert_eq!(v.to_bits(), t.parse::<f64>().unwrap().to_bits(), "{t}");
            }
            // Inside a larger buffer (the eight-byte path), followed by a line end or a blank.
            let end = [b'\n', b' ', b'x'][(x >> 40) as usize % 3];
            let mut framed = b"  ".to_vec();
            framed.extend_from_slice(t.as_bytes());
            framed.push(end);
            framed.extend_from_slice(b"12345678.9");
            match scan_decimal(&framed, 2) {
                Some((v, e)) => {
                    assert_eq!(Some(v.to_bits()), fast.map(f64::to_bits), "{t}");
                    assert_eq!(e, 2 + t.len(), "{t}");
                }
                None => assert!(fast.is_none(), "{t}"),
            }
        }
    }

    #[test]
    fn one_pass_reading_agrees_with_the_line_by_line_path() {
        let shapes = [
            "{}", "{}", " {}", "\t{} 9", "{}\t#x", "{}\r", "+{}", "{}e0", "{} ", "#{}", "",
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let (mut plain, mut ref_text) = (String::new(), String::new());
        for i in 0..300_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = match x % 4 {
                0 => format!("{}", (x >> 20) % 1000),
                1 => format!("{:.6}", (x >> 12) as f64 / 1e9),
                2 => format!("-{}.{}", (x >> 30) % 100, (x >> 8) % 100_000_000_000),
                _ => format!("0.{:019}", x >> 3),
            };
            let shape = shapes[(x >> 50) as usize % shapes.len()];
            let shape = if v.starts_with('-') {
                shape.trim_start_matches('+')
            } else {
                shape
            };
            let line = shape.replace("{}", &v);
            let line = if i == 0 { "1".to_string() } else { line };
            plain.push_str(&line);
            plain.push('\n');
            // Column 2 behind a marker token never takes the one-pass path.
            ref_text.push_str(&format!("m {line}\n"));
        }
        plain.push_str("7.5"); // no newline at the end
        ref_text.push_str("m 7.5");
        let fast = read_set_sized(
            Trickle(plain.as_bytes(), 1, 70_000),
            Some(plain.len() as u64),
            "f",
            1,
            b" \t",
        )
        .unwrap();
        let slow = read_set(ref_text.as_bytes(), "f", 2, b" \t").unwrap();
        assert_same_reading(&fast, &slow);
        // An invalid line is reported with the same number either way.
        let bad = format!("{plain}\n1x\n");
        let e = read_set(Trickle(bad.as_bytes(), 7, 70_000), "f", 1, b" \t").unwrap_err();
        assert_eq!(e.message(), "ministat: Invalid data on line 300002 in f");
    }

    #[test]
    fn strtod_forms() {
        assert_eq!(strtod_whole(b"0x10"), Some(16.0));
        assert_eq!(strtod_whole(b"99999999999999999999"), Some(1e20));
        assert_eq!(
            strtod_whole(b"-1234567890.123456789"),
            "-1234567890.123456789".parse().ok()
        );
        assert_eq!(strtod_whole(b" 5"), Some(5.0));
        assert_eq!(strtod_whole(b"-1.5e3"), Some(-1500.0));
        assert_eq!(strtod_whole(b".5"), Some(0.5));
        assert_eq!(strtod_whole(b"0x1.8p1"), Some(3.0));
        assert!(strtod_whole(b"inf").unwrap().is_infinite());
        assert_eq!(strtod_whole(b"5\r"), None);
        assert_eq!(strtod_whole(b"95 "), None);
        assert_eq!(strtod_whole(b"5 x"), None);
        assert_eq!(strtod_whole(b"1e"), None);
        assert_eq!(strtod_whole(b"abc"), None);
        assert_eq!(strtod_whole(b"1_000"), None);
    }

    #[test]
    fn columns_comments_and_short_lines() {
        let d = read("1,2\n3,4\n#c\n\n5,6\n7\n", 2, ",").unwrap();
        assert_eq!((d.min, d.median, d.max, d.points.len()), (2.0, 4.0, 6.0, 3));
        let d = read("5 # x\n# only\n1\n2\n", 1, " \t").unwrap();
        assert_eq!((d.min, d.median, d.max), (1.0, 2.0, 5.0));
        assert!(read("1 # 9\n2 # 9\n3 # 9\n", 2, " ").is_err());
    }

    #[test]
    fn trailing_blanks_of_the_line_are_stripped_not_those_of_a_token() {
        // A CRLF file ending in a blank CRLF line reads (ministat strips the line's end).
        let d = read("1\r\n2\r\n3\r\n\r\n \x0c\n", 1, " \t").unwrap();
        assert_eq!(d.points.len(), 3);
        assert_eq!(read("7 \r\n8\r\n9\n", 1, " ").unwrap().points.len(), 3);
        // A blank inside the line that is not a delimiter ends nothing: invalid, as in ministat.
        assert_eq!(
            read("1\n2\n4 ,5\n", 1, ",").unwrap_err(),
            ReadError::Invalid("ministat: Invalid data on line 3 in f".into())
        );
        assert!(read("1\n2\n5\r 6\n", 1, " \t").is_err());
        // Leading blanks of a token are skipped by strtod.
        assert_eq!(read(" 1, 2\n3, 4\n5, 6\n", 2, ",").unwrap().min, 2.0);
    }

    #[test]
    fn ministat_errors() {
        assert_eq!(
            read("1\nx\n3\n", 1, " ").unwrap_err(),
            ReadError::Invalid("ministat: Invalid data on line 2 in f".into())
        );
        assert_eq!(read("1\n2\n", 1, " ").unwrap_err().exit_code(), 2);
        assert!(matches!(
            read("1\nnan\n2\n3\n", 1, " "),
            Err(ReadError::Refused(_))
        ));
        // A line over ministat's buffer is read in fgets's pieces, each a line of its own:
        // 8191 zeros, then 809 (two values), 1, 2, and the bad line is line 5.
        let long = format!("{}\n1\n2\nx\n", "0".repeat(9000));
        assert_eq!(
            read(&long, 1, " ").unwrap_err(),
            ReadError::Invalid("ministat: Invalid data on line 5 in f".into())
        );
        // Exactly a piece long: the newline is read as an empty line of its own.
        let set = read(&format!("1\n{}3\n4\nx\n", "0".repeat(8190)), 1, " ").unwrap_err();
        assert_eq!(set.message(), "ministat: Invalid data on line 5 in f");
        let set = read(&format!("1\n{}3\n4\n", "0".repeat(8190)), 1, " ").unwrap();
        assert_eq!(set.points, vec![1.0, 3.0, 4.0]);
        // Longer than a read block, no newline at the end: whole pieces only.
        let set = read(&format!("1\n2\n{}", "0 ".repeat(100_000)), 1, " ").unwrap();
        assert_eq!(set.points.len(), 2 + 200_000usize.div_ceil(LINE_MAX));
        assert!(matches!(
            read("\u{0}\u{1}\u{2}garbage\n", 1, " "),
            Err(ReadError::TooFew(_))
        ));
    }
}
