//! Whole experiments: plans (TOML) and the runner that crosses factors, repeats and compares
//! (`latlab run`); the system settings a plan changes are `crate::settings`'.

pub mod bisect;
pub mod dry;
mod kexec;
pub mod plan;
pub mod runner;
pub(crate) mod summary;

/// Runs the plan at `path` (with `--set` overrides): in one go, or, a `[kexec]` plan, across
/// this machine's boots (`kexec`); returns the report once it is over (empty while a boot it
/// asked for is under way). The store, `control` and `kinds` are as for `runner::run`.
pub fn run(
    path: &std::path::Path,
    opts: &runner::Options<'_>,
    control: &latlab_core::rt::Control,
    kinds: latlab_core::result::kind::Kinds,
) -> latlab_core::error::Result<String> {
    let plan = plan::Plan::load_with(path, opts.sets)?;
    if plan.kexec.is_some() {
        return kexec::run(path, &plan, opts, control, kinds);
    }
    if opts.resume_or_start {
        return Err(latlab_core::error::Error::Usage(format!(
            "--resume-or-start: {} boots no kernel by kexec ([kexec]); only such a plan is \
             continued across boots, any other runs in one go",
            path.display()
        )));
    }
    runner::run(path, plan, opts, control, kinds)
}
