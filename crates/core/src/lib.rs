//! latlab's ground floor: what every layer above shares — system calls and real-time setup,
//! configuration, statistics, the result model (`result::Run`), samples and the store.

pub mod config;
pub mod error;
pub mod io;
pub mod live;
pub mod output;
pub mod probe;
pub mod result;
pub mod rt;
pub mod samples;
pub mod stats;
pub mod store;
pub mod sys;

pub use error::{Error, Result};
