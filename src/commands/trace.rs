//! `warren trace`.

use std::io::Write;
use std::path::PathBuf;

use super::diagnostics::{Effect, invalid};
use super::inputs::load_spec;
use super::result::{CommandError, CommandResult, Success};
use crate::cli::{EnvArg, TraceFormat, parse_target};
use crate::compile::{self, Options};
use crate::model::TargetVersion;
use crate::model::routing::Headers;
use crate::render;
use crate::trace::{self, Request};

/// The flags of `warren trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub env: EnvArg,
    /// The exchange to publish to (`""` for the default exchange).
    #[arg(long, value_name = "EXCHANGE")]
    pub exchange: String,
    /// The message's routing key.
    #[arg(long, value_name = "KEY", default_value = "")]
    pub routing_key: String,
    /// A message header `name=value` (repeatable; values are strings).
    #[arg(long = "headers", value_name = "NAME=VALUE", num_args = 1..)]
    pub headers: Vec<String>,
    /// The vhost (needed when the spec has several).
    #[arg(long, value_name = "VHOST")]
    pub vhost: Option<String>,
    /// How many deliveries each consumer fails before it succeeds.
    #[arg(long = "fail", value_name = "N", default_value_t = 0)]
    pub failures: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
    /// RabbitMQ version whose behaviour is simulated (default: the spec's `rabbitmq`,
    /// else 4.3).
    #[arg(long, value_name = "VERSION", env = "WARREN_TARGET_VERSION", hide_env_values = true, value_parser = parse_target)]
    pub target_version: Option<TargetVersion>,
}

/// `warren trace SPEC --exchange X --routing-key K …`.
pub fn trace(args: &TraceArgs, stdout: &mut dyn Write) -> CommandResult {
    let mut headers = Headers::new();
    for text in &args.headers {
        let (name, value) = trace::parse_header(text)?;
        headers.insert(name, value);
    }
    let file = load_spec(&args.spec, &args.env, Effect::Reads)?;
    // The trace needs no secrets: passwords never route a message.
    let target = file.target(args.target_version);
    let options = Options {
        target,
        secrets: None,
    };
    let compiled =
        compile::compile(&file, &options).map_err(|found| invalid(&file, &found, Effect::Reads))?;
    let request = Request {
        vhost: args.vhost.clone(),
        exchange: args.exchange.clone(),
        routing_key: args.routing_key.clone(),
        headers,
        failures: args.failures,
    };
    let trace = trace::trace(&compiled.definitions, &compiled.contract, target, &request)?;
    match args.format {
        TraceFormat::Text => render::trace::text(stdout, &trace),
        TraceFormat::Json => render::trace::json(stdout, &trace),
    }
    .map_err(CommandError::unwritten)?;
    Ok(Success::Done)
}
