//! The kernel log, read for the clocksource switches and CPU hotplug it announces: a switch
//! and its undoing (a CPU taken offline and brought back) inside one 200 ms poll of the file
//! leave the file as it was, and only the log says the run was measured partly under another
//! clock, or with a CPU gone.

use std::io::{Read, Seek, SeekFrom};

/// What the kernel logs when it changes the clocksource (asked to, or its watchdog having
/// found the current one unstable).
const SWITCHED: &str = "clocksource: Switched to clocksource ";

/// What x86's smpboot logs when a CPU goes offline (`smpboot: CPU 3 is now offline`) and
/// when one is brought up (`smpboot: Booting Node 0 Processor 3 APIC 0x3`).
const OFFLINE: (&str, &str) = ("smpboot: CPU ", " is now offline");
const BOOTING: &str = "smpboot: Booting Node ";

/// A change the kernel logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Logged {
    /// The clocksource switched to this one.
    Clocksource(String),
    /// This CPU went offline.
    Offline(usize),
    /// This CPU is being brought online.
    Online(usize),
}

/// `/dev/kmsg`, read from where the log ended when it was opened.
pub(crate) struct Kmsg {
    f: std::fs::File,
}

impl Kmsg {
    /// The log from now on; None where it cannot be read (no privilege, `dmesg_restrict`).
    pub(crate) fn open() -> Option<Kmsg> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        f.seek(SeekFrom::End(0)).ok()?;
        Some(Kmsg { f })
    }

    /// The changes logged since the last call, in order: (seconds since boot by the log's
    /// clock, what changed).
    pub(crate) fn changes(&mut self) -> Vec<(f64, Logged)> {
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

/// A `/dev/kmsg` record (`PRIO,SEQ,USEC,FLAGS;TEXT`) that announces a clocksource switch or
/// a CPU going offline or online.
fn parse(record: &str) -> Option<(f64, Logged)> {
    let (head, text) = record.split_once(';')?;
    let usec: u64 = head.split(',').nth(2)?.parse().ok()?;
    let line = text.lines().next()?;
    let at = usec as f64 / 1e6;
    if let Some(name) = line.strip_prefix(SWITCHED) {
        let name = name.trim();
        return (!name.is_empty()).then(|| (at, Logged::Clocksource(name.to_string())));
    }
    if let Some(cpu) = line
        .strip_prefix(OFFLINE.0)
        .and_then(|r| r.strip_suffix(OFFLINE.1))
    {
        return Some((at, Logged::Offline(cpu.parse().ok()?)));
    }
    // `Booting Node N Processor C APIC A`
    let mut w = line.strip_prefix(BOOTING)?.split_whitespace();
    let (_, processor, cpu) = (w.next()?, w.next()?, w.next()?);
    (processor == "Processor").then_some(())?;
    Some((at, Logged::Online(cpu.parse().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_and_hotplug_are_read_from_records_and_nothing_else_is() {
        assert_eq!(
            parse("6,829,21494724691,-;clocksource: Switched to clocksource kvm-clock\n"),
            Some((21494.724691, Logged::Clocksource("kvm-clock".into())))
        );
        assert_eq!(
            parse("6,828,1000000,-;clocksource: Switched to clocksource tsc\n SUBSYSTEM=x\n"),
            Some((1.0, Logged::Clocksource("tsc".into())))
        );
        assert_eq!(
            parse("6,900,10376868,-;smpboot: CPU 3 is now offline"),
            Some((10.376868, Logged::Offline(3)))
        );
        assert_eq!(
            parse("6,901,10417166,-;smpboot: Booting Node 0 Processor 3 APIC 0x3"),
            Some((10.417166, Logged::Online(3)))
        );
        for other in [
            "6,830,5,-;clocksource: Marking clocksource 'tsc' as unstable",
            "6,831,x,-;clocksource: Switched to clocksource tsc",
            "clocksource: Switched to clocksource tsc",
            "6,832,5,-;clocksource: Switched to clocksource ",
            "6,833,5,-;smpboot: CPU x is now offline",
            "6,834,5,-;smpboot: Booting Node 0 Processor x APIC 0x3",
            "6,835,5,-;x86: Booting SMP configuration:",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
