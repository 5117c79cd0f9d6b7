//! Run selectors, one grammar for every command that takes a list of runs (`compare`, `gate`,
//! `report`, `runs export`): `run:ID`, a JSON result file, `exp:ID` (every run of an
//! experiment), `exp:ID/K=V[,K=V]` (one level of it) and `tag:K=V[,K=V]` (every stored run with
//! those tags). Items are separated by commas or white space, in one argument or several; a
//! bare `K=V` after `tag:`/`exp:ID/` adds to its tags, a bare id after `run:` is another run.
//! An argument that names an existing file as a whole is that file, whatever characters its
//! name holds (spaces, commas, `=`, a `run:` prefix): it is never split. Double quotes keep
//! commas and spaces in one item (`tag:plan="my plan.toml"`, a tag value that holds them); `\"`
//! and `\\` are a double quote and a backslash in a value. A selector that
//! cannot be read or matches nothing names itself (exit 2).

use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::store::{Filter, Store};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What one selector names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A stored run (`run:ID`, or a bare id that is not a file).
    Run(String),
    /// A file: a latlab JSON result (or, for `compare`, a value file).
    File(PathBuf),
    /// Standard input (`-`; `compare` value files only).
    Stdin,
    /// Every run of an experiment (`exp:ID`).
    Exp(String),
    /// One level of an experiment (`exp:ID/K=V[,K=V]`).
    Level(String, Vec<(String, String)>),
    /// Every stored run with these tags (`tag:K=V[,K=V]`).
    Tags(Vec<(String, String)>),
}

/// A selector with the text it was written as (for messages and labels).
#[derive(Debug, Clone)]
pub struct Item {
    /// As written, continuations included (`tag:a=1,b=2`).
    pub text: String,
    /// What it names.
    pub sel: Selector,
    /// A bare word taken for a stored id (no `run:` before it or before the item ahead).
    pub(crate) bare: bool,
}

/// The grammar, for messages.
pub(crate) const GRAMMAR: &str =
    "run:ID, exp:ID, exp:ID/K=V, tag:K=V[,K=V] or a FILE.json, separated by commas or spaces \
     (an argument that names an existing file is that file, whatever it contains; a value \
     holding either goes in double quotes, and \\\" is a double quote in it: tag:K=\"V W\")";

fn bad(text: &str, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!(
        "selector '{text}': {why} (a run list takes {GRAMMAR})"
    ))
}

