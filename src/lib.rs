//! warren: RabbitMQ topology as code.
//!
//! The data flows one way, each stage a plain function; only `broker` touches the
//! network and only `compile::secrets` the environment:
//!
//! ```text
//! warren.yaml ──spec::load──► SpecFile (typed spec + source positions)
//!             ──compile::secrets::read──► passwords and env values
//!             ──compile────► Compiled { definitions, origins, contract, warnings }
//!             ──definitions_file──► definitions.json for a broker's boot or import
//! broker ─────broker::read_live──► live Definitions
//! desired × live × ownership records ──plan::build (diff)──► Plan ──apply──► broker
//! ```
//!
//! The layers, from the bottom: `model` (the leaf: the RabbitMQ vocabulary, object
//! identity, the normal form, policy and pattern rules, passwords, redaction, versions,
//! the ownership record's format); `spec`, `broker` and `definitions_file`; `compile`;
//! `diff`, `lint`, `import`, `trace` and `status`; `plan`; `apply` and `topology`;
//! `render` (the only code that formats output); `cli` and `commands` (flags in, one
//! library call, output out). A module uses only modules below it:
//! docs/architecture.md is the map, and a test keeps it true.

pub mod apply;
pub mod broker;
pub mod cli;
pub mod commands;
pub mod compile;
pub mod config;
pub mod definitions_file;
pub mod diff;
pub mod import;
pub mod k8s;
pub mod lint;
pub mod model;
pub mod plan;
pub mod render;
pub mod replay;
pub mod schema;
pub mod spec;
pub mod status;
pub mod suggest;
pub mod text;
pub mod topology;
pub mod trace;
pub mod upgrade;
