//! `latlab tcp`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::CpuSet;
use crate::config::{seconds, DisplayUnit};
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use clap::Args;

/// Arguments of `latlab tcp`.
#[derive(Debug, Args)]
pub struct TcpArgs {
    /// stream (throughput) or rr (request/response).
    #[arg(long, value_enum, default_value_t = crate::measure::tcp::Mode::Stream)]
    pub mode: crate::measure::tcp::Mode,
    /// Length of each run: 10 (s), 500ms.
    #[arg(
        value_parser = seconds,
        short = 'D',
        long,
        default_value = "10s",
        allow_negative_numbers = true
    )]
    pub duration: u64,
    /// Bytes per send (stream; default 128k, as iperf3's TCP default, so the two compare at equal sends).
    #[arg(short = 'm', long, value_name = "SIZE")]
    pub send_size: Option<String>,
    /// Request size (rr; default 1).
    #[arg(short = 'r', long, value_name = "SIZE")]
    pub request_size: Option<String>,
    /// Response size (rr; default 1).
    #[arg(long, value_name = "SIZE")]
    pub response_size: Option<String>,
    /// Sender socket buffer (SO_SNDBUF).
    #[arg(short = 's', long, value_name = "SIZE")]
    pub send_buffer: Option<String>,
    /// Receiver socket buffer (SO_RCVBUF).
    #[arg(short = 'S', long, value_name = "SIZE")]
    pub recv_buffer: Option<String>,
    /// Set TCP_NODELAY on the sender.
    #[arg(long)]
    pub nodelay: bool,
    /// Pin the sender (client) to this CPU.
    #[arg(long, value_name = "CPU")]
    pub sender_cpu: Option<usize>,
    /// Pin the receiver (server) to this CPU.
    #[arg(long, value_name = "CPU")]
    pub receiver_cpu: Option<usize>,
    /// Receiver in a thread or in a forked process.
    #[arg(long, value_enum, default_value_t = crate::measure::ctxsw::methods::TaskKind::Threads)]
    pub tasks: crate::measure::ctxsw::methods::TaskKind,
    /// Runs; with more than one, stdout gets one figure per line (for latlab compare or
    /// ministat) and the table goes to stderr.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Loopback address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,
    /// Port (0: any free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Unit for round trips.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
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
