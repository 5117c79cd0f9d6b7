//! `latlab tcp`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::CpuSet;
use crate::driver::args::groups::{more_help, DurationArg, PeerCpus, RepeatArg, TasksArg, UnitArg};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab tcp`.
#[derive(Debug, Args)]
#[command(mut_arg("duration", |a| more_help(a, "Of each run.").default_value("10s")))]
#[command(mut_arg("sender_cpu", |a| more_help(a, "The sender is the client.")))]
#[command(mut_arg("receiver_cpu", |a| more_help(a, "The receiver is the server.")))]
#[command(mut_arg("tasks", |a| more_help(a, "Here: the receiver (the server).")))]
#[command(mut_arg("repeat", |a| more_help(a, "With more than one, stdout gets one figure \
    per line (for latlab compare or ministat) and the table goes to stderr.")))]
#[command(mut_arg("unit", |a| more_help(a, "Here: of round trips.")))]
pub(crate) struct TcpArgs {
    /// stream (throughput) or rr (request/response).
    #[arg(long, value_enum, default_value_t = crate::measure::tcp::Mode::Stream)]
    pub(crate) mode: crate::measure::tcp::Mode,
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,
    /// Bytes per send (stream), as iperf3's TCP default so the two compare at equal sends; a
    /// bare number is bytes, or 64k, 1M.
    #[arg(short = 'm', long, value_name = "SIZE", default_value = "128k", value_parser = size)]
    pub(crate) send_size: usize,
    /// Request size (rr); a bare number is bytes.
    #[arg(short = 'r', long, value_name = "SIZE", default_value = "1", value_parser = size)]
    pub(crate) request_size: usize,
    /// Response size (rr); a bare number is bytes.
    #[arg(long, value_name = "SIZE", default_value = "1", value_parser = size)]
    pub(crate) response_size: usize,
    /// Sender socket buffer (SO_SNDBUF); a bare number is bytes.
    #[arg(short = 's', long, value_name = "SIZE", value_parser = size)]
    pub(crate) send_buffer: Option<usize>,
    /// Receiver socket buffer (SO_RCVBUF); a bare number is bytes.
    #[arg(short = 'S', long, value_name = "SIZE", value_parser = size)]
    pub(crate) recv_buffer: Option<usize>,
    /// Set TCP_NODELAY on the sender.
    #[arg(long)]
    pub(crate) nodelay: bool,
    /// `--sender-cpu`, `--receiver-cpu`.
    #[command(flatten)]
    pub(crate) cpus: PeerCpus,
    /// `--tasks`.
    #[command(flatten)]
    pub(crate) tasks: TasksArg,
    /// `--repeat`.
    #[command(flatten)]
    pub(crate) repeat: RepeatArg,
    /// Loopback address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub(crate) address: String,
    /// Port (0: any free one).
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

/// A size in bytes: `64k`, `1M`, `1G`, or a bare number of bytes; from 1 byte to 1 GiB.
fn size(v: &str) -> std::result::Result<usize, String> {
    crate::loadgen::spec::parse_size(v)
        .filter(|&n| n > 0 && n <= 1 << 30)
        .map(|n| n as usize)
        .ok_or_else(|| "expected a size from 1 byte to 1G (k, M, G allowed)".to_string())
}

impl crate::driver::Lowering for TcpArgs {
    type Config = super::TcpConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        super::TcpConfig::from_args(self, online)
    }
}
