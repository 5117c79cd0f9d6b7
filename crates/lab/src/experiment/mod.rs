//! Whole experiments: plans (TOML) and the runner that crosses factors, repeats and compares
//! (`latlab run`); the system settings a plan changes are `crate::settings`'.

pub mod bisect;
pub mod dry;
pub mod plan;
pub mod runner;
pub(crate) mod summary;
