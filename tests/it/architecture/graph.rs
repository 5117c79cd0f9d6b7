//! The workspace's source read as Rust (with `syn`), whole files, only `#[cfg(test)]` items
//! left out, as one tree of modules (each crate's modules at the top, the tracer's crate as
//! `trace`): which module refers to which (through `use` trees, grouped or not, `crate::`,
//! `super::`, `self::`, names a `use` brought in, child modules, and paths written inline in
//! expressions, types and macro arguments), and where `unsafe` is written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The binary's crate: the command line (`src/`).
pub fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The source tree of workspace crate `name` (`crates/NAME/src`).
pub fn krate(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates")
        .join(name)
        .join("src")
}

/// Every source tree with the module its root stands for in the one tree ("" for the crates
/// whose modules sit at the top; `trace` for the tracer and `http` for the monitor's server,
/// whose crate roots are the modules).
pub fn roots() -> Vec<(PathBuf, &'static str)> {
    vec![
        (src(), ""),
        (krate("core"), ""),
        (krate("trace"), "trace"),
        (krate("analysis"), ""),
        (krate("http"), "http"),
        (krate("lab"), ""),
    ]
}

/// Every `.rs` file of the workspace's crates, sorted.
pub fn all_rust_files() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = roots().iter().flat_map(|(d, _)| rust_files(d)).collect();
    out.sort();
    out
}

/// The module a crate's name stands for in the one tree, when `name` is one of latlab's.
fn crate_module(name: &str) -> Option<Vec<String>> {
    match name {
        "latlab" | "latlab_core" | "latlab_analysis" | "latlab_lab" => Some(Vec::new()),
        "latlab_trace" => Some(vec!["trace".to_string()]),
        "latlab_http" => Some(vec!["http".to_string()]),
        _ => None,
    }
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A module's path from its file (`measure::cyclic` for crates/lab/src/measure/cyclic/mod.rs,
/// `trace::flight` for crates/trace/src/flight.rs; "" for the roots, lib.rs and main.rs, but
/// `trace` for the tracer's lib.rs).
fn module_of(file: &Path) -> String {
    let (root, prefix) = roots()
        .into_iter()
        .find(|(d, _)| file.starts_with(d))
        .expect("a file of the workspace");
    let rel = file.strip_prefix(&root).unwrap().with_extension("");
    let mut segs: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    if segs.len() == 1 && (segs[0] == "lib" || segs[0] == "main") {
        segs.clear();
    }
    if !prefix.is_empty() {
        segs.insert(0, prefix.to_string());
    }
    segs.join("::")
}

/// The module `crate::` stands for in `file` (`trace` in the tracer's crate).
fn crate_root_of(file: &Path) -> Vec<String> {
    roots()
        .into_iter()
        .find(|(d, _)| file.starts_with(d))
        .map(|(_, p)| {
            p.split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// What the crate's files say about its shape.
pub struct Crate {
    /// Module path → its file (the roots, lib.rs and main.rs, left out).
    pub modules: BTreeMap<String, PathBuf>,
    /// Module → the modules it refers to (the longest module prefix of each path; a module
    /// and its own submodules are one family and left out).
    pub edges: BTreeMap<String, BTreeSet<String>>,
    /// Where `unsafe` (or an allowance of it) is written: (file, what).
    pub unsafe_uses: Vec<(PathBuf, String)>,
    /// Files that refer to `cli` (module → the paths).
    pub cli_refs: BTreeMap<String, Vec<String>>,
}

/// Reads and resolves the whole crate.
pub fn read() -> Crate {
    let files = all_rust_files();
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .map(|p| (module_of(p), p.clone()))
        .filter(|(m, _)| !m.is_empty())
        .collect();
    let mut krate = Crate {
        modules,
        edges: BTreeMap::new(),
        unsafe_uses: Vec::new(),
        cli_refs: BTreeMap::new(),
    };
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{}: not parsed as Rust: {e}", file.display()));
        let me = module_of(file);
        let mut u = Unsafe(Vec::new());
        u.visit_file(&ast);
        krate
            .unsafe_uses
            .extend(u.0.into_iter().map(|what| (file.clone(), what)));
        for path in references_in(&me, &ast, crate_root_of(file)) {
            let top = !me.is_empty() && !me.starts_with("cli");
            if top && path.first().is_some_and(|s| s == "cli") {
                krate
                    .cli_refs
                    .entry(me.clone())
                    .or_default()
                    .push(path.join("::"));
            }
            let Some(t) = krate.resolve(&path) else {
                continue;
            };
            let family = me.is_empty()
                || t.starts_with(&format!("{me}::"))
                || me.starts_with(&format!("{t}::"));
            if t != me && !family {
                krate.edges.entry(me.clone()).or_default().insert(t);
            }
        }
    }
    krate
}

impl Crate {
    /// The longest prefix of `path` (from the crate root) that is a module.
    pub fn resolve(&self, path: &[String]) -> Option<String> {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].join("::"))
            .find(|m| self.modules.contains_key(m))
    }

    /// The graph of top-level modules (`measure::cyclic` counts as `measure`).
    pub fn top_level(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, bs) in &self.edges {
            let ta = a.split("::").next().unwrap().to_string();
            for b in bs {
                let tb = b.split("::").next().unwrap().to_string();
                if ta != tb {
                    top.entry(ta.clone()).or_default().insert(tb);
                }
            }
        }
        top
    }
}

