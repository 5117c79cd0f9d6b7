//! A line-parallel reader for the common data file (one plain decimal per line): newlines are
//! found 64 bytes at a time and each line is parsed without a chain from one line to the next,
//! because the byte-serial parser in `read.rs` is latency-bound at ~30 cycles per line.
//! Everything it does not recognise is left to `read.rs`, which stays the reference.

/// What a data set accumulates: ministat's array and running sums.
#[derive(Default)]
pub(super) struct Values {
    /// The values, in input order.
    pub(crate) points: Vec<f64>,
    /// The signed zeros in input order (they compare equal but print differently).
    pub(crate) zeros: Vec<f64>,
    /// Sum of the values in input order (ministat's `sy`).
    pub(crate) sy: f64,
    /// Sum of their squares in input order (ministat's `syy`).
    pub(crate) syy: f64,
}

impl Values {
    /// Adds one value.
    #[inline(always)]
    pub(super) fn push(&mut self, d: f64) {
        self.points.push(d);
        if d == 0.0 {
            self.zeros.push(d);
        }
        self.sy += d;
        self.syy += d * d;
    }
}

/// Adds the lines of `b` from `pos` on to `v` while each is exactly a plain decimal that
/// `plain` takes, and stops at the first that is not (or in the last 64 bytes of `b`, which
/// ends with a newline): returns where that line starts and how many lines were added. The
/// caller reads the line it stopped at the ordinary way and calls again after it.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(never)]
pub(super) fn plain_run(b: &[u8], start: usize, v: &mut Values) -> (usize, usize) {
    if b.len() < 64 {
        return (start, 0);
    }
    // Two passes over batches of lines: the integer work of each line (`plain`) first, the
    // floating-point tail (conversion, division, sums) after, so each pass has short chains.
    let mut batch = [0u64; 256];
    let (mut pos, mut base, mut k) = (start, start, 0usize);
    let mut mask = window(b, base);
    loop {
        let mut n = 0;
        let stopped = loop {
            if n == batch.len() {
                break false;
            }
            while mask == 0 {
                base += 64;
                if base >= b.len() {
                    break;
                }
                mask = window(b, base);
            }
            if mask == 0 {
                break true;
            }
            let nl = base + mask.trailing_zeros() as usize;
            let Some(p) = plain(b, pos, nl) else {
                break true;
            };
            mask &= mask - 1;
            pos = nl + 1;
            batch[n] = p;
            n += 1;
        };
        add_batch(v, &batch[..n]);
        k += n;
        if stopped {
            return (pos, k);
        }
    }
}

/// Adds the values `plain` packed, in order.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn add_batch(v: &mut Values, batch: &[u64]) {
    let first = v.points.len();
    let (mut sy, mut syy, mut zero) = (v.sy, v.syy, false);
    v.points.extend(batch.iter().map(|&p| {
        // m / 10^frac, then the sign (-0.0 for "-0").
        let d = (p & ((1 << 53) - 1)) as i64 as f64 / POW10[(p >> 53) as usize & 15];
        let d = f64::from_bits(d.to_bits() | (p & 1 << 63));
        zero |= d == 0.0;
        sy += d;
        syy += d * d;
        d
    }));
    // The signed zeros, in order (looked for only when there are some).
    if zero {
        let new = &v.points[first..];
        v.zeros.extend(new.iter().filter(|&&d| d == 0.0));
    }
    (v.sy, v.syy) = (sy, syy);
}

/// Elsewhere every line takes the ordinary path.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(super) fn plain_run(_b: &[u8], start: usize, _v: &mut Values) -> (usize, usize) {
    (start, 0)
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::sys::simd::V16;

