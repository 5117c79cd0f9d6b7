//! The shape of the code, checked on whole files (read with `syn`; only `#[cfg(test)]` items
//! are left out): imports flow one way (the top-level modules form no cycle and no two files
//! import each other, directly or round a circle), nothing outside `cli` imports `cli`,
//! `unsafe` is written only in crates/core/src/sys, and a doc comment (or docs/*.md, README.md) that
//! names a source file names a real one. The graph part of docs/architecture.md is generated
//! from the same reading (`generated.rs`): the test fails when the page differs and says how to
//! rewrite it.

mod generated;
mod graph;
mod limits;

use graph::{read, rust_files};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
    let top = read().top_level();
    assert!(
        top.contains_key("cli") && top.contains_key("driver"),
        "the import graph was not read: {top:?}"
    );
    let c = cycles(&top);
    assert!(c.is_empty(), "top-level module cycles: {c:?}");
}

#[test]
fn no_two_files_import_each_other_round_a_circle() {
    let c = cycles(&read().edges);
    assert!(c.is_empty(), "file circles: {c:?}");
}

/// The reader sees what a text scan cut at the first `#[cfg(test)]` did not: the code after a
/// file's unit tests, `use super::{…}` groups, names a `use` brought in, paths written inline
/// (in expressions and macro arguments), child modules; and it leaves the unit tests out.
#[test]
fn the_reader_sees_whole_files_groups_aliases_and_inline_paths() {
    let text = r#"
        mod child;
        use super::{args::{self, Args}, Other as Renamed};
        use crate::trace;
        use std::fmt;
        #[cfg(test)]
        mod tests {
            use crate::cli::Everything;
        }
        #[cfg(test)]
        fn helper() { crate::store::open(); }
        pub(super) fn after_the_tests(a: args::Lowered) -> fmt::Result {
            trace::spikes::why();
            child::deep::f();
            let x = format!("{}", crate::io::read_text_limited(p));
            super::super::stats::median(&[]);
            Renamed::new();
            latlab_lab::driver::execute();
            latlab_trace::flight::between();
            Ok(())
        }
        impl X {
            #[cfg(test)]
            fn only_in_tests() { crate::gate::judge(); }
        }
    "#;
    let ast = syn::parse_file(text).unwrap();
    let seen: BTreeSet<String> = graph::references("measure::cyclic", &ast)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    for want in [
        "measure::args",
        "measure::args::Args",
        "measure::args::Lowered",
        "measure::Other",
        "trace",
        "trace::spikes::why",
        "measure::cyclic::child::deep::f",
        "io::read_text_limited",
        "stats::median",
        "driver::execute",
        "trace::flight::between",
    ] {
        assert!(seen.contains(want), "{want} not seen in {seen:#?}");
    }
    for unwanted in ["cli::Everything", "store::open", "gate::judge"] {
        assert!(
            !seen.contains(unwanted),
            "{unwanted} is test code, seen: {seen:#?}"
        );
    }
    assert!(
        seen.iter()
            .all(|p| !p.starts_with("std") && !p.starts_with("fmt")),
        "another crate's path taken for latlab's: {seen:#?}"
    );
    // And on the crate itself: every file is a module of the graph.
    let k = read();
    assert_eq!(
        k.modules.len() + 5,
        graph::all_rust_files().len(),
        "main.rs and the lib.rs of the binary, core, analysis and lab are roots; every other \
         file is a module (the lib.rs of the tracer and of http are `trace` and `http`)"
    );
}

#[test]
fn nothing_outside_cli_imports_cli() {
    let k = read();
    assert!(
        k.cli_refs.is_empty(),
        "modules below cli that refer to it: {:?}",
        k.cli_refs
    );
    // The tests drive the binary, never the command line's code.
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let bad: Vec<String> = rust_files(&tests)
        .into_iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            text.contains(concat!("latlab::", "cli"))
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(bad.is_empty(), "tests that import cli: {bad:?}");
}

#[test]
fn unsafe_is_written_only_in_src_sys() {
    let k = read();
    let sys = graph::krate("core").join("sys");
    let outside: Vec<String> = k
        .unsafe_uses
        .iter()
        .filter(|(f, _)| !f.starts_with(&sys))
        .map(|(f, what)| format!("{}: {what}", f.display()))
        .collect();
    assert!(
        outside.is_empty(),
        "unsafe outside crates/core/src/sys: {outside:?}"
    );
    assert!(
        k.unsafe_uses.iter().any(|(f, _)| f.starts_with(&sys)),
        "no unsafe found in crates/core/src/sys at all: the reader is blind"
    );
}

/// The project's folders a page or comment names files under.
const ROOTS: [&str; 9] = [
    "src/",
    "crates/",
    "tests/",
    "docs/",
    "scripts/",
    "bench/",
    "benches/",
    "contrib/",
    "examples/",
];

