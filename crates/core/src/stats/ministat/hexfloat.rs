//! C99 hexadecimal floats (`0x1.8p3`) as glibc's `strtod` reads them: correctly rounded to
//! nearest-even, subnormals included. The standard library parses only decimal.

/// The value of the hex float whose text after `0x` is `s` (`[digits][.digits][p[+-]digits]`),
/// or None when it is not one.
pub(crate) fn parse(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find(['p', 'P']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    // The first 60 significant bits, exactly; anything after them only as a sticky bit.
    let (mut m, mut e2, mut sticky) = (0u64, 0i64, false);
    let mut take = |d: u32, e2_step: i64, e2: &mut i64| {
        if m >> 56 == 0 {
            m = m << 4 | u64::from(d);
            *e2 += e2_step;
        } else {
            sticky |= d != 0;
            *e2 += e2_step + 4;
        }
    };
    for c in int.chars() {
        take(c.to_digit(16)?, 0, &mut e2);
    }
    for c in frac.chars() {
        take(c.to_digit(16)?, -4, &mut e2);
    }
    if let Some(e) = exp {
        let (neg, digits) = match e.as_bytes().first() {
            Some(b'-') => (true, &e[1..]),
            Some(b'+') => (false, &e[1..]),
            _ => (false, e),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Past ±100 000 every value is 0 or infinite: saturate instead of overflowing.
        let v: i64 = digits.parse().unwrap_or(i64::MAX).min(100_000);
        e2 += if neg { -v } else { v };
    }
    Some(round(m, e2, sticky))
}

/// m · 2^e2 (plus a little more when `sticky`), rounded to the nearest double, ties to even.
fn round(m: u64, e2: i64, sticky: bool) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let bits = 64 - i64::from(m.leading_zeros());
    let top = e2 + bits - 1; // exponent of the leading bit
    if top > 1023 {
        return f64::INFINITY;
    }
    // Bits the result can hold: 53 for normal numbers, fewer below 2^-1022 (none below 2^-1075).
    let keep = if top >= -1022 { 53 } else { 53 - (-1022 - top) };
    let drop = bits - keep;
    let (mut r, mut k) = (m, e2);
    if drop > 64 {
        return 0.0; // below half the smallest subnormal
    }
    if drop > 0 {
        let d = drop as u32;
        let half = 1u64 << (d - 1);
        let rest = if d == 64 { m } else { m & ((1u64 << d) - 1) };
        r = if d == 64 { 0 } else { m >> d };
        k += drop;
        if rest > half || (rest == half && (sticky || r & 1 == 1)) {
            r += 1;
        }
        if r == 0 {
            return 0.0;
        }
    }
    // r·2^k is now exact in a double (or overflows to infinity): scale in two exact steps so
    // no intermediate product leaves the normal range early.
    let first = k.clamp(-1000, 1000);
    let v = r as f64 * pow2(first) * pow2(k - first);
    if v.is_finite() {
        v
    } else {
        f64::INFINITY
    }
}

/// 2^k for -1074 ≤ k ≤ 1023 (0 below, infinity above).
fn pow2(k: i64) -> f64 {
    match k {
        k if k > 1023 => f64::INFINITY,
        k if k >= -1022 => f64::from_bits(((k + 1023) as u64) << 52),
        k if k >= -1074 => f64::from_bits(1u64 << (k + 1074)),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_rounded_and_subnormal_values() {
        assert_eq!(parse("10"), Some(16.0));
        assert_eq!(parse("1.8p1"), Some(3.0));
        assert_eq!(parse(".8"), Some(0.5));
        assert_eq!(parse("1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(parse("1p-1075"), Some(0.0)); // a tie with 0: to even
        assert_eq!(parse("1.8p-1075"), Some(f64::from_bits(1))); // above the tie
        assert_eq!(parse("1.8p-1070"), Some(f64::from_bits(0x18)));
        assert_eq!(parse("1p-1022"), Some(f64::MIN_POSITIVE));
        assert_eq!(parse("1.fffffffffffffp1023"), Some(f64::MAX));
        assert_eq!(parse("1p1024"), Some(f64::INFINITY));
        assert_eq!(parse("1.fffffffffffff8p1023"), Some(f64::INFINITY)); // rounds past MAX
        assert_eq!(parse("1.ffffffffffffffp-1023"), Some(f64::MIN_POSITIVE)); // up to normal
        assert_eq!(parse("fffffffffffffffffffp0"), Some(7.555786372591432e22));
        // Past 53 bits: nearest, ties to even. Every expected value here is what glibc 2.36's
        // strtod returns for "0x" + the text.
        assert_eq!(parse("1.000000000000081p0"), Some(1.0000000000000002));
        assert_eq!(parse("1.00000000000008p0"), Some(1.0)); // tie, even stays
        assert_eq!(parse("1.00000000000018p0"), Some(1.0000000000000004)); // tie, odd up
        assert_eq!(
            parse("1.000000000000080000000001p0"),
            Some(1.0000000000000002)
        );
        assert_eq!(parse("0.0000000000000000000001p88"), Some(1.0));
        assert_eq!(parse("p3"), None);
        assert_eq!(parse("1p"), None);
        assert_eq!(parse("1g"), None);
        assert_eq!(parse("1p99999999999999999999999"), Some(f64::INFINITY));
        assert_eq!(parse("1p-99999999999999999999999"), Some(0.0));
    }
}
