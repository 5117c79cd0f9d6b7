//! latlab's lab half: what runs on the machine it measures — the lifecycle every measurement
//! shares (`driver`), loads, system settings, the measurements and the experiments' runner.

pub mod driver;
pub mod experiment;
pub mod loadgen;
pub mod measure;
pub mod settings;
