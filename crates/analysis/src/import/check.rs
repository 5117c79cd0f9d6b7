//! Imported figures are checked as a measurement's would be before anything is stored: every
//! number finite and within the result schema's range (a latency at most one hour, the
//! histogram's top), a series' min ≤ avg ≤ max, its count without wrap-around, the keys a tool
//! always writes present. A fault is exit 2 naming the file, the line and the field; the line
//! of a JSON field is found by [`line_of`].

use super::bad;
use latlab_core::error::{Error, Result};
use latlab_core::stats::histogram::HIGHEST_NS;
use serde_json::Value;

/// A JSON file being imported: its text and name, for messages that point into it.
pub(crate) struct Source<'a> {
    /// The file's text.
    pub(crate) text: &'a str,
    /// Its name.
    pub(crate) file: &'a str,
}

impl Source<'_> {
    /// Bad input at the JSON field `path` (`["thread", "0", "avg"]`): names the file, the
    /// field's line and the field.
    pub(crate) fn at(&self, path: &[&str], why: impl std::fmt::Display) -> Error {
        let field = path.join(".");
        // A missing field is pointed at by the object that should hold it.
        let line = (0..=path.len())
            .rev()
            .find_map(|n| line_of(self.text, &path[..n]).filter(|_| n > 0));
        match line {
            Some(l) => bad(self.file, format!("line {l}: {field}: {why}")),
            None => bad(self.file, format!("{field}: {why}")),
        }
    }

    /// A count at `path`: None when absent or null; an error unless a whole number that fits
    /// in 64 bits.
    pub(crate) fn count(&self, v: &Value, path: &[&str]) -> Result<Option<u64>> {
        match v {
            Value::Null => Ok(None),
            Value::Number(n) => n.as_u64().map(Some).ok_or_else(|| {
                self.at(
                    path,
                    format!("{n} is not a count (a whole number below 2^64)"),
                )
            }),
            other => Err(self.at(path, format!("{other} is not a count"))),
        }
    }

    /// A latency at `path` given in units of `scale` ns (1000: µs): None when absent or
    /// null; an error unless it is a finite number from 0 to one hour.
    pub(crate) fn latency(&self, v: &Value, path: &[&str], scale: f64) -> Result<Option<u64>> {
        Ok(self.time(v, path, scale)?.map(|x| x.round() as u64))
    }

    /// As [`Source::latency`], kept as a fraction of a ns (an average).
    pub(crate) fn time(&self, v: &Value, path: &[&str], scale: f64) -> Result<Option<f64>> {
        match v {
            Value::Null => Ok(None),
            Value::Number(n) => match n.as_f64().map(|x| x * scale) {
                Some(x) if x.is_finite() && (0.0..=HIGHEST_NS as f64).contains(&x) => Ok(Some(x)),
                Some(x) if x.is_finite() && x > 0.0 => Err(self.at(
                    path,
                    format!(
                        "{n} is beyond the {} s a latency may be (the histogram's range)",
                        HIGHEST_NS / 1_000_000_000
                    ),
                )),
                _ => Err(self.at(path, format!("{n} is not a non-negative finite number"))),
            },
            other => Err(self.at(path, format!("{other} is not a number"))),
        }
    }

    /// Requires `v` (at `path`) present.
    pub(crate) fn required<T>(&self, v: Option<T>, path: &[&str]) -> Result<T> {
        v.ok_or_else(|| self.at(path, "missing (the tool always writes it)"))
    }

    /// Checks min ≤ max and the avg between them, of one series whose fields live under
    /// `base`. The tools' own figures can disagree a little (real cyclicdeadline output had its
    /// avg 5 % below its min): an avg outside min..max by at most [`AVG_LEEWAY`] of the bound
    /// is kept as the tool wrote it, with the warning returned; further out, or min above max,
    /// is no tool's output and refused.
    pub(crate) fn ordered(
        &self,
        base: &[&str],
        min: Option<u64>,
        avg: Option<f64>,
        max: Option<u64>,
    ) -> Result<Option<String>> {
        let field = |f: &'static str| {
            let mut p = base.to_vec();
            p.push(f);
            p
        };
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                return Err(self.at(&field("min"), format!("{lo} ns is above max {hi} ns")));
            }
        }
        let Some(a) = avg else { return Ok(None) };
        // The tools print the average rounded (two decimals of a µs): allow that much.
        let slack = 10.0;
        let (side, far) = match (min, max) {
            (Some(lo), _) if a + slack < lo as f64 => (
                format!("below its min {lo} ns"),
                a + slack < lo as f64 * (1.0 - AVG_LEEWAY),
            ),
            (_, Some(hi)) if a > hi as f64 + slack => (
                format!("above its max {hi} ns"),
                a > hi as f64 * (1.0 + AVG_LEEWAY) + slack,
            ),
            _ => return Ok(None),
        };
        if far {
            return Err(self.at(&field("avg"), format!("{a} ns is {side}")));
        }
        Ok(Some(format!(
            "{}: the tool's own avg ({a} ns) is {side}; kept as the tool wrote it",
            base.join(".")
        )))
    }
}

/// How far outside its own min..max a tool's avg may lie (a fraction of the bound) and still be
/// imported, with a warning.
pub(crate) const AVG_LEEWAY: f64 = 0.2;

/// One level of the JSON being scanned.
enum Frame {
    /// An object: the key of the value being read, and whether a key comes next.
    Obj(Option<String>, bool),
    /// An array: the index of the value being read.
    Arr(usize),
}

