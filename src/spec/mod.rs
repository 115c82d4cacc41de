//! What the user writes: the spec types, their loader, source positions, and the
//! diagnostics that point into them.

pub mod diagnostic;
pub mod duration;
pub mod limits;
pub mod load;
pub mod source_map;
pub mod types;

pub use duration::Duration;
pub use load::{SpecFile, load_file, load_str};
pub use source_map::{Location, SourceMap, SpecPath};
pub use types::*;
