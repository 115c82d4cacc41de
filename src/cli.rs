//! Command-line interface: clap types only; each command lives in `commands/`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::version::TargetVersion;

/// RabbitMQ topology as code: compile a short YAML spec (services, consumers, retry
/// ladders, users) into broker definitions and policies.
#[derive(Debug, Parser)]
#[command(name = "warren", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse a spec and check it; exit 0 when it compiles, 1 otherwise. Needs no secrets.
    Validate(SpecArgs),
    /// Print the definitions a spec compiles to (JSON), or its consumer contract.
    Compile {
        #[command(flatten)]
        spec: SpecArgs,
        /// Print the consumer contract (what consumers do on failure) instead.
        #[arg(long)]
        contract: bool,
    },
    /// Write a definitions file for a broker to load at boot or import.
    Export {
        #[command(flatten)]
        spec: SpecArgs,
        /// Where to write the file; `-` for standard output.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Print the JSON Schema of the spec format.
    Schema,
}

/// Arguments shared by the commands that read a spec.
#[derive(Debug, clap::Args)]
pub struct SpecArgs {
    /// The spec file.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// RabbitMQ version the output must be valid for.
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", default_value_t = TargetVersion::DEFAULT, value_parser = parse_target)]
    pub target_version: TargetVersion,
}

fn parse_target(text: &str) -> Result<TargetVersion, String> {
    text.parse()
}
