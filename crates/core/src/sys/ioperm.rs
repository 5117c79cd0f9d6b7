//! x86 I/O port permissions (`ioperm`), for the seed 000 context-switch experiment.

use crate::error::{Error, Result};

/// Grants the calling thread access to `port` (one port). Explains ENOSYS, EPERM and non-x86.
pub fn enable(port: u32) -> Result<()> {
    if port > 0xffff {
        return Err(Error::flag(
            "--ioperm",
            format!("{port:#x}"),
            "ports go up to 0xffff",
        ));
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: plain syscall; arguments are in range.
        let r = unsafe { libc::ioperm(port as libc::c_ulong, 1, 1) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => Error::Env(format!(
                "ioperm({port:#x}) failed: {e}. This kernel was built without I/O port permissions \
                 (CONFIG_X86_IOPL_IOPERM is not set), so the ioperm phases cannot run here"
            )),
            Some(libc::EPERM) => Error::Env(format!(
                "ioperm({port:#x}) failed: {e}. It needs root (CAP_SYS_RAWIO)"
            )),
            _ => Error::Env(format!("ioperm({port:#x}) failed: {e}")),
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Err(Error::Env(
            "--ioperm is x86-only: this architecture has no I/O ports".into(),
        ))
    }
}
