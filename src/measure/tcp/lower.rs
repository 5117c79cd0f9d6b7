//! Lowers `latlab tcp`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::TcpArgs;
use crate::config::CpuSet;
use crate::error::{Error, Result};
use crate::measure::tcp::TcpConfig;
use std::net::IpAddr;

fn size(flag: &str, v: &Option<String>) -> Result<Option<usize>> {
    v.as_deref()
        .map(|s| {
            crate::loadgen::spec::parse_size(s)
                .filter(|&n| n > 0 && n <= 1 << 30)
                .map(|n| n as usize)
                .ok_or_else(|| {
                    Error::flag(
                        flag,
                        s,
                        "expected a size from 1 byte to 1G (k, M, G allowed)",
                    )
                })
        })
        .transpose()
}

impl TcpConfig {
    /// Validates raw arguments.
    pub fn from_args(a: &TcpArgs, online: &CpuSet) -> Result<TcpConfig> {
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
        let duration_ns = a.duration;
        let cpu = |flag: &str, c: Option<usize>| -> Result<Option<usize>> {
            match c {
                Some(c) if !online.contains(c) => Err(Error::flag(
                    flag,
                    c,
                    format!("CPU is not online (online: {online})"),
                )),
                c => Ok(c),
            }
        };
        if a.repeat == 0 || a.repeat > 10_000 {
            return Err(Error::flag("--repeat", a.repeat, "use 1 to 10000"));
        }
        crate::config::bounds::work("--repeat", a.repeat, u128::from(a.repeat), duration_ns)?;
        Ok(TcpConfig {
            mode: a.mode,
            address,
            port: a.port,
            duration_ns,
            send_size: size("-m/--send-size", &a.send_size)?.unwrap_or(128 << 10),
            request_size: size("-r/--request-size", &a.request_size)?.unwrap_or(1),
            response_size: size("--response-size", &a.response_size)?.unwrap_or(1),
            send_buffer: size("-s/--send-buffer", &a.send_buffer)?,
            recv_buffer: size("-S/--recv-buffer", &a.recv_buffer)?,
            nodelay: a.nodelay,
            sender_cpu: cpu("--sender-cpu", a.sender_cpu)?,
            receiver_cpu: cpu("--receiver-cpu", a.receiver_cpu)?,
            processes: a.tasks == crate::measure::ctxsw::methods::TaskKind::Processes,
            repeat: a.repeat,
            unit: a.unit,
        })
    }
}
