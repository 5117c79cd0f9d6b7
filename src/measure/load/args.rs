//! `latlab load`'s raw arguments (clap).

use crate::config::{seconds, CpuSet};
use crate::driver::MeasureArgs;
use crate::error::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// KIND[:key=value,...]: hackbench (groups, fds, loops, datasize, mode=process|thread,
    /// ipc=socket|pipe), cpu (threads, policy, prio), memory (threads, size), io (path, direct,
    /// block, size), net (size), exec:CMD.
    pub spec: String,
    /// Run this long (default: hackbench does one run; others run until Ctrl-C).
    #[arg(value_parser = seconds, short = 'D', long, value_name = "TIME")]
    pub duration: Option<u64>,
    /// Write the result (kind load: the achieved rate) as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Where the result is kept (and other loads to run beside this one).
    #[command(flatten)]
    pub common: MeasureArgs,
}

impl crate::driver::Lowering for LoadArgs {
    type Config = super::Foreground;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn json(&self) -> Option<&std::path::Path> {
        self.json.as_deref()
    }

    fn lower(&self, _online: &CpuSet) -> Result<Self::Config> {
        Ok(super::Foreground {
            spec: crate::loadgen::LoadSpec::parse(&self.spec)?,
            load: self.spec.clone(),
            duration_ns: self.duration,
        })
    }
}
