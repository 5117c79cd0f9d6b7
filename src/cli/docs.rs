//! Shell completions and man pages generated from the clap definitions, so they never drift
//! from the real command line: `latlab completions SHELL`, `latlab man DIR`.

use latlab_core::error::{Error, Result};
use std::path::Path;

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = crate::cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "latlab", &mut out);
    out
}

/// Writes latlab.1 and one latlab-SUBCOMMAND.1 per visible subcommand into `dir` (created if
/// missing); returns the pages written.
pub fn man_pages(dir: &Path) -> Result<Vec<String>> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "man {}: not a directory (the pages go into a directory)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    let cmd = crate::cli::command();
    let mut pages = vec![("latlab".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // clap names are &'static str (no "string" feature): a few bytes leaked, once, in a
        // command that exits right after.
        let name: &'static str = Box::leak(format!("latlab-{}", sub.get_name()).into_boxed_str());
        let version = env!("CARGO_PKG_VERSION");
        let mut page = sub.clone().name(name).version(version);
        // Its arguments (a measurement's are otherwise added only when it is used).
        page.build();
        pages.push((name.to_string(), page));
    }
    let mut written = Vec::new();
    for (name, c) in pages {
        let mut buf = Vec::new();
        clap_mangen::Man::new(c)
            .render(&mut buf)
            .map_err(|e| Error::io(name.clone(), e))?;
        let path = dir.join(format!("{name}.1"));
        latlab_core::output::write_atomic(&path, &buf)
            .map_err(|e| Error::io(path.display().to_string(), e))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_naming_the_subcommands() {
        for sh in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let s = String::from_utf8(completions(sh)).unwrap();
            assert!(s.contains("cyclic") && s.contains("gate"), "{sh}");
            // The measurements' own options too (their arguments are added when used).
            assert!(s.contains("interval") && s.contains("threshold"), "{sh}");
        }
    }

    #[test]
    fn man_pages_for_latlab_and_each_subcommand() {
        let d = tempfile::tempdir().unwrap();
        let pages = man_pages(d.path()).unwrap();
        assert!(pages.iter().any(|p| p.ends_with("latlab-gate.1")));
        let top = std::fs::read_to_string(d.path().join("latlab.1")).unwrap();
        assert!(
            top.starts_with(".ie") || top.contains(".TH latlab"),
            "{top}"
        );
        assert!(!d.path().join("latlab-load-worker.1").exists());
        assert!(!d.path().join("latlab-help.1").exists());
        // A file where the directory should be: refused naming it (exit 2).
        let f = d.path().join("latlab.1");
        let e = man_pages(&f).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("not a directory"), "{e}");
        let cyclic = std::fs::read_to_string(d.path().join("latlab-cyclic.1")).unwrap();
        assert!(cyclic.contains("interval"), "{cyclic}");
        assert!(cyclic.contains("latlab\\-cyclic"), "{cyclic}");
    }
}
