//! `warren import`: a spec from a live broker or a definitions file.

use std::io::Write;
use std::path::Path;

use super::{EXIT_OK, ErrorLog, broker_failed, client, fail, runtime};
use crate::cli::BrokerArgs;
use crate::model::version::TargetVersion;

/// `warren import (--from FILE | --url …) -o SPEC`.
#[allow(clippy::too_many_arguments)]
pub fn import(
    from: Option<&Path>,
    connection: &BrokerArgs,
    vhosts: &[String],
    name: &str,
    target: Option<TargetVersion>,
    output: &Path,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let mut options = crate::import::Options {
        name: name.to_string(),
        vhosts: vhosts.to_vec(),
        target,
        ..Default::default()
    };
    let definitions = match from {
        Some(path) => {
            options.source = path.display().to_string();
            let scoped_vhost = match vhosts {
                [one] => Some(one.as_str()),
                _ => None,
            };
            match crate::definitions_file::read(path, scoped_vhost, target) {
                Ok(read) => {
                    for note in &read.notes {
                        let _ = writeln!(stderr, "note: {note}");
                    }
                    read.definitions
                }
                Err(err) => return fail(stderr, &err),
            }
        }
        None => {
            let client = match client(connection) {
                Ok(client) => client,
                Err(err) => return broker_failed(stderr, &err),
            };
            options.source = "a live broker".to_string();
            options.login_user = Some(client.user().to_string());
            match runtime().block_on(client.read_definitions(vhosts)) {
                Ok(definitions) => definitions,
                Err(err) => return broker_failed(stderr, &err),
            }
        }
    };
    let imported = match crate::import::from_definitions(definitions, &options) {
        Ok(imported) => imported,
        Err(err) => return fail(stderr, &err),
    };
    let written = if output == Path::new("-") {
        stdout
            .write_all(imported.yaml.as_bytes())
            .map_err(|e| e.to_string())
    } else {
        crate::definitions_file::write_atomically(output, &imported.yaml).map_err(|e| e.to_string())
    };
    if let Err(err) = written {
        return fail(stderr, &format!("cannot write {}: {err}", output.display()));
    }
    let _ = writeln!(stderr, "note: {} {}", options.source, imported.target);
    for note in &imported.notes.0 {
        let _ = writeln!(stderr, "note: {note}");
    }
    let spec = &imported.spec;
    let consumers: usize = spec
        .vhosts
        .values()
        .flat_map(|v| v.services.values())
        .map(|s| s.consumers.len())
        .sum();
    let written_to = if output == Path::new("-") {
        String::new()
    } else {
        format!("wrote {}: ", output.display())
    };
    let _ = writeln!(
        stderr,
        "{written_to}imported {}, {} with retry ladders, {}",
        crate::text::count(spec.vhosts.len(), "vhost"),
        crate::text::count(consumers, "consumer"),
        crate::text::count(spec.users.len(), "user")
    );
    EXIT_OK
}