fn kv(text: &str, part: &str) -> Result<(String, String)> {
    let (k, v) = part
        .split_once('=')
        .ok_or_else(|| bad(text, format!("'{part}' is not KEY=VALUE")))?;
    // As `--tag` stores them: blanks around the key and the value are not part of them.
    let (k, v) = (k.trim(), v.trim());
    let ok = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if !ok {
        return Err(bad(
            text,
            format!("tag key '{k}' must be letters, digits, '_', '-' or '.'"),
        ));
    }
    if v.is_empty() {
        return Err(bad(text, format!("tag {k} has no value")));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Splits on commas and ASCII white space, except inside double quotes, which are dropped:
/// `tag:plan="my plan.toml"` is one item, so a tag value holding either can be selected. A
/// backslash keeps the double quote or backslash after it as itself (`tag:k=a\"b`, as in a
/// shell's double quotes); before anything else it is itself. A quote left open is refused (it
/// would swallow the rest of the list).
fn tokens(b: &[u8]) -> std::result::Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut quoted = false;
    let mut it = b.iter().copied().peekable();
    while let Some(c) = it.next() {
        match c {
            b'\\' if matches!(it.peek(), Some(b'"' | b'\\')) => cur.extend(it.next()),
            b'"' => quoted = !quoted,
            b',' if !quoted => out.push(std::mem::take(&mut cur)),
            c if c.is_ascii_whitespace() && !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    if quoted {
        return Err("a double quote is not closed".into());
    }
    out.push(cur);
    out.retain(|t| !t.is_empty());
    Ok(out)
}

/// Whether a file (or a link, even one that leads nowhere or loops) is at `p`: such an
/// argument is that file, and reading it names what is wrong with it.
fn present(p: &Path) -> bool {
    p.symlink_metadata().is_ok()
}

/// Parses a run list written over one or more arguments.
pub fn parse<S: AsRef<OsStr>>(args: &[S]) -> Result<Vec<Item>> {
    let mut out: Vec<Item> = Vec::new();
    for arg in args {
        // A whole argument that names an existing file is that file, never split.
        let whole = Path::new(arg.as_ref());
        if !arg.as_ref().is_empty() && present(whole) {
            out.push(Item {
                text: whole.display().to_string(),
                sel: Selector::File(whole.to_path_buf()),
                bare: false,
            });
            continue;
        }
        let words = tokens(arg.as_ref().as_bytes())
            .map_err(|why| bad(&String::from_utf8_lossy(arg.as_ref().as_bytes()), why))?;
        for tok in words {
            let tok = tok.as_slice();
            let text = String::from_utf8_lossy(tok).into_owned();
            let path = Path::new(OsStr::from_bytes(tok));
            let after_run = out
                .last()
                .is_some_and(|l| matches!(l.sel, Selector::Run(_)));
            let mut bare = false;
            let sel = if let Some(id) = text.strip_prefix("run:") {
                if id.is_empty() || id.contains('/') {
                    return Err(bad(&text, "no run id after 'run:'"));
                }
                Selector::Run(id.to_string())
            } else if let Some(rest) = text.strip_prefix("exp:") {
                let (id, level) = match rest.split_once('/') {
                    Some((id, l)) => (id, Some(l)),
                    None => (rest, None),
                };
                if id.is_empty() {
                    return Err(bad(&text, "no experiment id after 'exp:'"));
                }
                match level {
                    None => Selector::Exp(id.to_string()),
                    Some(l) => Selector::Level(id.to_string(), vec![kv(&text, l)?]),
                }
            } else if let Some(rest) = text.strip_prefix("tag:") {
                if rest.is_empty() {
                    return Err(bad(&text, "no KEY=VALUE after 'tag:'"));
                }
                Selector::Tags(vec![kv(&text, rest)?])
            } else if tok == b"-" {
                Selector::Stdin
            } else if present(path) {
                Selector::File(path.to_path_buf())
            } else if let Some(last) = out.last_mut().filter(|_| text.contains('=')) {
                // `tag:a=1,b=2` and `exp:E/a=1,b=2`: more tags of the selector before.
                match &mut last.sel {
                    Selector::Tags(t) | Selector::Level(_, t) => {
                        t.push(kv(&text, &text)?);
                        last.text = format!("{},{text}", last.text);
                        continue;
                    }
                    _ => return Err(bad(&text, "a KEY=VALUE belongs after tag: or exp:ID/")),
                }
            } else if let Some((kind, _)) = text
                .split_once(':')
                .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                return Err(bad(
                    &text,
                    format!("unknown kind '{kind}:' and no such file"),
                ));
            } else if text.contains('/') || text.contains('.') || text.contains('=') {
                return Err(bad(&text, "no such file"));
            } else {
                // A bare stored id (also after `run:A,`).
                bare = !after_run;
                Selector::Run(text.clone())
            };
            out.push(Item { text, sel, bare });
        }
    }
    // Only separators and quotes: nothing is named, and no verdict may rest on no run.
    if out.is_empty() && !args.is_empty() {
        let all: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_ref().as_bytes()).into_owned())
            .collect();
        return Err(bad(&all.join(" "), "it names no run"));
    }
    Ok(out)
}

/// A run a selector named, with the name messages use and its stored tags.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The result.
    pub run: Run,
    /// `run:ID` or the file name.
    pub name: String,
    /// Its tags in the store (empty for files).
    pub(crate) tags: BTreeMap<String, String>,
}