/// The paths file `ast` of module `module` refers to, absolute (from the crate root, without
/// `crate`); paths into other crates are left out. `main` says it is the binary's root, which
/// reaches the library as `latlab::`.
pub fn references(module: &str, ast: &syn::File) -> Vec<Vec<String>> {
    references_in(module, ast, Vec::new())
}

/// [`references`] of a file whose `crate::` stands for module `root` (the tracer's crate).
fn references_in(module: &str, ast: &syn::File, root: Vec<String>) -> Vec<Vec<String>> {
    let mut r = Refs::new(module, root);
    r.visit_file(ast);
    r.resolved()
}

/// Whether `attrs` hold `#[cfg(test)]` (exactly: the item exists only in unit tests).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// Whether `attrs` allow `unsafe_code` (`#[allow(unsafe_code)]`, inner or outer).
fn allows_unsafe(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("allow")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|ps| ps.iter().any(|p| p.is_ident("unsafe_code")))
    })
}

/// The attributes of an item (none for tokens syn keeps verbatim).
fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The paths one file writes, as it wrote them, with the scope they were written in.
struct Refs {
    /// The module being visited (the file's, then any inline `mod` inside it).
    scope: Vec<String>,
    /// Paths written (scope, segments).
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// Names a `use` brought in (scope, name) → the path it stands for, as written.
    aliases: BTreeMap<(Vec<String>, String), Vec<String>>,
    /// Child modules declared (`mod x;` or inline) in each scope.
    children: BTreeSet<(Vec<String>, String)>,
    /// The module `crate::` stands for.
    root: Vec<String>,
}

impl Refs {
    fn new(module: &str, root: Vec<String>) -> Refs {
        let scope = module
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        Refs {
            scope,
            paths: Vec::new(),
            aliases: BTreeMap::new(),
            children: BTreeSet::new(),
            root,
        }
    }

    /// Records a path written in the current scope.
    fn path(&mut self, segs: Vec<String>) {
        if !segs.is_empty() {
            self.paths.push((self.scope.clone(), segs));
        }
    }

