//! The pages a newcomer reads, kept short and true: the README and docs/benchmarks.md stay
//! within 400 lines, every command has a page under docs/commands/ that the README links, and
//! each page ends with its commands' help (`latlab help CMD`) as the binary prints it (`LATLAB_BLESS=1 cargo
//! test --test it pages::` rewrites those blocks).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The commands documented on another command's page; every other command `NAME` has its own,
/// docs/commands/NAME.md.
const ON_ANOTHER_PAGE: &[(&str, &str)] = &[
    ("ministat", "compare"),
    ("restore", "run"),
    ("samples", "runs"),
    ("plot", "report"),
    ("man", "completions"),
];

/// The page of command `cmd`.
fn page_of(cmd: &str) -> &str {
    ON_ANOTHER_PAGE
        .iter()
        .find(|(c, _)| *c == cmd)
        .map_or(cmd, |(_, p)| p)
}

/// Every command `latlab --help` lists (but `help`).
fn commands() -> Vec<String> {
    let listing = help(&["--help"]);
    let commands: Vec<String> = listing
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect();
    assert!(commands.len() > 20, "commands not read: {listing}");
    commands
}

/// The most lines a page a newcomer reads through may have.
const MOST_LINES: usize = 400;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn page_path(page: &str) -> PathBuf {
    root().join("docs/commands").join(format!("{page}.md"))
}

/// `latlab ARGS` as a user's terminal of 100 columns shows it.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_latlab"))
        .args(args)
        .env("COLUMNS", "100")
        .env_remove("LINES")
        .output()
        .unwrap();
    assert!(out.status.success(), "latlab {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The marked help block of `cmd` in a page's text: (start, end) of its inner lines.
fn marked(lines: &[&str], cmd: &str) -> Option<(usize, usize)> {
    let open = format!("<!-- generated: latlab help {cmd} -->");
    let close = format!("<!-- end generated: latlab help {cmd} -->");
    let a = lines.iter().position(|l| *l == open)?;
    let z = lines.iter().position(|l| *l == close)?;
    (z > a).then_some((a + 1, z))
}

/// What stands between a command's markers.
fn block(cmd: &str) -> String {
    format!("```text\n$ latlab help {cmd}\n{}```", help(&["help", cmd]))
}

#[test]
fn every_command_has_a_page_the_readme_links() {
    let commands = commands();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for c in &commands {
        let page = page_of(c);
        assert!(
            page_path(page).exists(),
            "latlab {c} has no page {}",
            page_path(page).display()
        );
        assert!(
            readme.contains(&format!("(docs/commands/{page}.md)")),
            "README.md does not link docs/commands/{page}.md"
        );
    }
    for (c, _) in ON_ANOTHER_PAGE {
        assert!(
            commands.iter().any(|k| k == c),
            "ON_ANOTHER_PAGE names {c}, which latlab --help does not list"
        );
    }
}

#[test]
fn each_page_shows_its_commands_help_as_the_binary_prints_it() {
    let bless = std::env::var_os("LATLAB_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for cmd in commands() {
        let cmd = cmd.as_str();
        let path = page_path(page_of(cmd));
        let text = std::fs::read_to_string(&path).unwrap();
        let want = block(cmd);
        let lines: Vec<&str> = text.lines().collect();
        match marked(&lines, cmd) {
            Some((a, z)) if lines[a..z].join("\n") == want => {}
            Some((a, z)) if bless => {
                let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                out.splice(a..z, want.lines().map(String::from));
                std::fs::write(&path, out.join("\n") + "\n").unwrap();
            }
            None if bless => {
                let section = format!(
                    "\n## `latlab help {cmd}`\n\n<!-- generated: latlab help {cmd} -->\n\
                     {want}\n<!-- end generated: latlab help {cmd} -->\n"
                );
                std::fs::write(&path, text.trim_end().to_string() + "\n" + &section).unwrap();
            }
            _ => stale.push(format!("{}: latlab help {cmd}", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "pages whose --help differs from the binary's (LATLAB_BLESS=1 cargo test --test it \
         pages:: rewrites them): {stale:#?}"
    );
}

#[test]
fn the_readme_and_the_benchmarks_stay_short() {
    for page in ["README.md", "docs/benchmarks.md"] {
        let n = std::fs::read_to_string(Path::new(&root()).join(page))
            .unwrap()
            .lines()
            .count();
        assert!(
            n <= MOST_LINES,
            "{page} has {n} lines: at most {MOST_LINES} (the manual is docs/commands/, the \
             history docs/benchmarks-history.md)"
        );
    }
}
