//! Everything warren prints goes through here.

pub mod diagnostics;
