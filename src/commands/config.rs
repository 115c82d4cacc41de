//! `warren config`: which profiles file and profile are in use, and every connection
//! setting in force with where it came from. Reads no broker.

use std::io::Write;

use super::inputs::environment;
use super::result::{CommandError, CommandResult, Success};
use crate::cli::{BrokerArgs, TraceFormat};
use crate::render;

/// `warren config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub format: TraceFormat,
}

/// Shows the settings in force; exit 1 when they do not resolve (a bad profiles file,
/// an unknown profile) or a password cannot be read from where the profile says.
pub(super) fn config(args: &ConfigArgs, stdout: &mut dyn Write) -> CommandResult {
    let resolved = crate::config::resolve(&args.broker.given, &environment)?;
    match args.format {
        TraceFormat::Text => render::config::text(stdout, &resolved),
        TraceFormat::Json => render::config::json(stdout, &resolved),
    }
    .map_err(CommandError::unwritten)?;
    match resolved.problems.is_empty() {
        true => Ok(Success::Done),
        false => Err(CommandError::errors(resolved.problems)),
    }
}
