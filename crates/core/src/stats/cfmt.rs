//! C `printf` number formatting (`%g`, `%13.8g`, `%.1f`) reproduced exactly, because ministat's
//! output is defined by glibc's printf and Rust has no `%g`.
//!
//! Rust's `{:e}` formatting is correctly rounded (round-half-to-even on the exact binary value),
//! as glibc's is, so the digits agree; only the layout rules of `%g` are applied here.

/// Formats like C's `%.{prec}g` (no width, no flags).
pub fn g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() {
            "-nan".into()
        } else {
            "nan".into()
        };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let p = prec.max(1);
    // Round to p significant digits first: the exponent after rounding decides the style.
    let e_form = format!("{:.*e}", p - 1, x);
    let (mant, exp) = e_form.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    if exp < -4 || exp >= p as i32 {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp) as usize;
        strip_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

/// Formats like C's `%{width}.{prec}g`: right-aligned in `width`.
pub(crate) fn g_width(x: f64, width: usize, prec: usize) -> String {
    format!("{:>width$}", g(x, prec))
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_c_printf() {
        // Expected strings are what glibc's printf("%g") / ("%13.8g") print.
        let cases: &[(f64, usize, &str)] = &[
            (0.0, 6, "0"),
            (-0.0, 6, "-0"),
            (1.0, 6, "1"),
            (278.674_17, 6, "278.674"),
            (12.109_23, 6, "12.1092"),
            (0.000_123_456, 6, "0.000123456"),
            (0.000_012_345_6, 6, "1.23456e-05"),
            (123_456.0, 6, "123456"),
            (1_234_567.0, 6, "1.23457e+06"),
            (999_999.5, 6, "1e+06"),
            (2181.4983, 8, "2181.4983"),
            (19.144_156_123, 8, "19.144156"),
            (1e100, 8, "1e+100"),
            (0.5, 1, "0.5"),
            (2.5, 1, "2"),
            (f64::INFINITY, 6, "inf"),
        ];
        for &(x, p, want) in cases {
            assert_eq!(g(x, p), want, "%.{p}g of {x}");
        }
        assert_eq!(g_width(2.5, 13, 8), "          2.5");
    }
}
