//! latlab: a latency lab for Linux. Measures OS latency with real-time threads, keeps every
//! result in one model (`result::Run`), and exports it. The binary is a thin shell over this.

pub mod cli;
pub mod compare;
pub mod config;
pub mod driver;
pub mod error;
pub mod experiment;
pub mod export;
pub mod gate;
pub mod import;
pub mod io;
pub mod live;
pub mod loadgen;
pub mod measure;
pub mod output;
pub mod probe;
pub mod report;
pub mod result;
pub mod rt;
pub mod samples;
pub mod settings;
pub mod stats;
pub mod store;
pub mod sys;
pub mod table;
pub mod tail;
pub mod trace;

pub use error::{Error, Result};
