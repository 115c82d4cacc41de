//! `warren import`: a spec from a live broker or a definitions file.

use std::io::Write;
use std::path::Path;

use super::{EXIT_OK, client, fail, runtime};
use crate::cli::BrokerArgs;

/// `warren import (--from FILE | --url …) -o SPEC`.
pub fn import(
    from: Option<&Path>,
    connection: &BrokerArgs,
    vhosts: &[String],
    name: &str,
    output: &Path,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> u8 {
    let mut notes = crate::import::Notes::default();
    let (definitions, source) = match from {
        Some(path) => match crate::definitions_file::read(path) {
            Ok(definitions) => (definitions, path.display().to_string()),
            Err(err) => return fail(stderr, &err),
        },
        None => {
            let client = match client(connection) {
                Ok(client) => client,
                Err(err) => return fail(stderr, &err.to_string()),
            };
            match runtime().block_on(client.read_definitions(vhosts)) {
                Ok(mut definitions) => {
                    crate::import::leave_out_login_user(
                        &mut definitions,
                        client.user(),
                        &mut notes,
                    );
                    (definitions, "a live broker".to_string())
                }
                Err(err) => return fail(stderr, &err.to_string()),
            }
        }
    };
    let spec = crate::import::import(&definitions, name, vhosts, &mut notes);
    let text = crate::import::to_yaml(&spec, &source);
    let target = crate::import::target_for(&definitions);
    if let Err(problem) = crate::import::check(&text, target) {
        return fail(
            stderr,
            &format!(
                "{source} cannot be imported as a spec warren accepts (for RabbitMQ {target}): {problem}; nothing was written"
            ),
        );
    }
    let written = if output == Path::new("-") {
        stdout.write_all(text.as_bytes()).map_err(|e| e.to_string())
    } else {
        crate::definitions_file::write_atomically(output, &text).map_err(|e| e.to_string())
    };
    if let Err(err) = written {
        return fail(stderr, &format!("cannot write {}: {err}", output.display()));
    }
    for note in &notes.0 {
        let _ = writeln!(stderr, "note: {note}");
    }
    let consumers: usize = spec
        .vhosts
        .values()
        .flat_map(|v| v.services.values())
        .map(|s| s.consumers.len())
        .sum();
    let _ = writeln!(
        stderr,
        "imported {} vhosts, {consumers} consumers with retry ladders, {} users",
        spec.vhosts.len(),
        spec.users.len()
    );
    EXIT_OK
}
