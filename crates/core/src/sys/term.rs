//! The terminal behind stdout: its width, for output that fits it (ministat's plot).

/// Columns of the terminal on stdout, if stdout is one.
pub fn stdout_columns() -> Option<u16> {
    // SAFETY: winsize is plain data; TIOCGWINSZ fills it or fails (not a terminal).
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        (libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) != -1).then_some(ws.ws_col)
    }
}
