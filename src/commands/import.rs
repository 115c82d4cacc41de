//! `warren import`: a spec from a live broker or a definitions file.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::inputs::client;
use super::result::{CommandResult, Success};
use super::runtime::runtime;
use super::streams::ErrorLog;
use crate::cli::{BrokerArgs, parse_target};
use crate::model::version::TargetVersion;

/// The flags of `warren import`.
#[derive(Debug, clap::Args)]
// These commands delete nothing, so the AMQP URL of the deletion checks and locks
// means nothing to them: accepted (a profile or `WARREN_AMQP_URL` may set it), not
// shown in `--help`.
#[command(mut_arg("amqp_url", |arg| arg.hide(true)))]
pub struct ImportArgs {
    /// Read this definitions file instead of a broker.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Import only these vhosts (repeatable; default: all). A vhost-scoped file
    /// (the format of `GET /api/definitions/{vhost}`) takes one: its vhost.
    #[arg(long = "vhost", value_name = "VHOST")]
    pub vhosts: Vec<String>,
    /// The spec's name (its ownership record on the broker). Objects that other
    /// specs manage are left out; naming one of them imports its objects, to take
    /// that spec over.
    #[arg(long, value_name = "NAME", default_value = "imported")]
    pub name: String,
    /// RabbitMQ version the imported spec is checked for (default: the version
    /// that wrote the file, or the broker's).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, value_parser = parse_target)]
    pub target_version: Option<TargetVersion>,
    /// Where to write the spec; `-` for standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

/// `warren import (--from FILE | --url …) -o SPEC`.
pub fn import(
    args: &ImportArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let ImportArgs {
        from,
        broker: connection,
        vhosts,
        name,
        target_version: target,
        output,
    } = args;
    let target = *target;
    let mut options = crate::import::Options {
        name: name.clone(),
        vhosts: vhosts.clone(),
        target,
        ..Default::default()
    };
    let definitions = match from {
        Some(path) => {
            options.source = path.display().to_string();
            let scoped_vhost = match vhosts.as_slice() {
                [one] => Some(one.as_str()),
                _ => None,
            };
            let read = crate::definitions_file::read(path, scoped_vhost, target)?;
            for note in &read.notes {
                let _ = writeln!(stderr, "note: {note}");
            }
            read.definitions
        }
        None => {
            let client = client(connection)?;
            options.source = "a live broker".to_string();
            options.login_user = Some(client.user().to_string());
            runtime().block_on(client.read_definitions(vhosts))?
        }
    };
    let imported = crate::import::from_definitions(definitions, &options)?;
    if output.as_path() == Path::new("-") {
        stdout.write_all(imported.yaml.as_bytes())
    } else {
        crate::definitions_file::write_atomically(output, &imported.yaml)
    }
    .map_err(|err| format!("cannot write {}: {err}", output.display()))?;
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
    let written_to = if output.as_path() == Path::new("-") {
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
    Ok(Success::Done)
}
