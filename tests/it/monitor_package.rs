//! The Debian package (scripts/deb.sh): built from the test's binary, unpacked with `dpkg -x`,
//! run from the unpacked tree, and checked by lintian (no errors).

use crate::util::{run_tool, skip, Dir};
use std::process::Command;

#[test]
fn the_debian_package_unpacks_and_runs_and_lintian_finds_no_error() {
    if !latlab_core::sys::process::command_exists("dpkg-deb") {
        return skip("debian package", "dpkg-deb is not installed");
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Dir::new();
    let out = run_tool(
        Command::new(root.join("scripts/deb.sh"))
            .arg(dir.join("out"))
            .env("LATLAB_BIN", env!("CARGO_BIN_EXE_latlab")),
    );
    let deb = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let tree = dir.join("tree");
    let x = Command::new("dpkg")
        .args(["-x", &deb])
        .arg(&tree)
        .status()
        .unwrap();
    assert!(x.success());
    for f in [
        "usr/share/man/man1/latlab-monitor.1.gz",
        "usr/share/bash-completion/completions/latlab",
        "lib/systemd/system/latlab-monitor.service",
        "usr/share/doc/latlab/examples/web-config.yml",
        "usr/share/doc/latlab/examples/prometheus.yml",
    ] {
        assert!(tree.join(f).is_file(), "{f} is not in the package");
    }
    let unit =
        std::fs::read_to_string(tree.join("lib/systemd/system/latlab-monitor.service")).unwrap();
    assert!(
        unit.contains("ExecStart=/usr/bin/latlab monitor")
            && unit.contains("--listen 127.0.0.1:9477")
    );
    let bin = tree.join("usr/bin/latlab");
    let v = Command::new(&bin).arg("--version").output().unwrap();
    assert!(v.status.success() && String::from_utf8_lossy(&v.stdout).starts_with("latlab "));
    let h = Command::new(&bin)
        .args(["monitor", "--help"])
        .output()
        .unwrap();
    assert!(h.status.success() && String::from_utf8_lossy(&h.stdout).contains("--web-config"));
    if latlab_core::sys::process::command_exists("lintian") {
        let l = Command::new("lintian").arg(&deb).output().unwrap();
        let report = String::from_utf8_lossy(&l.stdout);
        assert!(
            !report.lines().any(|l| l.starts_with("E: ")),
            "lintian: {report}"
        );
    } else {
        skip(
            "debian package: lintian",
            "lintian is not installed (Debian package lintian)",
        );
    }
}
