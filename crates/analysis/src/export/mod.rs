//! Writers of results: JSON (schema v1) and plain-text tables.

pub mod columns;
pub mod json;
pub mod rt_tests;
pub mod why;
