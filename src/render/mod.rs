//! Everything warren prints goes through here.

pub mod diagnostics;
pub mod errors;
pub mod lint;
pub mod plan;
pub mod state;
