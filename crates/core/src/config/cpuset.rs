//! CPU lists in the kernel's syntax ("0-3,6,8-15:2") and the set of CPUs that are online.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

/// The largest CPU number latlab accepts (matches the kernel's CONFIG_NR_CPUS ceiling).
pub(crate) const MAX_CPU: usize = 8191;

/// An ordered set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuSet(BTreeSet<usize>);

impl CpuSet {
    /// Parses the kernel's CPU list syntax: `0-3,6`, ranges with a stride `0-15:2`.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let mut set = BTreeSet::new();
        let t = text.trim();
        if t.is_empty() {
            return Err("empty CPU list".into());
        }
        for part in t.split(',') {
            let part = part.trim();
            let (range, stride) = match part.split_once(':') {
                Some((r, s)) => {
                    let s: usize = s
                        .parse()
                        .map_err(|_| format!("bad stride '{s}' in '{part}'"))?;
                    if s == 0 {
                        return Err(format!("stride 0 in '{part}'"));
                    }
                    (r, s)
                }
                None => (part, 1),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (parse_cpu(a, part)?, parse_cpu(b, part)?),
                None => {
                    let c = parse_cpu(range, part)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(format!("range '{part}' runs backwards"));
            }
            set.extend((lo..=hi).step_by(stride));
        }
        Ok(CpuSet(set))
    }

    /// Builds a set from CPU numbers.
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> CpuSet {
        CpuSet(cpus.into_iter().collect())
    }

    /// The CPUs that are online, read from `<sys_root>/devices/system/cpu/online`.
    pub(crate) fn online(sys_root: &Path) -> Result<CpuSet, String> {
        let path = sys_root.join("devices/system/cpu/online");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        CpuSet::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The CPUs online on this machine (falls back to 0..available_parallelism).
    pub fn online_here() -> CpuSet {
        CpuSet::online_in(&crate::sys::roots::Roots::host())
    }

    /// The CPUs online under `roots` (falls back to 0..available_parallelism).
    pub(crate) fn online_in(roots: &crate::sys::roots::Roots) -> CpuSet {
        CpuSet::online(&roots.sys_root).unwrap_or_else(|_| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            CpuSet::from_cpus(0..n)
        })
    }

    /// Parses a CPU list given to `flag` and checks every CPU is online (exit 2 naming the
    /// flag, the value and the offline CPUs otherwise).
    pub fn parse_online(flag: &str, v: &str, online: &CpuSet) -> crate::Result<CpuSet> {
        let set = CpuSet::parse(v).map_err(|e| crate::Error::flag(flag, v, e))?;
        let off = set.difference(online);
        if !off.is_empty() {
            return Err(crate::Error::flag(
                flag,
                v,
                format!("CPU(s) {off} are not online (online: {online})"),
            ));
        }
        Ok(set)
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }

    /// CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }
}

fn parse_cpu(text: &str, part: &str) -> Result<usize, String> {
    let c: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("'{}' in '{part}' is not a CPU number", text.trim()))?;
    if c > MAX_CPU {
        return Err(format!(
            "CPU {c} is beyond the largest possible CPU {MAX_CPU}"
        ));
    }
    Ok(c)
}

impl fmt::Display for CpuSet {
    /// Writes the set back in compact list syntax, e.g. `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v: Vec<usize> = self.iter().collect();
        let mut i = 0;
        let mut first = true;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j > i {
                write!(f, "{}-{}", v[i], v[j])?;
            } else {
                write!(f, "{}", v[i])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(s: &str) -> Vec<usize> {
        CpuSet::parse(s).unwrap().iter().collect()
    }

    #[test]
    fn parses_kernel_syntax() {
        assert_eq!(cpus("0-3,6"), vec![0, 1, 2, 3, 6]);
        assert_eq!(cpus("5"), vec![5]);
        assert_eq!(cpus(" 1 , 0 "), vec![0, 1]);
        assert_eq!(cpus("0-8:4"), vec![0, 4, 8]);
        assert_eq!(cpus("2,2,1-2"), vec![1, 2]);
    }

    #[test]
    fn rejects_bad_lists() {
        for bad in ["", "a", "3-1", "1-", "-1", "0-4:0", "1,,2", "99999", "1.5"] {
            assert!(CpuSet::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(CpuSet::parse("0-3,6,8,9").unwrap().to_string(), "0-3,6,8-9");
    }

    #[test]
    fn reads_online_from_a_fake_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("devices/system/cpu");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("online"), "0-1,4\n").unwrap();
        assert_eq!(
            CpuSet::online(dir.path())
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            vec![0, 1, 4]
        );
    }
}
