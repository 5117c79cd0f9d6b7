//! The shape of the code, checked: imports flow one way (the top-level modules form no cycle and
//! no two files import each other, directly or round a circle), nothing outside `cli` imports
//! `cli`, and a doc comment that names a source file names a real one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The crate's files by module path (`measure::cyclic` for src/measure/cyclic/mod.rs).
fn modules() -> BTreeMap<String, PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut segs: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if segs.last().is_some_and(|s| s == "mod") {
                segs.pop();
            }
            let m = segs.join("::");
            (m != "lib" && m != "main").then_some((m, p))
        })
        .collect()
}

/// A file's code without its unit tests and comments.
fn code(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The words of identifiers following `prefix` (`crate::a::b::C` gives ["a", "b", "C"]).
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let path: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let segs: Vec<String> = path
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// Module → modules it refers to (longest module prefix of each path; a module and its own
/// submodules are one family and left out).
fn file_edges(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    let resolve = |segs: &[String]| -> Option<String> {
        (1..=segs.len())
            .rev()
            .map(|k| segs[..k].join("::"))
            .find(|m| mods.contains_key(m))
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, p) in mods {
        let text = code(p);
        let is_dir_mod = p.file_name().is_some_and(|f| f == "mod.rs");
        let parent: Vec<String> = {
            let mut v: Vec<String> = m.split("::").map(String::from).collect();
            if !is_dir_mod || v.len() > 1 {
                v.pop();
            }
            v
        };
        let mut refs: Vec<Vec<String>> = paths_after(&text, "crate::");
        for s in paths_after(&text, "super::") {
            let mut full = parent.clone();
            full.extend(s);
            refs.push(full);
        }
        for r in refs {
            if let Some(t) = resolve(&r) {
                let family = t.starts_with(&format!("{m}::")) || m.starts_with(&format!("{t}::"));
                if t != *m && !family {
                    edges.entry(m.clone()).or_default().insert(t);
                }
            }
        }
    }
    edges
}

/// Strongly connected components with more than one member (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        e: &'a BTreeMap<String, BTreeSet<String>>,
        idx: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.idx.len();
        t.idx.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.e.get(v) {
            for w in ws {
                if !t.idx.contains_key(w.as_str()) {
                    visit(t, w);
                    let lw = t.low[w.as_str()];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w.as_str()) {
                    let iw = t.idx[w.as_str()];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.idx[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        e: edges,
        idx: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|(a, bs)| std::iter::once(a.as_str()).chain(bs.iter().map(String::as_str)))
        .collect();
    for v in nodes {
        if !t.idx.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn top_level_modules_form_no_cycle() {
    let mods = modules();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, bs) in file_edges(&mods) {
        let ta = a.split("::").next().unwrap().to_string();
        for b in bs {
            let tb = b.split("::").next().unwrap().to_string();
            if ta != tb {
                top.entry(ta.clone()).or_default().insert(tb);
            }
        }
    }
    assert!(
        top.contains_key("cli"),
        "the import graph was not read: {top:?}"
    );
    let c = cycles(&top);
    assert!(c.is_empty(), "top-level module cycles: {c:?}");
}

#[test]
fn no_two_files_import_each_other_round_a_circle() {
    let c = cycles(&file_edges(&modules()));
    assert!(c.is_empty(), "file circles: {c:?}");
}

#[test]
fn nothing_outside_cli_imports_cli() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    rust_files(&tests, &mut files);
    let bad: Vec<String> = files
        .iter()
        .filter(|p| !p.starts_with(src.join("cli")) && !p.ends_with("src/main.rs"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let (c, l) = (concat!("crate::", "cli"), concat!("latlab::", "cli"));
            text.contains(c) || text.contains(l)
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(bad.is_empty(), "files below cli that import it: {bad:?}");
}

#[test]
fn doc_comments_name_real_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mods = modules();
    let mut missing = Vec::new();
    for p in mods.values() {
        let text = std::fs::read_to_string(p).unwrap();
        for line in text.lines().map(str::trim_start) {
            if !(line.starts_with("//!") || line.starts_with("///")) {
                continue;
            }
            for word in line.split(|c: char| c.is_whitespace() || "`()[],;'\"".contains(c)) {
                let word = word.trim_end_matches(['.', ':']);
                if !word.ends_with(".rs") || word.contains('*') || word.contains('<') {
                    continue;
                }
                let dir = p.parent().unwrap();
                let found = [root.join(word), root.join("src").join(word), dir.join(word)]
                    .iter()
                    .any(|c| c.exists())
                    || mods.values().any(|f| f.ends_with(word));
                if !found {
                    missing.push(format!("{}: {word}", p.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "doc comments naming files that do not exist: {missing:?}"
    );
}
