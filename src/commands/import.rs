//! `warren import`: a spec from a live broker or a definitions file.

use std::io::Write;
use std::path::Path;

use super::EXIT_OK;
use super::broker::{endpoint, fail, runtime};
use crate::broker::{BrokerError, Client};
use crate::cli::BrokerArgs;
use crate::model::Definitions;

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
    let (definitions, source) = match from {
        Some(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(err) => return fail(stderr, &format!("cannot read {}: {err}", path.display())),
            };
            match serde_json::from_str::<Definitions>(&text) {
                Ok(definitions) => (definitions, path.display().to_string()),
                Err(err) => {
                    return fail(
                        stderr,
                        &format!(
                            "{} is not a RabbitMQ definitions file: {err}",
                            path.display()
                        ),
                    );
                }
            }
        }
        None => {
            let client = match endpoint(connection)
                .map_err(BrokerError::Setup)
                .and_then(Client::new)
            {
                Ok(client) => client,
                Err(err) => return fail(stderr, &err.to_string()),
            };
            let read = async {
                client.version().await?;
                let all = client.read_live(&[]).await?;
                let wanted: Vec<String> = all
                    .all_vhosts
                    .into_iter()
                    .filter(|v| vhosts.is_empty() || vhosts.contains(v))
                    .collect();
                let mut live = client.read_live(&wanted).await?;
                live.definitions.global_parameters = client.global_parameters().await?;
                Ok::<_, BrokerError>(live.definitions)
            };
            match runtime().block_on(read) {
                Ok(definitions) => (definitions, "a live broker".to_string()),
                Err(err) => return fail(stderr, &err.to_string()),
            }
        }
    };
    let mut notes = crate::import::Notes::default();
    let mut definitions = definitions;
    if from.is_none() {
        // The user warren logs in as is the operator's, not part of the topology.
        let me = endpoint(connection).map(|e| e.user).unwrap_or_default();
        if definitions.users.iter().any(|u| u.name == me) {
            notes.0.push(format!(
                "user `{me}` (the one warren logged in as) is left out"
            ));
            definitions.users.retain(|u| u.name != me);
            definitions.permissions.retain(|p| p.user != me);
            definitions.topic_permissions.retain(|p| p.user != me);
        }
    }
    let spec = crate::import::import(&definitions, name, vhosts, &mut notes);
    let text = crate::import::to_yaml(&spec, &source);
    let written = if output == Path::new("-") {
        stdout.write_all(text.as_bytes()).map_err(|e| e.to_string())
    } else {
        crate::export::write_atomically(output, &text).map_err(|e| e.to_string())
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
