//! Kernels as a plan's factor: each repeat of a level a fresh guest boot of its kernel, the
//! runs stored in the host's store with the boot they ran in, and the comparison taking the
//! boot as its replicate. Under TCG only the mechanism is judged (kernels, boots, counts).

use crate::util::{latlab, skip, Dir};
use serde_json::Value;
use std::time::Duration;

#[test]
#[ignore = "boots guests: scripts/test.sh runs the guest group alone"]
fn guest_a_kernel_plan_boots_every_repeat_and_compares_over_boots() {
    let dir = Dir::new();
    let plan = dir.write(
        "kernels.toml",
        "[measure]\ncommand = \"clocks\"\nargs = [\"--clocks\", \"monotonic\", \"--batches\", \"50\"]\n\
         [design]\nrepeats = 2\norder = \"interleaved\"\n\
         [guest]\ncpus = 1\nmemory = \"1G\"\ntimeout = 300\n\
         [[factor]]\nname = \"kernel\"\nboot = true\nlevels = [\"rt\", \"generic\"]\n\
         cmdline = { generic = \"preempt=full\" }\n",
    );
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = latlab()
        .current_dir(dir.path())
        .args(["run", plan.to_str().unwrap(), "--store", &store])
        .limit(Duration::from_secs(900))
        .output();
    if out.status.code() == Some(3) && out.stderr.contains("cannot be booted here") {
        skip(&crate::util::test_name(), &out.stderr);
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}", out.stderr);
    let exp = out
        .stdout
        .split_whitespace()
        .find(|w| w.starts_with("exp-"))
        .map(|w| w.trim_end_matches(':').to_string())
        .unwrap_or_else(|| panic!("no experiment in:\n{}", out.stdout));
    let shown = latlab()
        .args(["runs", "export", &format!("exp:{exp}"), "--store", &store])
        .assert_ok();
    let bundle: Value = serde_json::from_str(&shown.stdout).unwrap();
    let runs = bundle["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "2 levels x 2 repeats");
    let mut boots = Vec::new();
    for r in runs {
        let env = &r["run"]["environment"];
        let level = r["tags"]["kernel"].as_str().unwrap();
        let release = env["kernel_release"].as_str().unwrap();
        // Each level ran its own kernel, booted with its own command line.
        assert_eq!(
            release.ends_with("-rt-amd64"),
            level == "rt",
            "{level}: {release}"
        );
        let cmdline = env["kernel_cmdline"].as_str().unwrap();
        assert_eq!(
            cmdline.contains("preempt=full"),
            level == "generic",
            "{cmdline}"
        );
        assert_eq!(r["tags"]["experiment"], exp.as_str());
        boots.push(env["boot_id"].as_str().unwrap().to_string());
    }
    boots.sort();
    boots.dedup();
    assert_eq!(boots.len(), 4, "every run a boot of its own: {boots:?}");
    assert!(boots.iter().all(|b| b.len() == 36), "{boots:?}");
    let cmp = latlab()
        .args(["compare", &format!("exp:{exp}"), "--store", &store])
        .output();
    assert!(cmp.status.code().is_some_and(|c| c <= 1), "{}", cmp.stderr);
    assert!(cmp.stdout.contains("2 boots per level"), "{}", cmp.stdout);
    assert!(cmp.stdout.contains("2+2 boots"), "{}", cmp.stdout);
    assert!(
        cmp.stdout.contains("booted 'preempt=full'"),
        "{}",
        cmp.stdout
    );
    assert!(
        cmp.stdout.contains("unit of replication: the boot"),
        "{}",
        cmp.stdout
    );
}

/// Four successive "kernels" (one image, booted four ways) where one command-line change makes
/// every later one slower: reading the clock through acpi_pm instead of the TSC costs the
/// emulator about ten times more, a difference no emulation noise hides.
const FOUR: &str = "[measure]\ncommand = \"clocks\"\nargs = [\"--clocks\", \"monotonic\", \"--batches\", \"50\"]\n\
     [analysis]\nmetric = \"mean\"\n[guest]\ncpus = 1\nmemory = \"1G\"\ntimeout = 300\n\
     [[factor]]\nname = \"kernel\"\nboot = true\nlevels = [\"k1\", \"k2\", \"k3\", \"k4\"]\n\
     kernel = { k1 = \"generic\", k2 = \"generic\", k3 = \"generic\", k4 = \"generic\" }\n\
     cmdline = { k3 = \"clocksource=acpi_pm\", k4 = \"clocksource=acpi_pm\" }\n";

#[test]
#[ignore = "boots guests: scripts/test.sh runs the guest group alone"]
fn guest_bisect_finds_the_first_slower_kernel_and_stores_every_boot() {
    let dir = Dir::new();
    let plan = dir.write("four.toml", FOUR);
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = latlab()
        .current_dir(dir.path())
        .args(["bisect", plan.to_str().unwrap(), "--store", &store])
        .limit(Duration::from_secs(900))
        .output();
    if out.status.code() == Some(3) && out.stderr.contains("cannot be booted here") {
        skip(&crate::util::test_name(), &out.stderr);
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "first bad: kernel=k3 (kernel generic booted 'clocksource=acpi_pm'), after kernel=k2"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("wrong with probability at most"),
        "{}",
        out.stdout
    );
    // Every boot is a run of the one experiment, each a boot of its own.
    let exp = out.stdout.split_whitespace().nth(1).unwrap().to_string();
    let shown = latlab()
        .args(["runs", "export", &format!("exp:{exp}"), "--store", &store])
        .assert_ok();
    let bundle: Value = serde_json::from_str(&shown.stdout).unwrap();
    let runs = bundle["runs"].as_array().unwrap();
    assert!(
        runs.len() >= 8,
        "2 boots of each of 4 kernels: {}",
        runs.len()
    );
    let mut boots: Vec<&str> = runs
        .iter()
        .map(|r| r["run"]["environment"]["boot_id"].as_str().unwrap())
        .collect();
    boots.sort_unstable();
    boots.dedup();
    assert_eq!(boots.len(), runs.len(), "one run per boot");

    // git bisect run's side: one kernel decided against the ends (the first and last).
    let ends = dir.write(
        "ends.toml",
        FOUR.replace("\"k2\", \"k3\", ", "")
            .replace("k2 = \"generic\", k3 = \"generic\", ", "")
            .replace("k3 = \"clocksource=acpi_pm\", ", ""),
    );
    let out = latlab()
        .current_dir(dir.path())
        .args(["bisect", ends.to_str().unwrap(), "--store", &store])
        .args(["--candidate", "generic", "--cmdline", "clocksource=acpi_pm"])
        .limit(Duration::from_secs(900))
        .output();
    assert_eq!(
        out.status.code(),
        Some(1),
        "bad: {}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("kernel=candidate: bad"),
        "{}",
        out.stdout
    );
}

/// A kexec plan inside one guest: its kernel booted again by kexec for every run (two levels
/// of command line, one run each: the mechanism, not a verdict) and once more at the end. The guest runs the same command at every boot,
/// as contrib/latlab-kexec.service would: the plan resumes from its state in the guest's
/// working directory (a host directory, so it outlives each boot).
#[test]
#[ignore = "boots guests: scripts/test.sh runs the guest group alone"]
fn guest_a_kexec_plan_resumes_after_every_boot_and_ends_in_its_own_kernel() {
    let dir = Dir::new();
    let plan = dir.write(
        "kexec.toml",
        "[measure]\ncommand = \"clocks\"\nargs = [\"--clocks\", \"monotonic\", \"--batches\", \"50\"]\n\
         [design]\norder = \"interleaved\"\n[kexec]\nstate = \"state\"\ntimeout = 300\n\
         [[factor]]\nname = \"clock\"\nboot = true\nlevels = [\"tsc\", \"acpi_pm\"]\n\
         kernel = { tsc = \"running\", acpi_pm = \"running\" }\n\
         cmdline = { acpi_pm = \"clocksource=acpi_pm\" }\n",
    );
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let exe = std::path::Path::new(crate::util::LATLAB);
    let mut c = std::process::Command::new("bash");
    c.current_dir(dir.path())
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/guest.sh"))
        .args(["--kernel", "generic", "--cpus", "1", "--memory", "1G"])
        .args(["--timeout", "600", "--share"])
        .arg(exe.parent().unwrap())
        .arg("--")
        .arg(exe)
        .args(["run", plan.to_str().unwrap(), "--resume-or-start"])
        .args(["--store", &store]);
    let out = crate::util::TestCommand::wrapping(c)
        .limit(Duration::from_secs(900))
        .output();
    if out.status.code() == Some(3) {
        skip(&crate::util::test_name(), &out.stderr);
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    // Two runs, two boots, then the guest's own kernel again: the report is the last boot's.
    assert!(
        out.stdout
            .contains("2 run(s) stored, each in a kexec boot of its own; this machine runs"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        out.stderr.matches(": kexec into ").count(),
        3,
        "a kexec per run and one back: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("back to this machine's own kernel"),
        "{}",
        out.stderr
    );
    let state = dir.join("state");
    assert!(!state.join("state.json").exists(), "the plan is over");
    let exp = out
        .stdout
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':');
    assert!(state.join(format!("finished-{exp}.json")).is_file());
    let shown = latlab()
        .args(["runs", "export", &format!("exp:{exp}"), "--store", &store])
        .assert_ok();
    let bundle: Value = serde_json::from_str(&shown.stdout).unwrap();
    let runs = bundle["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "2 levels x 1 repeat");
    let mut boots = Vec::new();
    for r in runs {
        let env = &r["run"]["environment"];
        let level = r["tags"]["clock"].as_str().unwrap();
        let cmdline = env["kernel_cmdline"].as_str().unwrap();
        assert_eq!(
            cmdline.contains("clocksource=acpi_pm"),
            level == "acpi_pm",
            "{level}: {cmdline}"
        );
        boots.push(env["boot_id"].as_str().unwrap().to_string());
    }
    boots.sort();
    boots.dedup();
    assert_eq!(boots.len(), 2, "every run a boot of its own: {boots:?}");
    // A second start while nothing is under way is a new plan; a plain run beside an
    // unfinished state is refused (exit 2), naming how to go on.
    std::fs::copy(
        state.join(format!("finished-{exp}.json")),
        state.join("state.json"),
    )
    .unwrap();
    latlab()
        .current_dir(dir.path())
        .args(["run", plan.to_str().unwrap(), "--store", &store])
        .assert_refused(2, "--resume-or-start continues it");
}
