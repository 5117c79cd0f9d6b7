//! Dispatch: turns parsed arguments into validated configs, runs the command, writes outputs.

use crate::cli::{Cli, Command, CyclicArgs, SamplesArgs};
use crate::config::cyclic::CyclicConfig;
use crate::config::CpuSet;
use crate::error::{Error, Result};
use crate::export::json::JsonSink;
use crate::export::table;
use crate::measure::cyclic;
use crate::samples::SampleLog;
use crate::stats::Recorder;
use std::io::Write;

/// Parses every `--load` before anything starts (bad specs are exit 2).
fn load_specs(v: &[String]) -> Result<Vec<crate::load::LoadSpec>> {
    v.iter().map(|s| crate::load::LoadSpec::parse(s)).collect()
}

/// Runs `measure` with the loads running around it; their reports and warnings go into the run.
fn with_loads<T>(
    specs: &[crate::load::LoadSpec],
    measure: impl FnOnce() -> Result<T>,
    run: impl FnOnce(&mut T) -> &mut crate::result::Run,
) -> Result<T> {
    let set = crate::load::LoadSet::start(specs)?;
    let mut out = measure()?;
    let (reports, warnings) = set.stop();
    let r = run(&mut out);
    r.loads = reports;
    r.warnings.extend(warnings);
    Ok(out)
}

/// The store a measurement's result goes to, opened before measuring so a bad store fails
/// before any time is spent.
struct Keeper {
    store: Option<Box<dyn crate::store::Store>>,
    tags: std::collections::BTreeMap<String, String>,
}

fn keeper(s: &crate::cli::StoreArgs) -> Result<Keeper> {
    let tags = crate::store::parse_tags(&s.tag)?;
    if s.no_store {
        return Ok(Keeper { store: None, tags });
    }
    Ok(Keeper {
        store: Some(crate::store::open(s.store.as_deref())?),
        tags,
    })
}

impl Keeper {
    /// Saves the run and says where.
    fn keep(self, run: &crate::result::Run) -> Result<()> {
        if let Some(mut st) = self.store {
            st.save(run, &self.tags)?;
            eprintln!("latlab: run {} stored in {}", run.id, st.location());
        }
        Ok(())
    }
}

