//! latlab's reading half: what reads stored runs and never measures — comparisons and their
//! verdicts, tail bounds, gates, HTML reports, exports and imports of other tools' output.

pub mod compare;
pub mod export;
pub mod gate;
pub mod import;
pub mod report;
pub mod tail;
