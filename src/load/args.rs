//! `latlab load`'s raw arguments (clap).

use crate::config::seconds;
use clap::Args;

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
}