/// One line per load for the text report.
fn load_lines(run: &crate::result::Run) -> String {
    run.loads
        .iter()
        .map(|l| {
            format!(
                "load {}: {:.4e} {}/s over {:.2} s{}\n",
                l.spec,
                l.rate_per_s,
                l.unit,
                l.seconds,
                l.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// Runs one parsed command line.
pub fn run(cli: Cli, argv: Vec<String>) -> Result<()> {
    if !matches!(cli.command, Command::Restore | Command::LoadWorker(_)) {
        if let Some(n) = crate::experiment::knobs::pending_notice() {
            eprintln!("{n}");
        }
    }
    match cli.command {
        Command::Cyclic(a) => cyclic_cmd(&a, argv),
        Command::Samples(a) => samples_cmd(&a),
        Command::Load(a) => {
            let spec = crate::load::LoadSpec::parse(&a.spec)?;
            let d = a
                .duration
                .as_deref()
                .map(|v| {
                    crate::config::parse_time_ns(v, crate::config::BareUnit::Seconds)
                        .map_err(|e| Error::flag("-D/--duration", v, e))
                })
                .transpose()?
                .map(std::time::Duration::from_nanos);
            print!("{}", crate::load::standalone(&spec, d)?);
            Ok(())
        }
        Command::LoadWorker(a) => crate::load::worker_main(&a.spec),
        Command::Runs(c) => crate::store::cmd::run(c),
        Command::Run(a) => {
            let text = if a.dry_run {
                crate::experiment::runner::dry_run(&a.plan, &a.set)?
            } else {
                crate::experiment::runner::run(&a.plan, a.store.as_deref(), &a.set)?
            };
            print!("{text}");
            Ok(())
        }
        Command::Restore => {
            print!("{}", crate::experiment::knobs::restore_from_journal()?);
            Ok(())
        }
        Command::Noise(a) => noise_cmd(&a, argv),
        Command::Ctxsw(a) => ctxsw_cmd(&a, argv),
        Command::Clocks(a) => clocks_cmd(&a, argv),
        Command::Tcp(a) => tcp_cmd(&a, argv),
        Command::Contend(a) => contend_cmd(&a, argv),
        Command::Migrate(a) => migrate_cmd(&a, argv),
        Command::Compare(a) => {
            let text = crate::compare::run(&a)?;
            print!("{text}");
            Ok(())
        }
        Command::Ministat(a) => std::process::exit(crate::compare::ministat_cmd::main(&a.args)),
    }
}

fn cyclic_cmd(a: &CyclicArgs, argv: Vec<String>) -> Result<()> {
    let cfg = CyclicConfig::from_args(a, &CpuSet::online_here())?;
    let sink = cfg.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let unit = cfg.unit;
    let hist = cfg.histogram_us.is_some();
    let to_stderr = cyclic::report::json_to_stdout(&cfg);
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(&loads, || cyclic::run(cfg, argv), |o| &mut o.run)?;
    let mut text = String::new();
    if hist {
        text.push_str(&cyclic::report::render_histogram(&outcome));
    }
    text.push_str(&cyclic::report::render(&outcome, unit));
    text.push_str(&load_lines(&outcome.run));
    if to_stderr {
        eprint!("{text}");
    } else {
        print!("{text}");
        let _ = std::io::stdout().flush();
    }
    if let Some(s) = sink {
        s.write(&outcome.run)?;
    }
    keep.keep(&outcome.run)?;
    match outcome.run.check_failure {
        Some(c) => Err(Error::CheckFailed(c)),
        None => Ok(()),
    }
}

fn noise_cmd(a: &crate::cli::NoiseArgs, argv: Vec<String>) -> Result<()> {
    use crate::config::noise::NoiseConfig;
    let cfg = NoiseConfig::from_args(a, &CpuSet::online_here(), crate::sys::tsc::available())?;
    let sink = cfg.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(
        &loads,
        || crate::measure::noise::run(cfg.clone(), argv),
        |o| &mut o.run,
    )?;
    let text = crate::measure::noise::report::render(&outcome, &cfg) + &load_lines(&outcome.run);
    emit(&text, cfg.json.as_deref(), sink, &outcome.run)?;
    keep.keep(&outcome.run)
}

fn ctxsw_cmd(a: &crate::cli::CtxswArgs, argv: Vec<String>) -> Result<()> {
    use crate::measure::ctxsw;
    let cfg = ctxsw::CtxswConfig::from_args(a, &CpuSet::online_here())?;
    let sink = a.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(&loads, || ctxsw::run(cfg.clone(), argv), |o| &mut o.run)?;
    let text = ctxsw::render(&outcome, &cfg) + &load_lines(&outcome.run);
    emit(&text, a.json.as_deref(), sink, &outcome.run)?;
    keep.keep(&outcome.run)
}

fn clocks_cmd(a: &crate::cli::ClocksArgs, argv: Vec<String>) -> Result<()> {
    use crate::measure::clocks;
    let cfg = clocks::ClocksConfig::from_args(a)?;
    let sink = a.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(&loads, || clocks::run(cfg.clone(), argv), |o| &mut o.run)?;
    let text = clocks::render(&outcome, &cfg) + &load_lines(&outcome.run);
    emit(&text, a.json.as_deref(), sink, &outcome.run)?;
    keep.keep(&outcome.run)?;
    check(&outcome.run)
}

fn contend_cmd(a: &crate::cli::ContendArgs, argv: Vec<String>) -> Result<()> {
    use crate::measure::contend;
    let cfg = contend::ContendConfig::from_args(a, &CpuSet::online_here())?;
    let sink = a.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(&loads, || contend::run(cfg.clone(), argv), |o| &mut o.run)?;
    let text = contend::render(&outcome, &cfg) + &load_lines(&outcome.run);
    emit(&text, a.json.as_deref(), sink, &outcome.run)?;
    keep.keep(&outcome.run)
}

fn migrate_cmd(a: &crate::cli::MigrateArgs, argv: Vec<String>) -> Result<()> {
    use crate::measure::migrate;
    let cfg = migrate::MigrateConfig::from_args(a, &CpuSet::online_here())?;
    let sink = a.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(&loads, || migrate::run(cfg.clone(), argv), |o| &mut o.run)?;
    let text = migrate::render(&outcome, &cfg) + &load_lines(&outcome.run);
    emit(&text, a.json.as_deref(), sink, &outcome.run)?;
    keep.keep(&outcome.run)?;
    check(&outcome.run)
}

/// Exit 1 when a requested check failed.
fn check(run: &crate::result::Run) -> Result<()> {
    match &run.check_failure {
        Some(c) => Err(Error::CheckFailed(c.clone())),
        None => Ok(()),
    }
}

fn tcp_cmd(a: &crate::cli::TcpArgs, argv: Vec<String>) -> Result<()> {
    use crate::measure::tcp;
    let cfg = tcp::TcpConfig::from_args(a, &CpuSet::online_here())?;
    let sink = a.json.as_deref().map(JsonSink::open).transpose()?;
    let keep = keeper(&a.common.store)?;
    let loads = load_specs(&a.common.load)?;
    let outcome = with_loads(&loads, || tcp::run(cfg.clone(), argv), |o| &mut o.run)?;
    let text = tcp::render(&outcome, &cfg, a.unit) + &load_lines(&outcome.run);
    if cfg.repeat > 1 {
        eprint!("{text}");
        print!("{}", tcp::figures(&outcome));
        let _ = std::io::stdout().flush();
        if let Some(s) = sink {
            s.write(&outcome.run)?;
        }
        return keep.keep(&outcome.run);
    }
    emit(&text, a.json.as_deref(), sink, &outcome.run)?;
    keep.keep(&outcome.run)
}

/// Prints a report (to stderr when the JSON goes to stdout) and writes the JSON.
fn emit(
    text: &str,
    json: Option<&std::path::Path>,
    sink: Option<JsonSink>,
    run: &crate::result::Run,
) -> Result<()> {
    if json.is_some_and(|p| p.as_os_str() == "-") {
        eprint!("{text}");
    } else {
        print!("{text}");
        let _ = std::io::stdout().flush();
    }
    match sink {
        Some(s) => s.write(run),
        None => Ok(()),
    }
}

fn samples_cmd(a: &SamplesArgs) -> Result<()> {
    let log = SampleLog::read(&a.file)?;
    let out = std::io::stdout();
    let mut o = std::io::BufWriter::new(out.lock());
    let io = |e| Error::io("stdout", e);
    if a.csv {
        writeln!(o, "series,cpu,loop,latency_ns").map_err(io)?;
        for (s, v) in log.series.iter().zip(&log.samples) {
            let cpu = s.cpu.map_or(String::new(), |c| c.to_string());
            for (i, x) in v.iter().enumerate() {
                writeln!(o, "{},{cpu},{},{x}", s.name, i + 1).map_err(io)?;
            }
        }
    } else {
        let f = |v: f64| a.unit.fmt_ns(v);
        let rows: Vec<Vec<String>> = log
            .series
            .iter()
            .zip(&log.samples)
            .enumerate()
            .map(|(i, (s, v))| {
                let mut r = Recorder::new();
                v.iter().for_each(|&x| r.record(x));
                let m = r.summary();
                let lost = log.lost.as_ref().map_or("?".into(), |l| l[i].to_string());
                vec![
                    s.name.clone(),
                    s.cpu.map_or("-".into(), |c| c.to_string()),
                    m.count.to_string(),
                    f(m.min_ns as f64),
                    f(m.max_ns as f64),
                    f(m.mean_ns),
                    f(m.stddev_ns),
                    f(m.percentiles.p99 as f64),
                    lost,
                ]
            })
            .collect();
        writeln!(o, "latencies in {}", a.unit).map_err(io)?;
        write!(
            o,
            "{}",
            table::render(
                &["series", "cpu", "count", "min", "max", "average", "sigma", "p99", "lost"],
                &rows
            )
        )
        .map_err(io)?;
        if log.lost.is_none() {
            writeln!(
                o,
                "warning: {}: no trailer; the log was cut short (all complete blocks were read)",
                a.file.display()
            )
            .map_err(io)?;
        }
    }
    o.flush().map_err(io)
}
