//! Everything warren prints goes through here.

pub mod apply;
pub mod attributes;
pub mod diagnostics;
pub mod errors;
pub mod graph;
pub mod k8s;
pub mod lint;
pub mod markdown;
pub mod plan;
pub mod progress;
pub mod replay;
pub mod sections;
pub mod state;
pub mod status;
pub mod stopping;
pub mod trace;
