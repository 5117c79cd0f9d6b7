//! One module per experiment. Each turns a validated config into a `result::Run`.

pub mod cyclic;
pub mod noise;
