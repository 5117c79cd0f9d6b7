//! Reading data sets exactly as ministat does: `fgets` lines, `strtok` on the delimiter set,
//! column N, `#` comments, `strtod` numbers, its error texts. Where ministat would silently
//! misread (lines over its 8 KiB buffer, NaN/inf that crash its plot) this refuses clearly.

use std::io::BufRead;

/// ministat's line buffer (`BUFSIZ`): longer lines are split by `fgets`.
pub const LINE_MAX: usize = 8191;

/// A data set: name, values and the order statistics ministat prints.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSet {
    /// File name as ministat prints it (`<stdin>` for standard input).
    pub name: String,
    /// The values, in no particular order.
    pub points: Vec<f64>,
    /// Smallest value (the first of ministat's sorted array).
    pub min: f64,
    /// Largest value (the last of ministat's sorted array).
    pub max: f64,
    /// Element n/2 of ministat's sorted array.
    pub median: f64,
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

/// Parses a token as C's `strtod` would, requiring nothing but white space after the number
/// (Debian's ministat accepts trailing `\r`, `\t` ...).
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
    let s = s.trim_start_matches(WS).trim_end_matches(WS);
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.starts_with(['+', '-']) {
        return None;
    }
    let v = if body.len() > 2 && (body.starts_with("0x") || body.starts_with("0X")) {
        parse_hex(&body[2..])?
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
    let (neg, digits) = match tok.first()? {
        b'-' => (true, &tok[1..]),
        _ => (false, tok),
    };
    // At most 19 characters, so at most 19 digits: m cannot overflow a u64.
    if digits.len() > 19 {
        return None;
    }
    let (mut m, mut dot) = (0u64, usize::MAX);
    for (i, &b) in digits.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d < 10 {
            m = m * 10 + d as u64;
        } else if b == b'.' && dot == usize::MAX {
            dot = i;
        } else {
            return None;
        }
    }
    let nd = digits.len() - usize::from(dot != usize::MAX);
    let frac = if dot == usize::MAX {
        0
    } else {
        digits.len() - dot - 1
    };
    if nd == 0 || nd > 19 || m >= 1 << 53 || frac > 22 {
        return None;
    }
    let v = m as f64 / POW10[frac];
    Some(if neg { -v } else { v })
}

fn parse_hex(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find(['p', 'P']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    if let Some(e) = exp {
        let e: i32 = e.parse().ok()?;
        v *= 2f64.powi(e);
    }
    Some(v)
}

/// Reads one data set from `r` (named `name`), taking column `column` (1-based) of tokens
/// split on any byte of `delim`.
pub fn read_set(
    mut r: impl BufRead,
    name: &str,
    column: usize,
    delim: &[u8],
) -> Result<DataSet, ReadError> {
    let mut is_delim = [false; 256];
    for &b in delim {
        is_delim[b as usize] = true;
    }
    let mut st = State {
        points: Vec::new(),
        zeros: Vec::new(),
        sy: 0.0,
        syy: 0.0,
        line: 0,
        name,
        column,
        is_delim,
        nul_possible: true,
    };
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let chunk = r
            .fill_buf()
            .map_err(|e| ReadError::Refused(format!("latlab: {name}: {e}")))?;
        if chunk.is_empty() {
            if !carry.is_empty() {
                st.nul_possible = true;
                st.line(&carry)?;
            }
            break;
        }
        // C strings end at the first NUL: only chunks holding one need the per-line check.
        st.nul_possible = memchr::memchr(0, chunk).is_some();
        let mut start = 0;
        for pos in memchr::memchr_iter(b'\n', chunk) {
            let line = &chunk[start..pos];
            if carry.is_empty() {
                st.line(line)?;
            } else {
                carry.extend_from_slice(line);
                st.nul_possible = true;
                st.line(&carry)?;
                carry.clear();
            }
            start = pos + 1;
        }
        carry.extend_from_slice(&chunk[start..]);
        if carry.len() > LINE_MAX - 1 {
            st.line += 1;
            return Err(st.too_long());
        }
        let len = chunk.len();
        r.consume(len);
    }
    if st.points.len() < 3 {
        return Err(ReadError::TooFew(format!(
            "Dataset {name} must contain at least 3 data points"
        )));
    }
    let State {
        mut points,
        zeros,
        sy,
        syy,
        ..
    } = st;
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

/// What `read_set` accumulates line by line.
struct State<'a> {
    points: Vec<f64>,
    /// The signed zeros in input order (they compare equal but print differently).
    zeros: Vec<f64>,
    sy: f64,
    syy: f64,
    line: usize,
    name: &'a str,
    column: usize,
    is_delim: [bool; 256],
    /// False when the current chunk has no NUL byte (saves a scan per line).
    nul_possible: bool,
}

impl State<'_> {
    fn too_long(&self) -> ReadError {
        ReadError::Refused(format!(
            "latlab: line {} in {} is longer than {} bytes (ministat would split it into several values)",
            self.line,
            self.name,
            LINE_MAX - 1
        ))
    }

    /// One line without its newline: find the column's token (strtok rules), parse, add.
    #[inline]
    fn line(&mut self, raw: &[u8]) -> Result<(), ReadError> {
        self.line += 1;
        if raw.len() > LINE_MAX - 1 {
            return Err(self.too_long());
        }
        // C strings end at the first NUL byte.
        let text = match self.nul_possible.then(|| memchr::memchr(0, raw)).flatten() {
            Some(i) => &raw[..i],
            None => raw,
        };
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
        self.points.push(d);
        if d == 0.0 {
            self.zeros.push(d);
        }
        self.sy += d;
        self.syy += d * d;
        Ok(())
    }
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
    let (_, &mut med, _) = points.select_nth_unstable_by(k, f64::total_cmp);
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
            if let Some(v) = fast_decimal(t.as_bytes()) {
                assert_eq!(v.to_bits(), t.parse::<f64>().unwrap().to_bits(), "{t}");
            }
        }
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
        assert_eq!(strtod_whole(b"5\r"), Some(5.0));
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
        let long = format!("{}\n1\n2\n", "1".repeat(9000));
        assert!(read(&long, 1, " ")
            .unwrap_err()
            .message()
            .contains("line 1"));
        assert!(matches!(
            read("\u{0}\u{1}\u{2}garbage\n", 1, " "),
            Err(ReadError::TooFew(_))
        ));
    }
}
