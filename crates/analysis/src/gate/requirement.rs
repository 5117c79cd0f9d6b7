//! A gate's requirement, parsed strictly: `p99.9<100us` (a quantile below a latency),
//! `rate(>200us)<1e-6` (the fraction of samples above a latency below a rate) or `max<10ms`
//! (every sample below a latency). The first two become "the rate of an event is below a
//! limit", which exact binomial bounds can judge; the third is judged on each run's exact max.

use latlab_core::config::{parse_time_ns, BareUnit};

/// What is counted in each sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// The sample is at or above this many ns (a quantile requirement).
    AtLeast(u64),
    /// The sample is above this many ns (a rate requirement).
    Above(u64),
    /// Some sample is at or above this many ns: judged on each run's exact maximum (`max<T`).
    Max(u64),
}

/// A parsed requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The text as given, without spaces.
    pub text: String,
    /// For `pQ<T`: Q as a fraction (0.999).
    pub quantile: Option<f64>,
    /// The event counted.
    pub event: Event,
    /// The event's rate must stay below this.
    pub limit: f64,
}

/// Parses a list of requirements separated by commas or semicolons
/// (`p99.9<100us,max<10ms`); each is judged on the same runs.
pub fn parse_list(text: &str) -> Result<Vec<Requirement>, String> {
    let v: Vec<Requirement> = text
        .split([',', ';'])
        .filter(|p| !p.trim().is_empty())
        .map(Requirement::parse)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("no requirement given".into());
    }
    Ok(v)
}

impl Requirement {
    /// The latency threshold in ns.
    pub fn threshold_ns(&self) -> u64 {
        match self.event {
            Event::AtLeast(t) | Event::Above(t) | Event::Max(t) => t,
        }
    }

    /// Parses `p99.9<100us`, `p99.99 < 50us` or `rate(>200us)<1e-6`; a bare time is µs.
    pub fn parse(text: &str) -> Result<Requirement, String> {
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let form = "expected pQ<TIME (p99.9<100us), max<TIME (max<10ms) or rate(>TIME)<RATE \
                    (rate(>200us)<1e-6)";
        let (lhs, rhs) = t
            .split_once('<')
            .ok_or_else(|| format!("no '<' in '{text}': {form}"))?;
        if let Some(inner) = lhs.strip_prefix("rate(>").and_then(|r| r.strip_suffix(')')) {
            let over = parse_time_ns(inner, BareUnit::Micros)?;
            let limit: f64 = rhs
                .parse()
                .map_err(|_| format!("rate '{rhs}' is not a number: {form}"))?;
            if !(limit > 0.0 && limit < 1.0) {
                return Err(format!("rate {rhs} must be between 0 and 1 (exclusive)"));
            }
            return Ok(Requirement {
                text: t.clone(),
                quantile: None,
                event: Event::Above(over),
                limit,
            });
        }
        if lhs == "max" {
            let at = parse_time_ns(rhs, BareUnit::Micros)?;
            if at == 0 {
                return Err(format!("max<{rhs}: no latency is below 0"));
            }
            return Ok(Requirement {
                text: t.clone(),
                quantile: None,
                event: Event::Max(at),
                limit: 0.0,
            });
        }
        let pct: f64 = lhs
            .strip_prefix('p')
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("'{lhs}' is not pQ, max or rate(>TIME): {form}"))?;
        if !(pct > 0.0 && pct < 100.0) {
            return Err(format!(
                "percentile {pct} must be between 0 and 100 (exclusive)"
            ));
        }
        let at = parse_time_ns(rhs, BareUnit::Micros)?;
        // 12 significant digits: 99.9 % is 0.999, not 0.9990000000000001.
        let round = |x: f64| format!("{x:.12e}").parse::<f64>().unwrap_or(x);
        let q = round(pct / 100.0);
        Ok(Requirement {
            text: t.clone(),
            quantile: Some(q),
            event: Event::AtLeast(at),
            limit: round((100.0 - pct) / 100.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms() {
        let r = Requirement::parse("p99.9 < 100us").unwrap();
        assert_eq!(r.event, Event::AtLeast(100_000));
        assert!((r.limit - 1e-3).abs() < 1e-15);
        assert_eq!(r.quantile, Some(0.999));
        let r = Requirement::parse("rate(>200us)<1e-6").unwrap();
        assert_eq!(r.event, Event::Above(200_000));
        assert_eq!(r.limit, 1e-6);
        assert_eq!(r.threshold_ns(), 200_000);
        assert_eq!(
            Requirement::parse("p99.99<50").unwrap().event,
            Event::AtLeast(50_000)
        );
        assert_eq!(
            Requirement::parse("max < 10ms").unwrap().event,
            Event::Max(10_000_000)
        );
        let e = Requirement::parse("min<1us").unwrap_err();
        assert!(e.contains("max<TIME") && e.contains("not pQ, max"), "{e}");
        for bad in [
            "p99.9",
            "p100<1us",
            "q99<1us",
            "rate(>1us)<2",
            "rate(1us)<0.1",
            "p99<fast",
            "max<0",
            "max<",
            "max>1ms",
            "",
        ] {
            assert!(Requirement::parse(bad).is_err(), "{bad}");
        }
    }
}
