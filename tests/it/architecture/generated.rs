//! The parts of docs/architecture.md generated from the code: the layers, the top-level import
//! graph (mermaid) and the files of each measurement's folder. Each stands between marker
//! comments; the test compares, and `LATLAB_BLESS=1` rewrites.

use super::graph::Crate;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// How to bring the page up to date, said when it differs.
const HOW: &str = "LATLAB_BLESS=1 cargo test --test it architecture:: rewrites it";

/// The page.
fn page() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md")
}

/// Each module's level: 0 for one that imports no other, else one above the highest it
/// imports (the graph has no cycle: another test checks that).
fn levels(top: &BTreeMap<String, BTreeSet<String>>, all: &BTreeSet<String>) -> Vec<Vec<String>> {
    fn level(
        m: &str,
        top: &BTreeMap<String, BTreeSet<String>>,
        memo: &mut BTreeMap<String, usize>,
        depth: usize,
    ) -> usize {
        if let Some(&l) = memo.get(m) {
            return l;
        }
        assert!(depth < 100, "a cycle through {m}");
        let l = top.get(m).map_or(0, |deps| {
            deps.iter()
                .map(|d| 1 + level(d, top, memo, depth + 1))
                .max()
                .unwrap_or(0)
        });
        memo.insert(m.to_string(), l);
        l
    }
    let mut memo = BTreeMap::new();
    let mut by: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for m in all {
        by.entry(level(m, top, &mut memo, 0))
            .or_default()
            .push(m.clone());
    }
    by.into_values().rev().collect()
}

/// The generated sections: name → text.
pub fn sections(k: &Crate) -> Vec<(&'static str, String)> {
    let top = k.top_level();
    let all: BTreeSet<String> = k
        .modules
        .keys()
        .map(|m| m.split("::").next().unwrap().to_string())
        .collect();
    let mut layers = String::from("```\nmain\n");
    for level in levels(&top, &all) {
        layers.push_str(&format!("  ─▶ {}\n", level.join(", ")));
    }
    layers.push_str("```\n");

    let n: usize = top.values().map(BTreeSet::len).sum();
    let mut graph = format!(
        "{n} edges between {} top-level modules.\n\n```mermaid\ngraph TD\n",
        all.len()
    );
    for (a, bs) in &top {
        for b in bs {
            graph.push_str(&format!("  {a} --> {b}\n"));
        }
    }
    graph.push_str("```\n");

    let mut folders = String::from("| folder | files |\n|---|---|\n");
    let mut dirs: Vec<_> = std::fs::read_dir(super::graph::krate("lab").join("measure"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let mut files: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".rs"))
            .collect();
        files.sort();
        let rel = d
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")))
            .unwrap();
        let files: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
        folders.push_str(&format!("| `{}/` | {} |\n", rel.display(), files.join(" ")));
    }
    vec![("layers", layers), ("imports", graph), ("folders", folders)]
}

/// The page with every generated section replaced by `sections`; the names of the sections
/// whose markers are missing.
fn render(text: &str, sections: &[(&str, String)]) -> (String, Vec<String>) {
    let mut out = text.to_string();
    let mut missing = Vec::new();
    for (name, body) in sections {
        let begin = format!("<!-- generated: {name} ({HOW}) -->\n");
        let end = format!("<!-- end generated: {name} -->");
        let (Some(a), Some(b)) = (out.find(&begin), out.find(&end)) else {
            missing.push(name.to_string());
            continue;
        };
        assert!(a < b, "{name}: the end marker comes first");
        out.replace_range(a + begin.len()..b, body);
    }
    (out, missing)
}

/// Fails if docs/architecture.md differs from what the code says; with `LATLAB_BLESS=1`
/// rewrites it instead.
pub fn check_or_bless(k: &Crate) {
    let text = std::fs::read_to_string(page()).unwrap();
    let (want, missing) = render(&text, &sections(k));
    assert!(
        missing.is_empty(),
        "docs/architecture.md lacks the markers of {missing:?}: put \
         `<!-- generated: NAME ({HOW}) -->` and `<!-- end generated: NAME -->` where each goes"
    );
    if want == text {
        return;
    }
    if std::env::var_os("LATLAB_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(page(), &want).unwrap();
        return;
    }
    let first = text
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(text.lines().count().min(want.lines().count()));
    panic!(
        "docs/architecture.md is stale at line {} (it says {:?}, the code {:?}): {HOW}",
        first + 1,
        text.lines().nth(first).unwrap_or(""),
        want.lines().nth(first).unwrap_or("")
    );
}
