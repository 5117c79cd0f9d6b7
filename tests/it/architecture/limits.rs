//! Units of one sitting: no source file over 600 lines outside its unit tests, no function
//! over 150 lines, at most 10 over 100. What exceeded them when the check came is listed in
//! `limits.txt` beside this file; the list may only shrink — a new excess fails, and so does a
//! listed one that no longer exceeds (take it off the list, or, for a function brought from
//! over 150 lines to between 100 and 150, list it as `long` instead of `fn`).

use super::graph::all_rust_files;
use std::collections::BTreeSet;
use std::path::Path;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The most non-test lines in one file.
const FILE_LINES: usize = 600;
/// The most lines of one function.
const FN_LINES: usize = 150;
/// Functions over this many lines are "long"; at most [`LONG_FNS`] of them.
const LONG: usize = 100;
/// The most long functions in the workspace.
const LONG_FNS: usize = 10;

/// Whether `attrs` make the item exist only in unit tests.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
            || a.path().is_ident("test")
    })
}

/// The lines an item spans, its attributes and doc comments included.
fn lines_of(attrs: &[syn::Attribute], rest: proc_macro2::Span) -> (usize, usize) {
    let start = attrs
        .iter()
        .map(|a| a.span().start().line)
        .chain(std::iter::once(rest.start().line))
        .min()
        .unwrap();
    (start, rest.end().line)
}

/// The functions of one file (name, lines from its signature to its closing brace, doc
/// comments and attributes left out) and its lines inside test-only items.
#[derive(Default)]
struct Sizes {
    fns: Vec<(String, usize)>,
    test_lines: usize,
}

impl<'ast> Visit<'ast> for Sizes {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Impl(m) => &m.attrs,
            syn::Item::Const(m) => &m.attrs,
            syn::Item::Struct(m) => &m.attrs,
            syn::Item::Use(m) => &m.attrs,
            _ => &[],
        };
        if test_only(attrs) {
            let (a, z) = lines_of(attrs, i.span());
            self.test_lines += z + 1 - a;
            return;
        }
        syn::visit::visit_item(self, i);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let (a, z) = (f.sig.span().start().line, f.block.span().end().line);
        self.fns.push((f.sig.ident.to_string(), z + 1 - a));
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if test_only(&f.attrs) {
            return;
        }
        let (a, z) = (f.sig.span().start().line, f.block.span().end().line);
        self.fns.push((f.sig.ident.to_string(), z + 1 - a));
        syn::visit::visit_impl_item_fn(self, f);
    }
}

/// Every excess in the workspace: `file FILE N`, `fn FILE::NAME N` (N its lines), and the
/// long functions (over [`LONG`] lines, at most [`FN_LINES`]) as `long FILE::NAME`.
fn excesses() -> (Vec<String>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut over = Vec::new();
    let mut long = Vec::new();
    for f in all_rust_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        let ast = syn::parse_file(&text).unwrap();
        let mut s = Sizes::default();
        s.visit_file(&ast);
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        let lines = text.lines().count().saturating_sub(s.test_lines);
        if lines > FILE_LINES {
            over.push(format!("file {rel}"));
        }
        for (name, n) in s.fns {
            if n > FN_LINES {
                over.push(format!("fn {rel}::{name}"));
            } else if n > LONG {
                long.push(format!("long {rel}::{name}"));
            }
        }
    }
    over.sort();
    over.dedup();
    long.sort();
    (over, long)
}

#[test]
fn files_and_functions_fit_one_sitting_or_are_listed_until_split() {
    let listed_text = include_str!("limits.txt");
    let listed: BTreeSet<&str> = listed_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let (over, long) = excesses();
    if std::env::var_os("LATLAB_BLESS").is_some_and(|v| v == "1") {
        let head: String = listed_text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let body: String = over.iter().chain(&long).map(|l| format!("{l}\n")).collect();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/architecture/limits.txt");
        std::fs::write(path, head + &body).unwrap();
        return;
    }
    let now: BTreeSet<&str> = over.iter().chain(&long).map(String::as_str).collect();
    let new: Vec<&&str> = now.difference(&listed).collect();
    let gone: Vec<&&str> = listed.difference(&now).collect();
    let long_allowed = listed.iter().filter(|l| l.starts_with("long ")).count();
    assert!(
        new.is_empty() || (new.iter().all(|l| l.starts_with("long ")) && long.len() <= LONG_FNS),
        "over the limits ({FILE_LINES} lines a file, {FN_LINES} a function, {LONG_FNS} \
         functions over {LONG}), not listed in tests/it/architecture/limits.txt: split them \
         along what they do: {new:#?}"
    );
    assert!(
        gone.is_empty(),
        "listed in tests/it/architecture/limits.txt but within the limits now: take them off \
         the list: {gone:#?}"
    );
    assert!(
        long.len() <= LONG_FNS.max(long_allowed),
        "{} functions over {LONG} lines, at most {LONG_FNS} (or the {long_allowed} listed)",
        long.len()
    );
}
