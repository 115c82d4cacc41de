//! `warren graph SPEC`.

use std::io::Write;

use super::diagnostics::{Effect, report};
use super::inputs::load_spec;
use super::output::fail;
use super::streams::ErrorLog;
use super::{EXIT_ERROR, EXIT_OK};
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
pub fn graph(args: &GraphArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let GraphArgs {
        spec: args,
        format,
        vhost,
        service,
    } = args;
    let Some(file) = load_spec(&args.spec, &args.env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    let topology = match topology::of_spec(&file, file.target(args.target_version)) {
        Ok((topology, warnings)) => {
            report(&file, &warnings, Effect::Reads, stderr);
            topology
        }
        Err(found) => {
            report(&file, &found, Effect::Reads, stderr);
            return EXIT_ERROR;
        }
    };
    let topology = match topology.filter(vhost.as_deref(), service.as_deref()) {
        Ok(topology) => topology,
        Err(err) => return fail(stderr, &err),
    };
    let text = match format {
        GraphFormat::Mermaid => graph::mermaid(&topology, None),
        GraphFormat::Dot => graph::dot(&topology),
    };
    match stdout.write_all(text.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(_) => EXIT_ERROR,
    }
}
