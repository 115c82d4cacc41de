//! warren: RabbitMQ topology as code.
//!
//! The data flows one way, each stage a plain function:
//!
//! ```text
//! warren.yaml ──spec::load──► SpecFile (typed spec + source positions)
//!             ──compile────► Compiled { definitions, origins, contract, warnings }
//!             ──export─────► definitions.json for a broker's boot or import
//! ```
//!
//! `spec` knows YAML, `compile` knows RabbitMQ's semantics, `model` is the one
//! definitions type for desired and live state, `render` is the only code that formats
//! output, and `commands` turns flags into calls.

pub mod apply;
pub mod broker;
pub mod cli;
pub mod commands;
pub mod compile;
pub mod definitions_file;
pub mod diff;
pub mod import;
pub mod lint;
pub mod model;
pub mod plan;
pub mod render;
pub mod schema;
pub mod spec;
pub mod suggest;
