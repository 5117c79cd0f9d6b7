//! A gate's verdicts as JUnit XML, the test-report format GitLab and Jenkins read: one
//! `testsuite` with a `testcase` per requirement; a violated requirement is a `failure`, an
//! undecided one `skipped` (neither passed nor failed), each with the gate's own report as
//! `system-out`.

use super::judge::Outcome;

/// One requirement's outcome.
#[derive(Debug, Clone)]
pub struct Case {
    /// The requirement as written (`p99.9<100us`).
    pub name: String,
    /// Its verdict.
    pub outcome: Outcome,
    /// One line: the verdict and why.
    pub message: String,
    /// The whole report of the requirement.
    pub detail: String,
    /// Seconds of measurement judged.
    pub seconds: f64,
}

/// Escapes text for an XML attribute or element; characters XML 1.0 cannot hold are dropped.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' | '\t' => o.push(c),
            '\r' => o.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => o.push(c),
        }
    }
    o
}

/// The JUnit document.
pub fn xml(cases: &[Case]) -> String {
    let count = |o: Outcome| cases.iter().filter(|c| c.outcome == o).count();
    let secs: f64 = cases.iter().map(|c| c.seconds).fold(0.0, f64::max);
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    s.push_str(&format!(
        "<testsuites name=\"latlab gate\" tests=\"{n}\" failures=\"{f}\" errors=\"0\" time=\"{secs:.3}\">\n\
         <testsuite name=\"latlab gate\" tests=\"{n}\" failures=\"{f}\" errors=\"0\" skipped=\"{k}\" time=\"{secs:.3}\">\n",
        n = cases.len(),
        f = count(Outcome::Violated),
        k = count(Outcome::Undecided),
    ));
    for c in cases {
        s.push_str(&format!(
            "  <testcase classname=\"latlab.gate\" name=\"{}\" time=\"{:.3}\">\n",
            esc(&c.name),
            c.seconds.max(0.0)
        ));
        match c.outcome {
            Outcome::Violated => s.push_str(&format!(
                "    <failure type=\"violated\" message=\"{}\">{}</failure>\n",
                esc(&c.message),
                esc(&c.detail)
            )),
            Outcome::Undecided => s.push_str(&format!(
                "    <skipped type=\"undecided\" message=\"{}\"/>\n",
                esc(&c.message)
            )),
            Outcome::Met => {}
        }
        s.push_str(&format!(
            "    <system-out>{}</system-out>\n  </testcase>\n",
            esc(&c.detail)
        ));
    }
    s.push_str("</testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::judge::text;

    #[test]
    fn one_case_per_requirement_and_nothing_unescaped() {
        let c = |name: &str, outcome| Case {
            name: name.into(),
            outcome,
            message: format!("verdict: {} <&>", text(outcome)),
            detail: "line 1\nline \"2\" \u{1}".into(),
            seconds: 10.0,
        };
        let x = xml(&[
            c("p99.9<100us", Outcome::Met),
            c("max<10ms", Outcome::Violated),
            c("rate(>1ms)<1e-6", Outcome::Undecided),
        ]);
        assert_eq!(x.matches("<testcase ").count(), 3);
        assert!(x.contains("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""));
        assert!(x.contains("name=\"p99.9&lt;100us\""));
        assert!(x.contains("<failure type=\"violated\""));
        assert!(x.contains("<skipped type=\"undecided\""));
        assert!(!x.contains('\u{1}') && !x.contains("<&>"));
    }
}