/// One bit per newline of `b[base..base + 64]`, bytes past the end counting as none (`b` holds
/// at least 64 bytes: the last window is read from the end, without a copy).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn window(b: &[u8], base: usize) -> u64 {
    let top = b.len() - 64;
    let (w, skip) = if base <= top {
        (&b[base..base + 64], 0)
    } else {
        (&b[top..], base - top)
    };
    let nl = V16::splat(b'\n');
    let mut bits = 0u64;
    for (k, w) in w.chunks_exact(16).enumerate() {
        let m = V16::load(w.try_into().expect("16 bytes")).eq(nl).mask();
        bits |= u64::from(m) << (16 * k);
    }
    bits >> skip
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// Sixteen bytes of `SLIDE` from offset k (0..=16) have the bytes below 16 - k set (48 bytes,
/// so that an offset masked with 31 needs no bounds check).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
const SLIDE: [u8; 48] = {
    let mut s = [0u8; 48];
    let mut i = 0;
    while i < 16 {
        s[i] = 0xFF;
        i += 1;
    }
    s
};

/// Bytes below 16 - k set (k in 0..=16).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn below(k: usize) -> V16 {
    let k = k & 31;
    V16::load(SLIDE[k..k + 16].try_into().expect("16 bytes"))
}

/// The value of the line `b[pos..nl]` when it is exactly `[-]digits[.digits]` (at least one
/// digit, at most 16 bytes, `nl >= 16`) and the digits form an integer m below 2^53: then it is
/// `m / 10^frac`, one correctly rounded division of exact values, as `scan_decimal` in
/// `read.rs` computes it (bit for bit), and this returns m, frac and the sign packed as
/// `m | frac << 53 | neg << 63` (`add_batch` divides). None for anything else.
///
/// The 16 bytes that end at the newline are examined at once: digit and point masks, the point
/// removed by moving the digits before it one byte up, the digits combined by multiply-adds.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn plain(b: &[u8], pos: usize, nl: usize) -> Option<u64> {
    let len = nl.wrapping_sub(pos);
    if len.wrapping_sub(1) >= 16 || nl < 16 {
        return None;
    }
    let w: &[u8; 16] = b.get(nl - 16..nl)?.try_into().ok()?;
    // The line is in bytes 16 - len .. 16; its number (after a '-') from `start` on.
    let neg = w[16 - len] == b'-';
    let start = 16 - len + usize::from(neg);
    let body = 0xFFFF_u32 >> start << start;
    let v = V16::load(w);
    let d = v.wrapping_sub(V16::splat(b'0'));
    let digits = d.min(V16::splat(9)).eq(d).mask() & body;
    let dot = v.eq(V16::splat(b'.')).mask() & body;
    if digits | dot != body || dot & dot.wrapping_sub(1) != 0 || digits == 0 {
        return None;
    }
    // Bytes up to the point move one up (closing the gap); `frac` digits follow it.
    let (moved, frac) = if dot != 0 {
        let q = dot.trailing_zeros() as usize;
        (q + 1, 15 - q)
    } else {
        (0, 0)
    };
    let nd = 16 - start - usize::from(dot != 0);
    let take = below(16 - moved);
    let x = take.and(d.shift_up()).or(take.and_not(d));
    // The digits, right-aligned; everything before them zero.
    let (hi, lo) = below(nd).and_not(x).decimal_halves();
    let m = u64::from(hi) * 100_000_000 + u64::from(lo);
    (m < 1 << 53).then_some(m | (frac as u64) << 53 | u64::from(neg) << 63)
}

#[cfg(test)]
mod tests {
    use super::super::read::{read_set, read_set_sized, strtod_whole};

