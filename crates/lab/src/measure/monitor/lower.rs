//! Lowers `latlab monitor`'s raw arguments (cli) into its validated config: every flag checked,
//! each failure an exit-2 message naming the flag and the value.

use super::args::MonitorArgs;
use latlab_core::config::{CpuSet, Policy};
use latlab_core::error::{Error, Result};
use crate::measure::monitor::{MonitorConfig, DEFAULT_LISTEN};
use std::net::SocketAddr;

/// A monitor id: 1-64 letters, digits, '_', '-' or '.'.
fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

impl MonitorConfig {
    /// Validates the arguments (exit 2 naming the flag).
    pub(crate) fn from_args(a: &MonitorArgs, online: &CpuSet, host: &str) -> Result<MonitorConfig> {
        let cpus = a.affinity.online(online)?.unwrap_or_else(|| online.clone());
        let interval_ns = interval_of(a)?;
        check_snapshot_every(a.snapshot_every)?;
        check_window(a.window)?;
        let prio = a.priority.unwrap_or(80);
        let policy = if prio == 0 {
            Policy::Other
        } else {
            Policy::Fifo
        };
        let listen = listen_of(a)?;
        let web = a
            .web_config
            .as_deref()
            .map(latlab_http::webconfig::WebConfig::load)
            .transpose()?
            .map(std::sync::Arc::new);
        let monitor_id = monitor_id_of(a, host)?;
        let trace_threshold_ns = a.trace.threshold_ns()?;
        if let Some(p) = &a.trace.trace_save {
            check_trace_save(p)?;
        }
        let trace_culprits = culprits_of(a)?;
        let tags = tags_of(a, host, &monitor_id)?;
        crate::measure::timerlat::probe::check_engine(
            a.engine,
            a.interval.as_ref().map_or("", |t| &t.text),
            interval_ns,
            &a.trace,
        )?;
        Ok(MonitorConfig {
            cpus: cpus.iter().collect(),
            engine: a.engine,
            interval_ns,
            policy,
            prio,
            listen,
            snapshot_every_ns: a.snapshot_every,
            threshold_ns: a.threshold.as_ref().map(|t| t.ns),
            window_ns: a.window,
            web,
            monitor_id,
            duration_ns: *a.duration,
            mlock: !a.no_mlock.no_mlock,
            strict: a.common.strict(),
            store: a.common.store.store.clone(),
            no_store: a.common.store.no_store,
            tags,
            trace_threshold_ns,
            trace_stacks: a.trace.trace_stacks,
            trace_save: a.trace.trace_save.clone(),
            trace_actions: a.trace.actions()?,
            trace_limits: a.trace.limits()?,
            trace_culprits,
            quiet: a.common.quiet(),
        })
    }
}

/// The measuring threads' period (`-i`, 1 ms unless given).
fn interval_of(a: &MonitorArgs) -> Result<u64> {
    let interval_ns = a.interval.as_ref().map_or(1_000_000, |t| t.ns);
    if interval_ns < 10_000 {
        return Err(Error::flag(
            "-i/--interval",
            a.interval.as_ref().map_or("", |t| &t.text),
            "at least 10 µs",
        ));
    }
    Ok(interval_ns)
}

/// `--snapshot-every`: at least a second between stored snapshots.
fn check_snapshot_every(snapshot_every_ns: u64) -> Result<()> {
    if snapshot_every_ns < 1_000_000_000 {
        return Err(Error::flag(
            "--snapshot-every",
            format!("{} s", snapshot_every_ns as f64 / 1e9),
            "at least 1 s",
        ));
    }
    Ok(())
}

/// `--window`: aligned windows of a second to an hour.
fn check_window(window_ns: u64) -> Result<()> {
    if !(1_000_000_000..=3_600_000_000_000).contains(&window_ns) {
        return Err(Error::flag(
            "--window",
            format!("{} s", window_ns as f64 / 1e9),
            "between 1 s and 1 h",
        ));
    }
    Ok(())
}

/// The endpoint's address (`--listen`, loopback unless given).
fn listen_of(a: &MonitorArgs) -> Result<SocketAddr> {
    let listen_text = a.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
    listen_text.parse().map_err(|e| {
        Error::flag(
            "--listen",
            listen_text,
            format!("{e} (expected ADDRESS:PORT, e.g. 127.0.0.1:9477)"),
        )
    })
}

/// The monitor's name: `--monitor-id`, else the host name, else (a host name that is no
/// valid id) "default".
fn monitor_id_of(a: &MonitorArgs, host: &str) -> Result<String> {
    let monitor_id = a.monitor_id.clone().unwrap_or_else(|| host.to_string());
    let monitor_id = if a.monitor_id.is_none() && !valid_id(&monitor_id) {
        "default".to_string()
    } else {
        monitor_id
    };
    if !valid_id(&monitor_id) {
        return Err(Error::flag(
            "--monitor-id",
            &monitor_id,
            "use 1-64 letters, digits, '_', '-' or '.'",
        ));
    }
    Ok(monitor_id)
}

/// A monitor's `--trace-save` keeps only a trace.dat.
fn check_trace_save(p: &std::path::Path) -> Result<()> {
    if !latlab_trace::dat::wanted(p) {
        return Err(Error::flag(
            "--trace-save",
            p.display(),
            "a monitor keeps only a trace.dat (FILE.dat: the last 64 MiB per CPU); a timeline of every spike of an endless run would grow without bound",
        ));
    }
    Ok(())
}

/// `--trace-culprits`: the culprit groups with a series of their own, per CPU.
fn culprits_of(a: &MonitorArgs) -> Result<usize> {
    Ok(match a.trace_culprits {
        Some(n) if n > 1000 => {
            return Err(Error::flag(
                "--trace-culprits",
                n,
                "at most 1000 (each is a series per CPU)",
            ))
        }
        Some(n) => n as usize,
        None => super::causes::DEFAULT_TOP,
    })
}

/// The tags every snapshot carries: `--tag`s, and the host and monitor tags unless the user
/// gave their own (a container's hostname says little; `--tag host=rack3-node7` names it
/// for `report --fleet`).
fn tags_of(a: &MonitorArgs, host: &str, monitor_id: &str) -> Result<Vec<String>> {
    let mut tags = a.common.store.tag.clone();
    for (k, v) in [("host", host), ("monitor", monitor_id)] {
        if !tags
            .iter()
            .any(|t| t.split_once('=').is_some_and(|(tk, _)| tk.trim() == k))
        {
            tags.push(format!("{k}={v}"));
        }
    }
    latlab_core::store::parse_tags(&tags)?;
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(args: &[&str]) -> MonitorConfig {
        let argv = ["latlab", "monitor"].iter().chain(args);
        let a: MonitorArgs = crate::driver::args::parse_args("monitor", argv).unwrap();
        MonitorConfig::from_args(&a, &CpuSet::from_cpus([0, 1]), "box").unwrap()
    }

    #[test]
    fn host_and_monitor_tags_yield_to_the_users() {
        let c = lower(&[]);
        assert!(c.tags.iter().any(|t| t == "host=box"), "{:?}", c.tags);
        let c = lower(&["--tag", "host=rack3-node7", "--tag", "team=rt"]);
        let hosts: Vec<_> = c.tags.iter().filter(|t| t.starts_with("host=")).collect();
        assert_eq!(hosts, ["host=rack3-node7"]);
        assert!(c.tags.iter().any(|t| t.starts_with("monitor=")));
    }
}