/// The 1-based line where the value at `path` (object keys and array indices) starts in the
/// JSON `text`, if it is there. A small scanner: strings (with escapes), nesting and commas.
pub(crate) fn line_of(text: &str, path: &[&str]) -> Option<usize> {
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let here = |stack: &[Frame]| -> bool {
        stack.len() == path.len()
            && stack.iter().zip(path).all(|(f, p)| match f {
                Frame::Obj(Some(k), _) => k == p,
                Frame::Obj(None, _) => false,
                Frame::Arr(n) => n.to_string() == *p,
            })
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => line += 1,
            b' ' | b'\t' | b'\r' | b':' => {}
            b',' => match stack.last_mut() {
                Some(Frame::Obj(_, want)) => *want = true,
                Some(Frame::Arr(n)) => *n += 1,
                None => {}
            },
            b'}' | b']' => {
                stack.pop();
            }
            b'"' => {
                let start_line = line;
                let mut s = Vec::new();
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if let Some(&x) = b.get(i) {
                        if x == b'\n' {
                            line += 1;
                        }
                        s.push(x);
                    }
                    i += 1;
                }
                if let Some(Frame::Obj(key, want @ true)) = stack.last_mut() {
                    *key = Some(String::from_utf8_lossy(&s).into_owned());
                    *want = false;
                } else if here(&stack) {
                    return Some(start_line);
                }
            }
            b'{' | b'[' => {
                if here(&stack) {
                    return Some(line);
                }
                stack.push(if c == b'{' {
                    Frame::Obj(None, true)
                } else {
                    Frame::Arr(0)
                });
            }
            _ => {
                if here(&stack) {
                    return Some(line);
                }
                while i + 1 < b.len() && !b",}] \t\r\n".contains(&b[i + 1]) {
                    i += 1;
                }
            }
        }
        i += 1;
    }
    None
}

/// The first key the `thread` object of rt-tests' JSON holds twice (serde keeps only the last
/// of a repeated key, so a thread would be lost without a word); None when none repeats or
/// the text is not such JSON (its own error says so).
pub(super) fn repeated_thread(text: &str) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys(Option<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Keys, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> std::result::Result<Keys, A::Error> {
                    let mut seen = std::collections::BTreeSet::new();
                    let mut twice = None;
                    while let Some((k, IgnoredAny)) = m.next_entry::<String, IgnoredAny>()? {
                        if !seen.insert(k.clone()) && twice.is_none() {
                            twice = Some(k);
                        }
                    }
                    Ok(Keys(twice))
                }
            }
            d.deserialize_map(V)
        }
    }
    #[derive(serde::Deserialize)]
    struct Top {
        thread: Option<Keys>,
    }
    serde_json::from_str::<Top>(text).ok()?.thread?.0
}

/// A thread's `cpu`: None when absent or -1 (cyclictest without `-a`); anything else must be a
/// CPU number Linux can have.
pub(super) fn thread_cpu(src: &Source, path: &[&str], v: &Value) -> Result<Option<usize>> {
    const MAX_CPUS: u64 = 8192;
    match v {
        Value::Null => Ok(None),
        Value::Number(n) if n.as_i64() == Some(-1) => Ok(None),
        Value::Number(n) if n.as_u64().is_some_and(|c| c < MAX_CPUS) => {
            Ok(n.as_u64().map(|c| c as usize))
        }
        other => Err(src.at(
            path,
            format!(
                "{other} is not a CPU number (0 to {}, or -1 for none)",
                MAX_CPUS - 1
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_line_of_a_field() {
        let t = "{\"a\": 1,\n \"thread\": {\n  \"0\": {\"min\": 3,\n   \"avg\": 1e308,\n   \"s\": \"x,}\"},\n  \"1\": [1, {\"avg\": 2}]}}";
        assert_eq!(line_of(t, &["thread", "0", "avg"]), Some(4));
        assert_eq!(line_of(t, &["thread", "0", "min"]), Some(3));
        assert_eq!(line_of(t, &["thread", "1", "1", "avg"]), Some(6));
        assert_eq!(line_of(t, &["a"]), Some(1));
        assert_eq!(line_of(t, &["thread", "2"]), None);
    }

    #[test]
    fn out_of_range_and_disordered_figures_are_refused_naming_line_and_field() {
        let text = "{\n\"avg\": 1e308,\n\"min\": 5}";
        let s = Source {
            text,
            file: "p.json",
        };
        let v: Value = serde_json::from_str(text).unwrap();
        let e = s.time(&v["avg"], &["avg"], 1000.0).unwrap_err().to_string();
        assert!(
            e.contains("p.json") && e.contains("line 2") && e.contains("avg"),
            "{e}"
        );
        let w = s
            .ordered(&["thread", "0"], Some(5000), Some(4500.0), Some(9000))
            .unwrap()
            .unwrap();
        assert!(
            w.contains("thread.0") && w.contains("below its min 5000"),
            "{w}"
        );
        // Far outside: refused, naming the field.
        let e = s
            .ordered(&["r"], Some(3000), Some(40_000.0), Some(12_000))
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.avg") && e.contains("above its max"), "{e}");
        assert!(s.ordered(&[], Some(9), None, Some(5)).is_err());
        assert_eq!(s.ordered(&[], Some(5), Some(7.0), Some(9)).unwrap(), None);
        assert!(s.required(None::<u64>, &["max"]).is_err());
    }
}
