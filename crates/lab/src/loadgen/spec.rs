//! Load specifications: `KIND[:key=value,...]`, validated per kind before anything starts.

use latlab_core::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;

/// Units a build load writes when `units=` is not given.
pub(crate) const DEFAULT_UNITS: u64 = 32;
/// The most units a build load may have.
pub(crate) const MAX_UNITS: u64 = 4096;

/// The kinds of load latlab can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LoadKind {
    /// Groups of senders and receivers over socketpairs or pipes (hackbench).
    Hackbench,
    /// Spinning threads.
    Cpu,
    /// Streaming through a buffer larger than the caches.
    Memory,
    /// Sequential reads of a file or block device.
    Io,
    /// A loopback TCP stream into a local sink.
    Net,
    /// A command run in a loop.
    Exec,
    /// A parallel build (`make -j`) of a bundled C tree in a scratch directory, over and over,
    /// as rteval's kernel build (nothing is downloaded).
    Build,
}

const KEYS: &[(LoadKind, &[&str])] = &[
    (
        LoadKind::Hackbench,
        &["groups", "fds", "loops", "datasize", "mode", "ipc"],
    ),
    (LoadKind::Cpu, &["threads", "policy", "prio"]),
    (LoadKind::Memory, &["threads", "size"]),
    (LoadKind::Io, &["path", "direct", "block", "size"]),
    (LoadKind::Net, &["size"]),
    (LoadKind::Exec, &["cmd"]),
    (LoadKind::Build, &["jobs", "units"]),
];

impl LoadKind {
    fn parse(s: &str) -> Option<LoadKind> {
        Some(match s {
            "hackbench" => LoadKind::Hackbench,
            "cpu" => LoadKind::Cpu,
            "memory" | "mem" => LoadKind::Memory,
            "io" => LoadKind::Io,
            "net" => LoadKind::Net,
            "exec" => LoadKind::Exec,
            "build" => LoadKind::Build,
            _ => return None,
        })
    }

    /// Keys this kind accepts.
    pub(crate) fn keys(self) -> &'static [&'static str] {
        KEYS.iter()
            .find(|(k, _)| *k == self)
            .map(|(_, v)| *v)
            .unwrap_or(&[])
    }
}

impl fmt::Display for LoadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadKind::Hackbench => "hackbench",
            LoadKind::Cpu => "cpu",
            LoadKind::Memory => "memory",
            LoadKind::Io => "io",
            LoadKind::Net => "net",
            LoadKind::Exec => "exec",
            LoadKind::Build => "build",
        })
    }
}

/// Most threads one `cpu` or `memory` load may start (each is a task of the machine: more
/// would only push latlab toward the PID limit).
pub(crate) const MAX_LOAD_THREADS: u64 = 1024;
/// Largest `block=` of an `io` load, and largest `size=` of a `net` load's writes.
pub(crate) const MAX_BLOCK: u64 = 64 << 20;
/// Largest scratch file an `io` load without `path=` writes.
pub(crate) const MAX_SCRATCH: u64 = 1 << 30;

/// The machine's memory (bytes), from /proc/meminfo, if readable.
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// A parsed, validated load.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct LoadSpec {
    /// Kind.
    pub(crate) kind: LoadKind,
    /// Options as given.
    pub(crate) opts: BTreeMap<String, String>,
    /// The text it was parsed from.
    pub(crate) text: String,
}

impl LoadSpec {
    /// The real-time priority the load's threads run at, if it asks for SCHED_FIFO/RR.
    pub(crate) fn rt_prio(&self) -> Option<i32> {
        let policy: latlab_core::config::Policy = self.opts.get("policy")?.parse().ok()?;
        policy.is_rt().then(|| {
            self.opts
                .get("prio")
                .and_then(|p| p.parse().ok())
                .unwrap_or(1)
        })
    }

