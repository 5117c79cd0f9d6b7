//! latlab: a latency lab for Linux. Measures OS latency with real-time threads, keeps every
//! result in one model (`latlab_core::result::Run`), and exports it. This crate is the command
//! line over the workspace's layers (core ← trace ← analysis ← lab); the binary is a thin
//! shell over it.

pub mod cli;
pub mod table;
