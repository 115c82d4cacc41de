//! `warren graph SPEC`.

use std::io::Write;

use super::{EXIT_ERROR, EXIT_OK, Effect, ErrorLog, fail, load_spec, report};
use crate::cli::{GraphFormat, SpecArgs};
use crate::render::graph;
use crate::topology;

/// Draws the topology of a spec, or of one vhost or service of it.
pub fn graph(
    args: &SpecArgs,
    format: GraphFormat,
    vhost: Option<&str>,
    service: Option<&str>,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let Some(file) = load_spec(&args.spec, &args.env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    let topology = match topology::of_spec(&file, args.target_version) {
        Ok((topology, warnings)) => {
            report(&file, &warnings, Effect::Reads, stderr);
            topology
        }
        Err(found) => {
            report(&file, &found, Effect::Reads, stderr);
            return EXIT_ERROR;
        }
    };
    let topology = match topology.filter(vhost, service) {
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
