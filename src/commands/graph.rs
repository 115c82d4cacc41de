//! `warren graph SPEC`.

use std::io::Write;

use super::diagnostics::{Effect, invalid, say_warnings};
use super::inputs::load_spec;
use super::result::{CommandError, CommandResult, Success};
use super::streams::ErrorLog;
use crate::cli::{GraphFormat, SpecArgs};

/// The flags of `warren graph`.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GraphFormat::Mermaid)]
    pub format: GraphFormat,
    /// Draw only this vhost.
    #[arg(long, value_name = "VHOST")]
    pub vhost: Option<String>,
    /// Draw only this service, with the exchanges and queues it connects to.
    #[arg(long, value_name = "SERVICE")]
    pub service: Option<String>,
}
use crate::render::graph;
use crate::topology;

/// Draws the topology of a spec, or of one vhost or service of it.
pub fn graph(args: &GraphArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> CommandResult {
    let GraphArgs {
        spec: args,
        format,
        vhost,
        service,
    } = args;
    let file = load_spec(&args.spec, &args.env, Effect::Reads)?;
    let (topology, warnings) = topology::of_spec(&file, file.target(args.target_version))
        .map_err(|found| invalid(&file, &found, Effect::Reads))?;
    say_warnings(&file, &warnings, Effect::Reads, stderr);
    let topology = topology.filter(vhost.as_deref(), service.as_deref())?;
    let text = match format {
        GraphFormat::Mermaid => graph::mermaid(&topology, None),
        GraphFormat::Dot => graph::dot(&topology),
    };
    stdout
        .write_all(text.as_bytes())
        .map_err(CommandError::unwritten)?;
    Ok(Success::Done)
}