    /// Lines of every shape the fast path must take, refuse, or hand back: plain decimals of 1
    /// to 17 digits around 2^53, the point anywhere or missing, signs, blanks, CR, exponents.
    fn random_line(x: &mut u64) -> String {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        let r = *x;
        let fixed = [
            "-0.0",
            "0.0",
            "0",
            "-0",
            ".5",
            "5.",
            "-.5",
            "-5.",
            "-",
            ".",
            "-.",
            "",
            "9007199254740991",
            "9007199254740992",
            "900719925474099.3",
            "-90071992547409.93",
            "1234567890123456",
            "12345678901234567",
            "0000000000000001",
            "1.000000000000000",
            "5\r",
            "5 ",
            " 5",
            "+5",
            "1e5",
            "5-",
            "1..2",
            "--1",
            "0x10",
            "nan",
            "1\t",
            "12345678.12345678",
        ];
        if r.is_multiple_of(4) {
            return fixed[(r >> 8) as usize % fixed.len()].to_string();
        }
        let digits = 1 + (r >> 4) as usize % 17;
        let mut t: String = (0..digits)
            .map(|i| char::from(b'0' + ((r >> (i * 3 + 10)) % 10) as u8))
            .collect();
        let dot = (r >> 40) as usize % (digits + 2);
        if dot <= digits {
            t.insert(dot, '.');
        }
        if r >> 62 == 0 {
            t.insert(0, '-');
        }
        t
    }

    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[test]
    fn plain_lines_parse_bit_for_bit_as_strtod_wherever_they_lie() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let (mut taken, mut refused) = (0, 0);
        for round in 0..200_000usize {
            let line = random_line(&mut x);
            // The line at every offset from the buffer's start and end (newline at the 16-byte
            // boundary and past it), after a previous line of digits that must not leak in.
            let pad = round % 40;
            let mut b = "7".repeat(pad).into_bytes();
            b.push(b'\n');
            let pos = b.len();
            b.extend_from_slice(line.as_bytes());
            let nl = b.len();
            b.push(b'\n');
            b.extend_from_slice(&b"12\n".repeat(round % 3));
            let got = super::plain(&b, pos, nl).map(|p| {
                let mut v = super::Values::default();
                super::add_batch(&mut v, &[p]);
                v.points[0]
            });
            let want = strtod_whole(line.as_bytes()).filter(|v| v.is_finite());
            match got {
                Some(v) => {
                    taken += 1;
                    assert_eq!(Some(v.to_bits()), want.map(f64::to_bits), "{line:?}");
                }
                None => refused += 1,
            }
            // Every plain decimal that fits (16 bytes, below 2^53, a newline at 16 or later)
            // is taken: the test exercises the fast path, not only its refusals.
            let body = line.strip_prefix('-').unwrap_or(&line);
            let digits: String = body.chars().filter(|c| c.is_ascii_digit()).collect();
            let plain_shape = !digits.is_empty()
                && body.chars().filter(|&c| c == '.').count() <= 1
                && body.chars().all(|c| c.is_ascii_digit() || c == '.')
                && line.len() <= 16
                && digits.parse::<u64>().is_ok_and(|m| m < 1 << 53);
            assert_eq!(got.is_some(), plain_shape && nl >= 16, "{line:?} at {pos}");
        }
        assert!(taken > 50_000 && refused > 50_000, "{taken} {refused}");
    }

    use super::super::read::Trickle;

    #[test]
    fn runs_of_plain_lines_read_as_the_line_by_line_path() {
        let mut x = 0x0ddb_1a5e_5bad_5eedu64;
        let (mut text, mut reference) = (String::new(), String::new());
        let mut i = 0;
        while text.len() < 600_000 {
            let line = random_line(&mut x);
            // Only lines ministat reads (the others are tested one by one above).
            let ok = strtod_whole(line.trim_end().as_bytes()).is_some_and(f64::is_finite)
                || line.trim().is_empty();
            if !ok || line.contains('\r') && i % 2 == 0 {
                continue;
            }
            i += 1;
            text.push_str(&line);
            text.push('\n');
            // Column 2 behind a marker never takes a fast path.
            reference.push_str(&format!("m {line}\n"));
        }
        let fast = read_set_sized(
            Trickle(text.as_bytes(), 3, 5000),
            Some(text.len() as u64),
            "f",
            1,
            b" \t",
        )
        .unwrap();
        let slow = read_set(reference.as_bytes(), "f", 2, b" \t").unwrap();
        super::super::read::assert_same_reading(&fast, &slow);
        // The line number of an error counts every line a run took.
        let bad = format!("{text}5x\n");
        let e = read_set(bad.as_bytes(), "f", 1, b" \t").unwrap_err();
        let lines = text.lines().count() + 1;
        assert_eq!(
            e.message(),
            format!("ministat: Invalid data on line {lines} in f")
        );
    }
}
