//! `warren status SPEC`.

use std::io::Write;
use std::path::PathBuf;

use super::diagnostics::{Effect, invalid};
use super::inputs::{client, load_spec};
use super::result::{CommandError, CommandResult, Success};
use super::runtime::{runtime, say_request_count};
use super::streams::ErrorLog;
use crate::cli::{BrokerArgs, EnvArg, StatusFormat, parse_target};
use crate::model::TargetVersion;
use crate::render::status;
use crate::status::{Filter, StatusError, against_broker};

/// The flags of `warren status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub env: EnvArg,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StatusFormat::Text)]
    pub format: StatusFormat,
    /// Report only this vhost.
    #[arg(long, value_name = "VHOST")]
    pub vhost: Option<String>,
    /// Report only this service.
    #[arg(long, value_name = "SERVICE")]
    pub service: Option<String>,
    /// RabbitMQ version to compile the spec for (default: the broker's own version).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, value_parser = parse_target)]
    pub target_version: Option<TargetVersion>,
    /// Also read up to N messages at the head of each delay queue (over AMQP, each
    /// given back at once) and report messages rejected more often than their
    /// consumer's ladder allows: a consumer not following its retry contract.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "100", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub inspect: Option<u32>,
}

/// Reports the spec's consumers on the broker. A report is a success whatever
/// problems it lists: it is read by people and by monitoring, which judge them.
pub fn status(
    args: &StatusArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let file = load_spec(&args.spec, &args.env, Effect::Reads)?;
    let client = client(&args.broker)?;
    let filter = Filter {
        vhost: args.vhost.as_deref(),
        service: args.service.as_deref(),
    };
    let made = runtime().block_on(against_broker(
        &client,
        &file,
        args.target_version,
        filter,
        args.inspect.map(|n| n as usize),
    ));
    say_request_count(&client, stderr);
    let report_made = made.map_err(|error| match error {
        StatusError::Invalid(diagnostics) => invalid(&file, &diagnostics, Effect::Reads),
        StatusError::Filter(message) => CommandError::error(message),
        StatusError::Broker(error) => error.into(),
    })?;
    match args.format {
        StatusFormat::Text => status::text(stdout, &report_made),
        StatusFormat::Json => status::json(stdout, &report_made),
        StatusFormat::Prometheus => status::prometheus(stdout, &report_made),
    }
    .map_err(CommandError::unwritten)?;
    Ok(Success::Done)
}