    /// Parses `KIND[:key=value,...]`; `exec:CMD` and `exec:cmd=CMD` both work.
    pub(crate) fn parse(text: &str) -> Result<LoadSpec> {
        let bad = |why: String| Error::Usage(format!("--load '{text}': {why}"));
        let (kind_s, rest) = text.split_once(':').unwrap_or((text, ""));
        let kind = LoadKind::parse(kind_s.trim()).ok_or_else(|| {
            bad(format!(
                "unknown load kind '{kind_s}' (use hackbench, cpu, memory, io, net, exec or build)"
            ))
        })?;
        let mut opts = BTreeMap::new();
        if kind == LoadKind::Exec {
            let cmd = rest.strip_prefix("cmd=").unwrap_or(rest).trim();
            if cmd.is_empty() {
                return Err(bad("exec needs a command: exec:CMD".into()));
            }
            let first = cmd.split_whitespace().next().unwrap_or("");
            let plain = !cmd.contains(['|', ';', '&', '$', '`', '(', '<', '>', '=']);
            if plain && !latlab_core::sys::process::command_exists(first) {
                return Err(bad(format!("command '{first}' not found on PATH")));
            }
            opts.insert("cmd".into(), cmd.into());
        } else if !rest.is_empty() {
            // A CPU list may itself hold commas (cpus=0,2-3): its pieces join the cpus item.
            let mut items: Vec<String> = Vec::new();
            for item in rest.split(',') {
                match items.last_mut() {
                    Some(last) if !item.contains('=') && last.trim_start().starts_with("cpus=") => {
                        last.push(',');
                        last.push_str(item);
                    }
                    _ => items.push(item.to_string()),
                }
            }
            for item in &items {
                let (k, v) = item
                    .split_once('=')
                    .ok_or_else(|| bad(format!("'{item}' is not key=value")))?;
                let k = k.trim();
                if k == "cpus" {
                    let set = latlab_core::config::CpuSet::parse_online(
                        "cpus",
                        v.trim(),
                        &latlab_core::config::CpuSet::online_here(),
                    )
                    .map_err(|e| bad(e.to_string()))?;
                    if opts.insert("cpus".into(), set.to_string()).is_some() {
                        return Err(bad("'cpus' is given twice".into()));
                    }
                    continue;
                }
                if !kind.keys().contains(&k) {
                    return Err(bad(format!(
                        "unknown option '{k}' for {kind} (use {}, cpus)",
                        kind.keys().join(", ")
                    )));
                }
                if opts.insert(k.to_string(), v.trim().to_string()).is_some() {
                    return Err(bad(format!("'{k}' is given twice")));
                }
            }
        }
        let spec = LoadSpec {
            kind,
            opts,
            text: text.to_string(),
        };
        spec.validate().map_err(bad)?;
        Ok(spec)
    }

    /// The CPUs the load is confined to (`cpus=LIST`, or `--housekeeping`), if any.
    pub fn cpus(&self) -> Option<latlab_core::config::CpuSet> {
        self.opts
            .get("cpus")
            .and_then(|c| latlab_core::config::CpuSet::parse(c).ok())
    }

    /// Confines the load to `set` unless it names its own CPUs (`--housekeeping`).
    pub fn confine_to(&mut self, set: &latlab_core::config::CpuSet) {
        self.opts
            .entry("cpus".into())
            .or_insert_with(|| set.to_string());
    }

    /// A positive whole-number option with a default.
    pub(crate) fn num(&self, key: &str, default: u64) -> std::result::Result<u64, String> {
        match self.opts.get(key) {
            None => Ok(default),
            Some(v) => parse_size(v).filter(|&n| n > 0).ok_or_else(|| {
                format!("{key}={v}: expected a whole number above zero (k, M, G allowed)")
            }),
        }
    }

    /// A string option with a default.
    pub(crate) fn str(&self, key: &str, default: &str) -> String {
        self.opts
            .get(key)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }

    /// A whole-number option with a default, at most `max`.
    fn num_at_most(&self, key: &str, default: u64, max: u64) -> std::result::Result<u64, String> {
        let n = self.num(key, default)?;
        if n > max {
            return Err(format!("{key}={}: at most {max}", self.opts[key]));
        }
        Ok(n)
    }

