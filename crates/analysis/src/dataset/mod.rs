//! What the analysis commands read, in one place: the selectors that name runs (`select`) and
//! the files and stored runs they resolve to, for `compare`, `tail`, `gate` and `report` alike.

pub(crate) mod file;
pub(crate) mod grouping;
pub(crate) mod input;
pub mod select;

pub use input::ReadOpts;
