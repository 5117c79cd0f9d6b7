//! `--trace-save FILE.dat`: the raw ring-buffer pages the recorder read, written in
//! trace-cmd's `trace.dat` format (version 6, as described in trace-cmd.dat.v6(5)) so
//! `trace-cmd report` and KernelShark open the window latlab explained: the header page and
//! event header, the formats of the events traced, /proc/kallsyms, the printk formats, the
//! saved command lines, then each CPU's pages, page-aligned.

use std::path::Path;

/// What a `trace.dat` file holds besides the pages.
#[derive(Debug, Default)]
pub(crate) struct Meta {
    /// `events/header_page`.
    pub(crate) header_page: Vec<u8>,
    /// `events/header_event`.
    pub(crate) header_event: Vec<u8>,
    /// Per event system: its name and its events' `format` files.
    pub(crate) systems: Vec<(String, Vec<Vec<u8>>)>,
    /// /proc/kallsyms.
    pub(crate) kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub(crate) printk: Vec<u8>,
    /// `saved_cmdlines` (`pid comm` lines).
    pub(crate) cmdlines: Vec<u8>,
    /// Ring-buffer page size.
    pub(crate) page_size: usize,
}

/// Reads what [`Meta`] needs from tracefs `root` for `events` (`system/event` names).
pub(crate) fn meta(root: &Path, events: &[String], page_size: usize) -> std::io::Result<Meta> {
    let rd = |p: &Path| -> std::io::Result<Vec<u8>> {
        super::tracefs::read(p)
            .map(String::into_bytes)
            .map_err(|e| std::io::Error::other(e.to_string()))
    };
    let ev = root.join("events");
    let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for e in events {
        let Some((sys, name)) = e.split_once('/') else {
            continue;
        };
        let f = rd(&ev.join(sys).join(name).join("format"))?;
        match systems.iter_mut().find(|s| s.0 == sys) {
            Some(s) => s.1.push(f),
            None => systems.push((sys.to_string(), vec![f])),
        }
    }
    Ok(Meta {
        header_page: rd(&ev.join("header_page"))?,
        header_event: rd(&ev.join("header_event"))?,
        systems,
        kallsyms: std::fs::read("/proc/kallsyms").unwrap_or_default(),
        printk: rd(&root.join("printk_formats")).unwrap_or_default(),
        cmdlines: rd(&root.join("saved_cmdlines")).unwrap_or_default(),
        page_size,
    })
}

fn u32le(out: &mut Vec<u8>, v: usize) -> std::io::Result<()> {
    let v = u32::try_from(v).map_err(|_| std::io::Error::other("section over 4 GiB"))?;
    out.extend_from_slice(&v.to_le_bytes());
    Ok(())
}

/// The file's bytes: `cpus[i]` holds CPU i's pages (empty for a CPU not traced), each page
/// `page_size` long (shorter ones are zero-padded; the commit word says how much is data).
pub(crate) fn encode(m: &Meta, cpus: &[Vec<Vec<u8>>]) -> std::io::Result<Vec<u8>> {
    let mut o = Vec::new();
    o.extend_from_slice(&[0x17, 0x08, 0x44]);
    o.extend_from_slice(b"tracing6\0");
    o.push(0); // little endian
    o.push(std::mem::size_of::<libc::c_long>() as u8);
    u32le(&mut o, m.page_size)?;
    o.extend_from_slice(b"header_page\0");
    o.extend_from_slice(&(m.header_page.len() as u64).to_le_bytes());
    o.extend_from_slice(&m.header_page);
    o.extend_from_slice(b"header_event\0");
    o.extend_from_slice(&(m.header_event.len() as u64).to_le_bytes());
    o.extend_from_slice(&m.header_event);
    u32le(&mut o, 0)?; // no ftrace (function tracer) formats
    u32le(&mut o, m.systems.len())?;
    for (sys, formats) in &m.systems {
        o.extend_from_slice(sys.as_bytes());
        o.push(0);
        u32le(&mut o, formats.len())?;
        for f in formats {
            o.extend_from_slice(&(f.len() as u64).to_le_bytes());
            o.extend_from_slice(f);
        }
    }
    u32le(&mut o, m.kallsyms.len())?;
    o.extend_from_slice(&m.kallsyms);
    u32le(&mut o, m.printk.len())?;
    o.extend_from_slice(&m.printk);
    o.extend_from_slice(&(m.cmdlines.len() as u64).to_le_bytes());
    o.extend_from_slice(&m.cmdlines);
    u32le(&mut o, cpus.len())?;
    o.extend_from_slice(b"flyrecord\0");
    // The table of (offset, size) per CPU, then the data from the next page boundary.
    let table = o.len();
    o.resize(table + 16 * cpus.len(), 0);
    let ps = m.page_size.max(1);
    let mut at = o.len().div_ceil(ps) * ps;
    for (i, pages) in cpus.iter().enumerate() {
        let size = pages.len() * ps;
        let e = table + 16 * i;
        let off = if size == 0 { 0 } else { at };
        o[e..e + 8].copy_from_slice(&(off as u64).to_le_bytes());
        o[e + 8..e + 16].copy_from_slice(&(size as u64).to_le_bytes());
        if size > 0 {
            o.resize(at, 0);
            for p in pages {
                let k = p.len().min(ps);
                o.extend_from_slice(&p[..k]);
                o.resize(o.len() + (ps - k), 0);
            }
            at = o.len();
        }
    }
    Ok(o)
}

/// True when `--trace-save` names a trace.dat file (`.dat`), not a readable timeline.
pub fn wanted(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "dat")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_of_a_small_file() {
        let m = Meta {
            header_page: b"hp".to_vec(),
            header_event: b"he".to_vec(),
            systems: vec![("sched".into(), vec![b"fmt".to_vec()])],
            kallsyms: b"ks".to_vec(),
            printk: vec![],
            cmdlines: b"1 init\n".to_vec(),
            page_size: 64,
        };
        let cpus = vec![vec![], vec![vec![1u8; 10], vec![2u8; 64]]];
        let o = encode(&m, &cpus).unwrap();
        assert_eq!(&o[..3], &[0x17, 0x08, 0x44]);
        assert_eq!(&o[3..12], b"tracing6\0");
        assert_eq!(u32::from_le_bytes(o[14..18].try_into().unwrap()), 64);
        assert_eq!(&o[18..30], b"header_page\0");
        let fly = o.windows(10).position(|w| w == b"flyrecord\0").unwrap();
        assert_eq!(u32::from_le_bytes(o[fly - 4..fly].try_into().unwrap()), 2);
        let t = fly + 10;
        let rd = |i: usize| u64::from_le_bytes(o[i..i + 8].try_into().unwrap()) as usize;
        assert_eq!((rd(t), rd(t + 8)), (0, 0), "CPU 0 untraced");
        let (off, size) = (rd(t + 16), rd(t + 24));
        assert_eq!((off % 64, size), (0, 128));
        assert_eq!(&o[off..off + 10], &[1u8; 10]);
        assert_eq!(o[off + 10], 0, "short page zero-padded");
        assert_eq!(&o[off + 64..off + 128], &[2u8; 64]);
        assert_eq!(o.len(), off + size);
        assert!(wanted(Path::new("x.dat")) && !wanted(Path::new("x.txt")));
    }
}