/// Reads selectors against one store, opened the first time it is needed.
pub struct Resolver {
    spec: Option<String>,
    store: Option<Box<dyn Store>>,
    include_disturbed: bool,
    keep_whole: bool,
}

impl Resolver {
    /// A resolver for the store `spec` (None: the default store).
    pub fn new(spec: Option<&str>) -> Self {
        Resolver {
            spec: spec.map(str::to_string),
            store: None,
            include_disturbed: false,
            keep_whole: false,
        }
    }

    /// Keeps a qualification's final result whole (`report` draws its own page) instead of
    /// the checkpoint intervals it is made of.
    pub(crate) fn keep_whole(mut self, yes: bool) -> Self {
        self.keep_whole = yes;
        self
    }

    /// A run made of stored runs (a qualification's final result, whose checkpoint intervals
    /// are its replicates) is those runs, said on stderr; as it is when they are not all in
    /// the store.
    fn replicated(&mut self, r: Resolved) -> Result<Vec<Resolved>> {
        let ids = match r.run.qualification.as_deref() {
            Some(q) if !self.keep_whole && q.interval.is_none() && !q.intervals.is_empty() => {
                q.replicates()
            }
            _ => return Ok(vec![r]),
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in &ids {
            match self.get(id) {
                Ok(x) => out.push(x),
                Err(_) => {
                    latlab_core::note!(
                        "latlab: {}: its checkpoint interval {id} is not in the store; the final result is taken whole (one run)",
                        r.name
                    );
                    return Ok(vec![r]);
                }
            }
        }
        latlab_core::note!(
            "latlab: {} is a qualification's final result: its {} checkpoint intervals are its runs (the unit of replication)",
            r.name,
            out.len()
        );
        Ok(out)
    }

    /// Keeps disturbed runs (`--include-disturbed`): by default a selector naming several runs
    /// (`exp:`, `tag:`, a level) leaves out every run whose ground moved while it measured
    /// (`Run::disturbed`) or was cut short (`interrupted`), and says which; a run named by its
    /// id or file is always kept.
    pub fn include_disturbed(mut self, yes: bool) -> Self {
        self.include_disturbed = yes;
        self
    }

    /// The store, opened on first use.
    pub(crate) fn store(&mut self) -> Result<&dyn Store> {
        if self.store.is_none() {
            self.store = Some(latlab_core::store::open_for_reading(self.spec.as_deref())?);
        }
        Ok(self.store.as_deref().expect("opened above"))
    }

    /// The stored run ids `item` names, oldest first (files and stdin are not stored runs).
    pub fn ids(&mut self, item: &Item) -> Result<Vec<String>> {
        let tags = match &item.sel {
            Selector::Run(id) => return Ok(vec![id.clone()]),
            Selector::File(_) | Selector::Stdin => {
                return Err(bad(&item.text, "a file, not a stored run"))
            }
            Selector::Exp(e) => vec![("experiment".to_string(), e.clone())],
            Selector::Level(e, t) => {
                let mut v = vec![("experiment".to_string(), e.clone())];
                v.extend(t.iter().cloned());
                v
            }
            Selector::Tags(t) => t.clone(),
        };
        let st = self.store()?;
        let mut rows = st.list(&Filter {
            tags,
            ..Default::default()
        })?;
        if rows.is_empty() {
            return Err(bad(&item.text, self.nothing(item)?));
        }
        rows.reverse();
        Ok(rows.into_iter().map(|r| r.id).collect())
    }

    /// Why `item` matched nothing: an unknown experiment, or the levels it does have.
    fn nothing(&mut self, item: &Item) -> Result<String> {
        let st = self.store()?;
        let loc = st.location();
        let Selector::Level(e, t) = &item.sel else {
            return Ok(format!("no run in {loc} matches"));
        };
        let rows = st.list(&Filter {
            tags: vec![("experiment".to_string(), e.clone())],
            ..Default::default()
        })?;
        if rows.is_empty() {
            return Ok(format!("no experiment {e} in {loc}"));
        }
        let mut levels = std::collections::BTreeSet::new();
        for r in &rows {
            for (k, _) in t {
                if let Some(v) = r.tags.get(k) {
                    levels.insert(format!("{k}={v}"));
                }
            }
        }
        Ok(format!(
            "experiment {e} has no such level (it has: {})",
            if levels.is_empty() {
                "none with these keys".to_string()
            } else {
                levels.into_iter().collect::<Vec<_>>().join(", ")
            }
        ))
    }

    /// One stored run by id; one that does not read back (stored by an older latlab) is exit
    /// 2 naming it and `latlab runs check`.
    pub(crate) fn get(&mut self, id: &str) -> Result<Resolved> {
        let e = self.store()?.get(id)?;
        let run = Run::from_stored(&e.run.to_string()).map_err(|err| {
            Error::Usage(format!(
                "stored run {id} does not read back as a latlab run ({err}); `latlab runs check` lists such runs"
            ))
        })?;
        Ok(Resolved {
            run,
            name: format!("run:{id}"),
            tags: e.tags,
        })
    }

    /// The runs `item` names: stored runs, or a latlab JSON result file.
    pub(crate) fn runs(&mut self, item: &Item) -> Result<Vec<Resolved>> {
        match &item.sel {
            Selector::File(p) => {
                let r = Resolved {
                    run: super::file::read_run(p)?,
                    name: p.display().to_string(),
                    tags: BTreeMap::new(),
                };
                self.replicated(r)
            }
            Selector::Stdin => Err(bad(&item.text, "standard input takes value files only")),
            Selector::Run(_) => {
                let mut out = Vec::new();
                for id in self.ids(item)? {
                    let r = self.get(&id)?;
                    out.extend(self.replicated(r)?);
                }
                Ok(out)
            }
            _ => {
                // A run that does not read back is left out with a warning, not fatal: the
                // others a selector names are still compared.
                let ids = self.ids(item)?;
                let mut runs = Vec::with_capacity(ids.len());
                let mut skipped = 0usize;
                for id in &ids {
                    match self.get(id) {
                        Ok(r) => runs.push(r),
                        Err(Error::Usage(why)) => {
                            latlab_core::note!("latlab: warning: {}: {why}; left out", item.text);
                            skipped += 1;
                        }
                        Err(e) => return Err(e),
                    }
                }
                if runs.is_empty() {
                    return Err(bad(
                        &item.text,
                        format!(
                            "none of its {skipped} run(s) reads back (`latlab runs check` lists them)"
                        ),
                    ));
                }
                let n = runs.len();
                let kept = self.without_disturbed(&item.text, runs);
                if kept.is_empty() {
                    // Nothing is left to judge or compare: said, not judged on no runs.
                    return Err(bad(
                        &item.text,
                        format!(
                            "all its {n} run(s) are disturbed or interrupted (left out above); --include-disturbed keeps them"
                        ),
                    ));
                }
                Ok(kept)
            }
        }
    }

    /// `runs` less the disturbed ones (unless they are wanted), said on stderr with what moved.
    fn without_disturbed(&self, what: &str, runs: Vec<Resolved>) -> Vec<Resolved> {
        if self.include_disturbed {
            return runs;
        }
        // A run cut short (Ctrl-C) beside whole ones biases the comparison: its max and tail
        // come from less time.
        let (cut, runs): (Vec<Resolved>, Vec<Resolved>) =
            runs.into_iter().partition(|r| r.run.interrupted);
        if !cut.is_empty() {
            let named: Vec<String> = cut
                .iter()
                .map(|r| format!("{} (after {:.1} s)", r.name, r.run.duration_s))
                .collect();
            latlab_core::note!(
                "latlab: {what}: left out {} interrupted run(s): {}; --include-disturbed keeps them",
                cut.len(),
                named.join("; ")
            );
        }
        let (out, kept): (Vec<Resolved>, Vec<Resolved>) =
            runs.into_iter().partition(|r| r.run.disturbed());
        if !out.is_empty() {
            let named: Vec<String> = out
                .iter()
                .map(|r| {
                    let moved: Vec<String> = r
                        .run
                        .ground
                        .iter()
                        .filter(|g| g.what != latlab_core::result::COMPANY)
                        .map(latlab_core::result::GroundChange::short)
                        .collect();
                    format!("{} ({})", r.name, moved.join(", "))
                })
                .collect();
            latlab_core::note!(
                "latlab: {what}: left out {} disturbed run(s): {}; --include-disturbed keeps them",
                out.len(),
                named.join("; ")
            );
        }
        kept
    }

    /// Every run of a whole list, in order; a run named twice is refused (a run counts once).
    pub fn all(&mut self, items: &[Item]) -> Result<Vec<Resolved>> {
        let mut out: Vec<Resolved> = Vec::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for item in items {
            for r in self.runs(item)? {
                if let Some(first) = seen.insert(r.run.id.clone(), r.name.clone()) {
                    return Err(Error::Usage(format!(
                        "{} and {first} are the same run ({}): a run counts once",
                        r.name, r.run.id
                    )));
                }
                out.push(r);
            }
        }
        Ok(out)
    }
}

/// Every run of experiment `exp`, oldest first, grouped into its levels (the baseline first):
/// (label, runs with their names). A missing experiment is exit 2 naming `flag`.
pub fn experiment_levels(
    exp: &str,
    store: Option<&str>,
    flag: &str,
    include_disturbed: bool,
) -> Result<Vec<(String, Vec<Resolved>)>> {
    let item = Item {
        text: format!("exp:{exp}"),
        sel: Selector::Exp(exp.to_string()),
        bare: false,
    };
    let runs = Resolver::new(store)
        .include_disturbed(include_disturbed)
        .runs(&item)
        .map_err(|e| Error::flag(flag, exp, e))?;
    let tags: Vec<_> = runs.iter().map(|r| &r.tags).collect();
    let levels = super::grouping::group(&tags);
    let mut slots: Vec<Option<Resolved>> = runs.into_iter().map(Some).collect();
    Ok(levels
        .into_iter()
        .map(|l| {
            let rs = l.runs.iter().filter_map(|&i| slots[i].take()).collect();
            (l.label, rs)
        })
        .collect())
}

/// The label a set gets from its selectors when none is given: a level's tags, else the text.
pub(crate) fn default_label(items: &[Item], text: &str) -> String {
    match items {
        [Item {
            sel: Selector::Level(_, t),
            ..
        }] => t
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(","),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sels(a: &[&str]) -> Vec<Selector> {
        parse(a).unwrap().into_iter().map(|i| i.sel).collect()
    }

    fn kvs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_form_and_both_separators() {
        let want = vec![
            Selector::Run("A".into()),
            Selector::Run("B".into()),
            Selector::Exp("E".into()),
            Selector::Level("E".into(), kvs(&[("clocksource", "tsc")])),
            Selector::Tags(kvs(&[("a", "1"), ("b", "2")])),
        ];
        assert_eq!(
            sels(&["run:A,run:B exp:E,exp:E/clocksource=tsc tag:a=1,b=2"]),
            want
        );
        assert_eq!(
            sels(&[
                "run:A",
                "run:B",
                "exp:E",
                "exp:E/clocksource=tsc",
                "tag:a=1 b=2"
            ]),
            want
        );
        assert_eq!(sels(&["run:A,B"])[1], Selector::Run("B".into()));
        assert_eq!(
            sels(&["exp:E/a=1,b=2"]),
            vec![Selector::Level("E".into(), kvs(&[("a", "1"), ("b", "2")]))]
        );
        assert_eq!(sels(&["-"]), vec![Selector::Stdin]);
        // A value with commas or spaces, in double quotes (dropped); the next item after it.
        assert_eq!(
            sels(&[r#"tag:plan="my plan, 2.toml",load="hackbench:groups=2,fds=5" run:A"#]),
            vec![
                Selector::Tags(kvs(&[
                    ("plan", "my plan, 2.toml"),
                    ("load", "hackbench:groups=2,fds=5")
                ])),
                Selector::Run("A".into()),
            ]
        );
        assert_eq!(
            sels(&[r#"exp:E/level="a b""#]),
            vec![Selector::Level("E".into(), kvs(&[("level", "a b")]))]
        );
        // A backslash keeps a double quote or a backslash; before anything else it is itself.
        assert_eq!(
            sels(&[r#"tag:k="say \"hi\", a\\b\c" tag:j=\"x"#]),
            vec![
                Selector::Tags(kvs(&[("k", r#"say "hi", a\b\c"#)])),
                Selector::Tags(kvs(&[("j", r#""x"#)])),
            ]
        );
        // Blanks around a value are dropped, as `--tag` drops them when it stores one.
        assert_eq!(
            sels(&[r#"tag:k=" lead ""#]),
            vec![Selector::Tags(kvs(&[("k", "lead")]))]
        );
        // A quote left open, and a list of separators only, are refused.
        for bad in [r#"tag:plan="a,b"#, r#"tag:plan=a",b"#, r#""""#, ", ,", ""] {
            let e = parse(&[bad]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
        assert!(parse::<&str>(&[]).unwrap().is_empty());
        let me = env!("CARGO_MANIFEST_DIR").to_string() + "/Cargo.toml";
        assert_eq!(sels(&[me.as_str()]), vec![Selector::File(me.into())]);
        assert!(parse(&[""]).is_err());
        let items = parse(&["tag:a=1,b=2"]).unwrap();
        assert_eq!(items[0].text, "tag:a=1,b=2");
        assert_eq!(default_label(&parse(&["exp:E/k=v"]).unwrap(), "x"), "k=v");
    }

    /// An argument naming an existing file is that file, whatever it holds; the same text that
    /// names no file is split as a list.
    #[test]
    fn a_file_name_with_spaces_commas_and_equals_is_one_file() {
        let dir = std::env::temp_dir().join(format!("latlab-select-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in [
            "my run.json",
            "a,b.json",
            "k=v.json",
            "run:x.json",
            "tag:a=b",
            " lead",
        ] {
            let p = dir.join(name);
            std::fs::write(&p, "{}").unwrap();
            let arg = p.display().to_string();
            assert_eq!(
                sels(&[arg.as_str()]),
                vec![Selector::File(p.clone())],
                "{name}"
            );
        }
        // Not a file: split as before, and the missing part named.
        let missing = dir.join("nope one.json").display().to_string();
        let e = parse(&[missing.as_str()]).unwrap_err().to_string();
        assert!(e.contains("no such file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_selector_names_itself() {
        for (text, why) in [
            ("run:", "no run id"),
            ("exp:", "no experiment id"),
            ("exp:E/", "not KEY=VALUE"),
            ("exp:E/novalue", "not KEY=VALUE"),
            ("tag:", "no KEY=VALUE"),
            ("tag:k", "not KEY=VALUE"),
            ("tag:=v", "tag key"),
            ("tag:k=", "no value"),
            ("foo:bar", "unknown kind 'foo:'"),
            ("missing.json", "no such file"),
            ("run:A,k=v", "belongs after tag:"),
        ] {
            let e = parse(&[text]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{text}");
            let m = e.to_string();
            assert!(m.contains(why) && m.contains("selector '"), "{text}: {m}");
        }
    }
}
