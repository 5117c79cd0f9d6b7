//! The kernel log, read for the clocksource switches it announces: a switch and its undoing
//! inside one 200 ms poll of the clocksource file leave the file as it was, and only the log
//! says the run was measured partly under another clock.

use std::io::{Read, Seek, SeekFrom};

/// What the kernel logs when it changes the clocksource (asked to, or its watchdog having
/// found the current one unstable).
const SWITCHED: &str = "clocksource: Switched to clocksource ";

/// `/dev/kmsg`, read from where the log ended when it was opened.
pub struct Kmsg {
    f: std::fs::File,
}

impl Kmsg {
    /// The log from now on; None where it cannot be read (no privilege, `dmesg_restrict`).
    pub fn open() -> Option<Kmsg> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        f.seek(SeekFrom::End(0)).ok()?;
        Some(Kmsg { f })
    }

    /// The clocksource switches logged since the last call, in order: (seconds since boot by
    /// the log's clock, the new clocksource).
    pub fn switches(&mut self) -> Vec<(f64, String)> {
        let mut out = Vec::new();
        // One record per read; records overwritten before they were read (EPIPE) are gone.
        let mut buf = [0u8; 8192];
        for _ in 0..10_000 {
            match self.f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend(parse(&String::from_utf8_lossy(&buf[..n]))),
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        out
    }
}

/// A `/dev/kmsg` record (`PRIO,SEQ,USEC,FLAGS;TEXT`) that announces a clocksource switch.
fn parse(record: &str) -> Option<(f64, String)> {
    let (head, text) = record.split_once(';')?;
    let usec: u64 = head.split(',').nth(2)?.parse().ok()?;
    let name = text.lines().next()?.strip_prefix(SWITCHED)?.trim();
    (!name.is_empty()).then(|| (usec as f64 / 1e6, name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_are_read_from_records_and_nothing_else_is() {
        assert_eq!(
            parse("6,829,21494724691,-;clocksource: Switched to clocksource kvm-clock\n"),
            Some((21494.724691, "kvm-clock".into()))
        );
        assert_eq!(
            parse("6,828,1000000,-;clocksource: Switched to clocksource tsc\n SUBSYSTEM=x\n"),
            Some((1.0, "tsc".into()))
        );
        for other in [
            "6,830,5,-;clocksource: Marking clocksource 'tsc' as unstable",
            "6,831,x,-;clocksource: Switched to clocksource tsc",
            "clocksource: Switched to clocksource tsc",
            "6,832,5,-;clocksource: Switched to clocksource ",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