/// The words of `text` that name a file under one of the project's folders or end in `.rs`,
/// trimmed of punctuation; templates (`NAME`, `*`, `<x>`) are left out.
fn file_mentions(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || "`()[],;'\"|".contains(c))
        .map(|w| {
            // A link's `#section` names a place in the file, not another file.
            let w = w.split('#').next().unwrap_or_default();
            w.trim_end_matches(['.', ':']).to_string()
        })
        .filter(|w| {
            let dir = ROOTS.iter().any(|d| w.starts_with(d));
            (dir || w.ends_with(".rs"))
                && !w.contains(['*', '<', '{', '$'])
                && !w.chars().any(|c| c.is_ascii_uppercase())
                && !w.contains("://")
        })
        .collect()
}

/// Module paths written in backticks (`trace::recorder::Recorder::between`) whose first word is
/// one of the crate's top-level modules.
fn module_mentions(text: &str, top: &BTreeSet<String>) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|code| {
            code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map(|w| w.trim_matches(':').to_string())
                .collect::<Vec<_>>()
        })
        .filter(|w| {
            w.contains("::")
                && w.split("::").next().is_some_and(|f| top.contains(f))
                && w.split("::").all(|s| !s.is_empty())
        })
        .collect()
}

/// Whether the module part of `path` (its snake_case words before the last) is a module.
fn names_a_module(k: &graph::Crate, path: &str) -> bool {
    let segs: Vec<&str> = path.split("::").collect();
    let module: Vec<&str> = segs[..segs.len() - 1]
        .iter()
        .take_while(|s| {
            s.chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
        })
        .copied()
        .collect();
    k.modules.contains_key(&module.join("::"))
}

/// A page without its sections about the past (a heading that says "Before" or "renamed":
/// they name what the modules were).
fn present(page: &str) -> String {
    let mut out = String::new();
    let mut past = false;
    for line in page.lines() {
        if line.starts_with('#') {
            let h = line.to_lowercase();
            past = h.contains("before") || h.contains("renamed");
        }
        if !past {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The pages under docs/ and docs/commands/.
fn doc_pages() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<_> = ["docs", "docs/commands"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.sort();
    out
}

#[test]
fn doc_comments_and_docs_name_real_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let k = read();
    let top: BTreeSet<String> = k
        .modules
        .keys()
        .filter(|m| !m.contains("::"))
        .cloned()
        .collect();
    let mut texts: Vec<(String, String)> = graph::all_rust_files()
        .into_iter()
        .map(|p| {
            let doc: String = std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .map(str::trim_start)
                .filter(|l| l.starts_with("//"))
                .map(|l| format!("{l}\n"))
                .collect();
            (p.display().to_string(), doc)
        })
        .collect();
    for page in doc_pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        texts.push((page.display().to_string(), present(&text)));
    }
    texts.push((
        "README.md".into(),
        present(&std::fs::read_to_string(root.join("README.md")).unwrap()),
    ));
    let stale: Vec<String> = texts
        .iter()
        .flat_map(|(name, text)| {
            module_mentions(text, &top)
                .into_iter()
                .filter(|m| !names_a_module(&k, m))
                .map(move |m| format!("{name}: {m}"))
        })
        .collect();
    assert!(
        stale.is_empty(),
        "comments and pages naming modules that do not exist: {stale:#?}"
    );
}

#[test]
fn doc_comments_and_docs_name_real_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let k = read();
    let exists = |word: &str, dir: &Path| {
        [root.join(word), root.join("src").join(word), dir.join(word)]
            .iter()
            .any(|c| c.exists())
            || k.modules.values().any(|f| f.ends_with(word))
    };
    let mut missing = Vec::new();
    for p in graph::all_rust_files() {
        let text = std::fs::read_to_string(&p).unwrap();
        for line in text.lines().map(str::trim_start) {
            if !(line.starts_with("//!") || line.starts_with("///") || line.starts_with("// ")) {
                continue;
            }
            for word in file_mentions(line) {
                if !exists(&word, p.parent().unwrap()) {
                    missing.push(format!("{}: {word}", p.display()));
                }
            }
        }
    }
    let mut pages = doc_pages();
    pages.push(root.join("README.md"));
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for word in file_mentions(&text) {
            // A page names source files by their path from the root (src/..., tests/...);
            // a bare `export/summary.rs` in a page's history names a file of the past.
            let by_path = ROOTS.iter().any(|d| word.starts_with(d));
            if by_path && !root.join(&word).exists() {
                missing.push(format!("{}: {word}", page.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "comments and pages naming files that do not exist: {missing:#?}"
    );
}

#[test]
fn docs_architecture_md_is_generated_from_the_code() {
    generated::check_or_bless(&read());
}