    /// Records every path of a `use` tree under `prefix`, and the names it brings in.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let full = if name == "self" {
                    prefix.clone()
                } else {
                    [prefix.clone(), vec![name.clone()]].concat()
                };
                let local = if name == "self" {
                    prefix.last().cloned().unwrap_or_default()
                } else {
                    name
                };
                self.aliases
                    .insert((self.scope.clone(), local), full.clone());
                self.path(full);
            }
            syn::UseTree::Rename(r) => {
                let name = r.ident.to_string();
                let full = if name == "self" {
                    prefix.clone()
                } else {
                    [prefix.clone(), vec![name]].concat()
                };
                self.aliases
                    .insert((self.scope.clone(), r.rename.to_string()), full.clone());
                self.path(full);
            }
            syn::UseTree::Glob(_) => self.path(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Every recorded path made absolute (from the crate root, without `crate`); paths into
    /// other crates are left out.
    fn resolved(&self) -> Vec<Vec<String>> {
        self.paths
            .iter()
            .filter_map(|(scope, segs)| self.absolute(scope, segs, 0))
            .collect()
    }

    fn absolute(&self, scope: &[String], segs: &[String], depth: usize) -> Option<Vec<String>> {
        let first = segs.first()?;
        let rest = &segs[1..];
        let mut base: Vec<String> = match first.as_str() {
            "crate" => self.root.clone(),
            // Another crate of latlab's: its place in the one tree.
            c if crate_module(c).is_some() => crate_module(c).unwrap(),
            "self" => scope.to_vec(),
            "super" => {
                let mut s = scope.to_vec();
                s.pop()?;
                // `super::super::x`
                let mut rest = rest;
                while rest.first().is_some_and(|r| r == "super") {
                    s.pop()?;
                    rest = &rest[1..];
                }
                return Some([s, rest.to_vec()].concat());
            }
            _ if depth < 8 => {
                // A name a `use` of this scope brought in, or a child module of it. (Names
                // that only a glob import brought in are not known here.)
                let key = (scope.to_vec(), first.clone());
                if let Some(full) = self.aliases.get(&key) {
                    if full.len() == 1 && full[0] == *first && crate_module(first).is_none() {
                        return None; // `use x;` of another crate
                    }
                    let whole = [full.clone(), rest.to_vec()].concat();
                    return self.absolute(scope, &whole, depth + 1);
                }
                if self.children.contains(&key) {
                    return Some([scope.to_vec(), segs.to_vec()].concat());
                }
                return None;
            }
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// Paths in a macro's tokens (`format!("{}", crate::x::f())`): identifiers joined by
    /// `::`, starting where no `::` comes before.
    fn macro_tokens(&mut self, tokens: &syn::buffer::Cursor) {
        #[derive(PartialEq)]
        enum Tok {
            Ident(String),
            Colon,
            Other,
        }
        let mut toks = Vec::new();
        let mut c = *tokens;
        while !c.eof() {
            if let Some((inner, _, _, next)) = c.any_group() {
                self.macro_tokens(&inner);
                toks.push(Tok::Other);
                c = next;
            } else if let Some((id, next)) = c.ident() {
                toks.push(Tok::Ident(id.to_string()));
                c = next;
            } else if let Some((p, next)) = c.punct() {
                toks.push(if p.as_char() == ':' {
                    Tok::Colon
                } else {
                    Tok::Other
                });
                c = next;
            } else if let Some((_, next)) = c.token_tree() {
                toks.push(Tok::Other);
                c = next;
            } else {
                break;
            }
        }
        let mut i = 0;
        while i < toks.len() {
            let after_path = i >= 2 && toks[i - 1] == Tok::Colon && toks[i - 2] == Tok::Colon;
            if let (Tok::Ident(first), false) = (&toks[i], after_path) {
                let mut segs = vec![first.clone()];
                let mut j = i + 1;
                while let (Some(Tok::Colon), Some(Tok::Colon), Some(Tok::Ident(next))) =
                    (toks.get(j), toks.get(j + 1), toks.get(j + 2))
                {
                    segs.push(next.clone());
                    j += 3;
                }
                if segs.len() > 1 || ["crate", "super"].contains(&segs[0].as_str()) {
                    self.path(segs);
                }
                i = j;
            } else {
                i += 1;
            }
        }
    }
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !is_test_only(item_attrs(i)) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.to_string();
        self.children.insert((self.scope.clone(), name.clone()));
        if let Some((_, items)) = &m.content {
            self.scope.push(name);
            for i in items {
                self.visit_item(i);
            }
            self.scope.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut prefix = Vec::new();
        if u.leading_colon.is_some() {
            return; // `use ::x` names another crate
        }
        self.use_tree(&mut prefix, &u.tree);
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let attrs = match i {
            syn::ImplItem::Const(x) => &x.attrs,
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            syn::ImplItem::Macro(x) => &x.attrs,
            _ => return syn::visit::visit_impl_item(self, i),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_impl_item(self, i);
        }
    }

    fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
        let test_only = match s {
            syn::Stmt::Local(l) => is_test_only(&l.attrs),
            syn::Stmt::Macro(m) => is_test_only(&m.attrs),
            _ => false,
        };
        if !test_only {
            syn::visit::visit_stmt(self, s);
        }
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(super)`, `pub(crate)`: who may see an item, not a reference to a module.
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segs = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.path(segs);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        let buf = syn::buffer::TokenBuffer::new2(m.tokens.clone());
        self.macro_tokens(&buf.begin());
    }
}

/// Where a file writes `unsafe` or allows it (`#[allow(unsafe_code)]`), test code included.
struct Unsafe(Vec<String>);

impl<'ast> Visit<'ast> for Unsafe {
    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        if allows_unsafe(std::slice::from_ref(a)) {
            self.0.push("#[allow(unsafe_code)]".into());
        }
    }

    fn visit_expr_unsafe(&mut self, e: &'ast syn::ExprUnsafe) {
        self.0.push("unsafe block".into());
        syn::visit::visit_expr_unsafe(self, e);
    }

    fn visit_signature(&mut self, s: &'ast syn::Signature) {
        if s.unsafety.is_some() {
            self.0.push(format!("unsafe fn {}", s.ident));
        }
        syn::visit::visit_signature(self, s);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if i.unsafety.is_some() {
            self.0.push("unsafe impl".into());
        }
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
        if i.unsafety.is_some() {
            self.0.push(format!("unsafe trait {}", i.ident));
        }
        syn::visit::visit_item_trait(self, i);
    }

    fn visit_item_foreign_mod(&mut self, i: &'ast syn::ItemForeignMod) {
        self.0.push("extern block".into());
        syn::visit::visit_item_foreign_mod(self, i);
    }
}