    fn validate(&self) -> std::result::Result<(), String> {
        match self.kind {
            LoadKind::Hackbench => {
                self.num("groups", 10)?;
                if self.num("fds", 20)? > super::hackbench::MAX_FDS as u64 {
                    return Err(format!("fds: at most {}", super::hackbench::MAX_FDS));
                }
                self.num("loops", 100)?;
                if self.num("datasize", 100)? > super::hackbench::MAX_DATASIZE as u64 {
                    return Err(format!(
                        "datasize: at most {} bytes",
                        super::hackbench::MAX_DATASIZE
                    ));
                }
                if !["process", "thread"].contains(&self.str("mode", "process").as_str()) {
                    return Err("mode must be process or thread".into());
                }
                if !["socket", "pipe"].contains(&self.str("ipc", "socket").as_str()) {
                    return Err("ipc must be socket or pipe".into());
                }
                let tasks = self
                    .num("groups", 10)?
                    .saturating_mul(self.num("fds", 20)?)
                    .saturating_mul(2);
                if tasks > 4000 {
                    return Err(
                        "more than 4000 tasks (groups x fds x 2): the machine cannot hold that"
                            .into(),
                    );
                }
            }
            LoadKind::Cpu => {
                self.num_at_most("threads", 1, MAX_LOAD_THREADS)?;
                let policy: latlab_core::config::Policy = self.str("policy", "other").parse()?;
                let prio = self
                    .opts
                    .get("prio")
                    .map(|p| {
                        p.parse::<i32>()
                            .map_err(|_| format!("prio={p}: not a number"))
                    })
                    .transpose()?;
                policy.check_prio(prio.unwrap_or(if policy.is_rt() { 1 } else { 0 }))?;
            }
            LoadKind::Memory => {
                let threads = self.num_at_most("threads", 1, MAX_LOAD_THREADS)?;
                let size = self.num("size", 256 << 20)?;
                // Every thread streams through its own buffer: together at most half the
                // machine's memory, so the load cannot push the machine into the OOM killer.
                let half = mem_total().map_or(u64::MAX, |m| m / 2);
                if threads.saturating_mul(size) > half {
                    return Err(format!(
                        "threads x size = {} x {size} bytes: more than half the machine's memory ({half} bytes)",
                        threads
                    ));
                }
            }
            LoadKind::Io => {
                self.num_at_most("block", 1 << 20, MAX_BLOCK)?;
                self.num_at_most("size", 64 << 20, MAX_SCRATCH)?;
                if let Some(p) = self.opts.get("path") {
                    let f = latlab_core::io::open_typed(std::path::Path::new(p), None, true)
                        .map_err(|e| format!("path={p}: {e}"))?;
                    // An empty file has nothing to read: the load would only spin.
                    if f.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
                        return Err(format!("path={p}: the file is empty (nothing to read)"));
                    }
                }
                if !["0", "1"].contains(&self.str("direct", "0").as_str()) {
                    return Err("direct must be 0 or 1".into());
                }
            }
            LoadKind::Net => {
                self.num_at_most("size", 64 << 10, MAX_BLOCK)?;
            }
            LoadKind::Exec => {}
            LoadKind::Build => {
                if self.num("jobs", 1)? > 4096 {
                    return Err("jobs: at most 4096".into());
                }
                if self.num("units", DEFAULT_UNITS)? > MAX_UNITS {
                    return Err(format!("units: at most {}", MAX_UNITS));
                }
                for tool in ["make", "cc"] {
                    if !latlab_core::sys::process::command_exists(tool) {
                        return Err(format!(
                            "the build load needs '{tool}' on PATH (Debian: apt-get install make gcc)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Parses `123`, `4k`, `64M`, `1G` (powers of 1024).
pub(crate) fn parse_size(v: &str) -> Option<u64> {
    latlab_core::config::parse_bytes(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_key_on_every_kind_with_commas() {
        let s = LoadSpec::parse("cpu:cpus=0,threads=2").unwrap();
        assert_eq!(s.cpus().unwrap().to_string(), "0");
        assert_eq!(s.num("threads", 1).unwrap(), 2);
        let mut h = LoadSpec::parse("hackbench:groups=1").unwrap();
        assert!(h.cpus().is_none());
        h.confine_to(&latlab_core::config::CpuSet::from_cpus([0]));
        assert_eq!(h.cpus().unwrap().to_string(), "0");
        let e = LoadSpec::parse("cpu:cpus=99999").unwrap_err().to_string();
        assert!(e.contains("--load") && e.contains("cpus"), "{e}");
    }

    #[test]
    fn parses_and_validates() {
        let s = LoadSpec::parse("hackbench:groups=2,loops=50,mode=thread").unwrap();
        assert_eq!(s.kind, LoadKind::Hackbench);
        assert_eq!(s.num("groups", 10).unwrap(), 2);
        assert_eq!(LoadSpec::parse("exec:true").unwrap().opts["cmd"], "true");
        assert_eq!(parse_size("64M"), Some(64 << 20));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty"), "").unwrap();
        let empty = format!("io:path={}", dir.path().join("empty").display());
        for bad in [
            "disk",
            "cpu:threads=0",
            "cpu:colour=red",
            "hackbench:mode=fork",
            "io:path=/nonexistent/x",
            "exec:",
            "exec:no-such-cmd-xyz",
            "memory:size=lots",
            "hackbench:groups=1000",
            "hackbench:groups=18446744073709551615",
            "cpu:threads=18446744073709551615",
            "cpu:threads=1025",
            "memory:size=18446744073709551615",
            "memory:threads=1024,size=1G",
            "io:block=18446744073709551615",
            "io:path=/dev/zero",
            "net:size=1G",
            "cpu:threads=1,threads=2",
            "cpu:cpus=0,cpus=1",
            &empty,
        ] {
            let e = LoadSpec::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--load"), "{bad}: {e}");
        }
    }
}
