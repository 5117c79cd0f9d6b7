//! Lowers `latlab tcp`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::TcpArgs;
use latlab_core::config::CpuSet;
use latlab_core::error::{Error, Result};
use crate::measure::tcp::TcpConfig;
use std::net::IpAddr;

impl TcpConfig {
    /// Validates raw arguments.
    pub(crate) fn from_args(a: &TcpArgs, online: &CpuSet) -> Result<TcpConfig> {
        let address: IpAddr = a
            .address
            .parse()
            .map_err(|_| Error::flag("--address", &a.address, "not an IP address"))?;
        if !address.is_loopback() {
            return Err(Error::flag(
                "--address",
                address,
                "latlab tcp listens only on loopback addresses (127.0.0.0/8, ::1)",
            ));
        }
        let duration_ns = a.duration.unwrap_or(10_000_000_000);
        let (sender_cpu, receiver_cpu) = a.cpus.online(online)?;
        let repeat = u32::try_from(*a.repeat)
            .ok()
            .filter(|&r| r <= 10_000)
            .ok_or_else(|| Error::flag("--repeat", *a.repeat, "use 1 to 10000"))?;
        latlab_core::config::bounds::work("--repeat", repeat, u128::from(repeat), duration_ns)?;
        Ok(TcpConfig {
            mode: a.mode,
            address,
            port: a.port,
            duration_ns,
            send_size: a.send_size,
            request_size: a.request_size,
            response_size: a.response_size,
            send_buffer: a.send_buffer,
            recv_buffer: a.recv_buffer,
            nodelay: a.nodelay,
            sender_cpu,
            receiver_cpu,
            processes: *a.tasks == latlab_core::config::TaskKind::Processes,
            repeat,
            unit: *a.unit,
        })
    }
}
