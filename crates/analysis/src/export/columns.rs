//! A minimal aligned text table: right-aligned numeric columns, no cursor codes, stable for
//! parsers (one header line, one line per row, columns separated by at least two spaces).

use std::borrow::Cow;

/// `rows` with every cell on one line.
fn cells(rows: &[Vec<String>]) -> Vec<Vec<Cow<'_, str>>> {
    rows.iter()
        .map(|r| r.iter().map(|c| latlab_core::output::one_line(c)).collect())
        .collect()
}

/// Renders `rows` under `header`, each column as wide as its widest cell; the first column is
/// left-aligned, the others right-aligned.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows = cells(rows);
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
        let mut parts = Vec::with_capacity(cols);
        for (i, c) in cells.enumerate() {
            let pad = width[i].saturating_sub(c.chars().count());
            if i == 0 {
                parts.push(format!("{c}{}", " ".repeat(pad)));
            } else {
                parts.push(format!("{}{c}", " ".repeat(pad)));
            }
        }
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied(), &mut out);
    for r in &rows {
        line(&mut r.iter().map(|c| c.as_ref()), &mut out);
    }
    out
}

/// Renders `rows` under `header` with every column left-aligned (text such as ids and tags).
pub fn render_left(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows = cells(rows);
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let parts: Vec<String> = cells
            .enumerate()
            .map(|(i, c)| {
                format!(
                    "{c}{}",
                    " ".repeat(width[i].saturating_sub(c.chars().count()))
                )
            })
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(&mut header.iter().copied());
    for r in &rows {
        out.push_str(&line(&mut r.iter().map(|c| c.as_ref())));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligns() {
        let t = super::render(
            &["task", "max"],
            &[
                vec!["T0".into(), "5".into()],
                vec!["T10".into(), "1234".into()],
            ],
        );
        assert_eq!(t, "task   max\nT0       5\nT10   1234\n");
        let t = super::render_left(&["id", "kind"], &[vec!["a1".into(), "cyclic".into()]]);
        assert_eq!(t, "id  kind\na1  cyclic\n");
        // A cell's line break cannot make a row of its own.
        let t = super::render_left(&["id", "host"], &[vec!["a1".into(), "h\nb2  fake".into()]]);
        assert_eq!(t, "id  host\na1  h\\nb2  fake\n");
        assert_eq!(t.lines().count(), 2);
    }
}
