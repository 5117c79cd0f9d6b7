//! `--trace-stacks`: kernel return addresses named from /proc/kallsyms (`function+0x1c`), so
//! a spike's stack reads as code, not numbers.

use std::path::Path;

/// The kernel's text symbols, by address.
#[derive(Debug, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    /// Reads `path` (/proc/kallsyms); None when it cannot be read or shows no addresses
    /// (`kptr_restrict` hides them from this user).
    pub fn load(path: &Path) -> Option<Kallsyms> {
        Kallsyms::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// Parses kallsyms text: `address type name [module]`, text symbols only.
    pub(crate) fn parse(text: &str) -> Option<Kallsyms> {
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let a = u64::from_str_radix(f.next()?, 16).ok()?;
                let t = f.next()?;
                let n = f.next()?;
                (a != 0 && matches!(t, "t" | "T" | "w" | "W")).then(|| (a, n.to_string()))
            })
            .collect();
        if syms.is_empty() {
            return None;
        }
        syms.sort();
        Some(Kallsyms { syms })
    }

    /// `function+0xoff` for an address, or the address in hex when no symbol covers it.
    pub fn name(&self, addr: u64) -> String {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        match i.checked_sub(1).map(|i| &self.syms[i]) {
            Some((a, n)) if addr - a < (1 << 20) => format!("{n}+{:#x}", addr - a),
            _ => format!("{addr:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_become_names() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t net_rx_action\n\
             ffffffff81000200 D some_data\n0000000000000000 T hidden\n",
        )
        .unwrap();
        assert_eq!(k.name(0xffffffff81000110), "net_rx_action+0x10");
        assert_eq!(k.name(0xffffffff81000000), "_stext+0x0");
        assert_eq!(k.name(0x10), "0x10");
        assert!(Kallsyms::parse("0000000000000000 T x\n").is_none());
    }
}
