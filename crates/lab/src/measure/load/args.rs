//! `latlab load`'s raw arguments (clap).

use latlab_core::config::CpuSet;
use crate::driver::args::groups::{more_help, DurationArg};
use crate::driver::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab load`.
#[derive(Debug, Args)]
#[command(mut_arg("duration", |a| more_help(a, "Default: hackbench does one run; others run \
    until Ctrl-C.")))]
pub(crate) struct LoadArgs {
    /// KIND[:key=value,...]: hackbench (groups, fds, loops, datasize, mode=process|thread,
    /// ipc=socket|pipe), cpu (threads, policy, prio), memory (threads, size), io (path, direct,
    /// block, size), net (size), exec:CMD.
    pub(crate) spec: String,
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,

    /// Output (kind load: the achieved rate), where the result is kept (and other loads to
    /// run beside this one).
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

impl crate::driver::Lowering for LoadArgs {
    type Config = super::Foreground;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, _online: &CpuSet) -> Result<Self::Config> {
        Ok(super::Foreground {
            spec: crate::loadgen::LoadSpec::parse(&self.spec)?,
            load: self.spec.clone(),
            duration_ns: *self.duration,
        })
    }
}
