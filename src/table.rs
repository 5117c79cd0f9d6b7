//! Lookups in the table of measurements (`latlab_lab::measure::TABLE`: one row per measurement,
//! declared beside the measurements' folders) and the list of every feature's restorer: what
//! dispatch, the plan checker, the store's kinds, completions, man pages, `latlab help` and
//! `latlab restore` read. Adding a measurement is its folder plus one row there.

pub use latlab_lab::driver::entry::Entry;
pub use latlab_lab::measure::TABLE;

/// Every feature's durable state and how to put it back, in the order `latlab restore` runs
/// them: tracing first (it needs no lock; journaled instances, then orphans no journal names), then SysV sets, then the journaled settings. A new
/// feature with state that can outlive a killed latlab adds its restorer here.
pub static RESTORERS: &[latlab_core::io::Restorer] = &[
    latlab_trace::tracefs::RESTORER,
    latlab_trace::orphans::RESTORER,
    latlab_trace::bpf::RESTORER,
    latlab_core::sys::sysvsem::RESTORER,
    latlab_lab::settings::RESTORER,
];

/// The entry named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.name == name)
}

/// The names a plan may run, in table order.
pub fn plannable() -> Vec<&'static str> {
    TABLE
        .iter()
        .filter(|e| e.plannable)
        .map(|e| e.name)
        .collect()
}

/// The facts of runs of `kind` (a stored kind, or a measurement's name): those its
/// measurement declares, else (an imported run of another tool) a plain latency's.
pub fn facts(kind: &str) -> latlab_core::result::kind::Facts {
    TABLE
        .iter()
        .find(|e| e.kind == kind || e.name == kind)
        .map_or(latlab_core::result::kind::Facts::LATENCY, |e| e.facts)
}

/// The kinds measurements store their runs as, in table order.
pub fn kinds() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for e in TABLE {
        if !v.contains(&e.kind) {
            v.push(e.kind);
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_kinds_are_unique_and_every_command_builds() {
        let mut names: Vec<_> = TABLE.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
        for e in TABLE {
            e.command().debug_assert();
            assert!(
                !e.about.ends_with('.'),
                "{}: clap strips the full stop",
                e.name
            );
        }
        assert!(plannable().contains(&"cyclic"));
        assert!(!plannable().contains(&"monitor"));
        assert!(kinds().contains(&"monitor"));
    }
}
