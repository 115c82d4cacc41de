//! `warren state show` and `warren state repair`.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use super::ask::confirm;
use super::diagnostics::{Effect, invalid};
use super::exit::Failure;
use super::inputs::{client, load_spec};
use super::result::{CommandError, CommandResult, Success};
use super::runtime::runtime;
use super::streams::ErrorLog;
use crate::apply::repair::{self, PrepareError, RepairError};
use crate::cli::{BrokerArgs, EnvArg};
use crate::plan::spec_name;
use crate::render::state::{render_repair, render_state};
use crate::spec::SpecFile;

/// The flags of `warren state`: its own subcommand.
#[derive(Debug, clap::Args)]
pub struct StateArgs {
    #[command(subcommand)]
    pub action: StateAction,
}

/// `warren state …`.
#[derive(Debug, Subcommand)]
pub enum StateAction {
    /// Print a spec's ownership record: its serial, when it was applied, and the
    /// objects it manages; a damaged record is shown as the broker holds it, with
    /// what is wrong.
    Show(StateShowArgs),
    /// Rewrite a damaged ownership record: keep every object entry that still reads,
    /// drop what another spec's record claims, and, given the spec file, adopt what
    /// the spec declares and finds on the broker. Under the spec's lock.
    Repair(RepairArgs),
}

/// The flags of `warren state show`.
#[derive(Debug, clap::Args)]
// These commands delete nothing, so the AMQP URL of the deletion checks and locks
// means nothing to them: accepted (a profile or `WARREN_AMQP_URL` may set it), not
// shown in `--help`.
#[command(mut_arg("amqp_url", |arg| arg.hide(true)))]
pub struct StateShowArgs {
    /// A spec (a file or a directory), or a spec's name.
    #[arg(value_name = "SPEC_OR_NAME")]
    pub spec: String,
    #[command(flatten)]
    pub env: EnvArg,
    #[command(flatten)]
    pub broker: BrokerArgs,
}

/// The flags of `warren state repair`.
#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// A spec (a file or a directory), or a spec's name.
    #[arg(value_name = "SPEC_OR_NAME")]
    pub spec: String,
    #[command(flatten)]
    pub env: EnvArg,
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Write without asking.
    #[arg(long)]
    pub auto_approve: bool,
}

/// `warren state show|repair`.
pub fn state(args: &StateArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> CommandResult {
    match &args.action {
        StateAction::Show(args) => show(args, stdout),
        StateAction::Repair(args) => repair(args, stdout, stderr),
    }
}

/// A spec when `argument` names a file or a directory of spec files, else `None`
/// (then it is a spec's name); the error of a spec that does not load.
fn spec_file(
    argument: &str,
    env: &EnvArg,
    effect: Effect,
) -> Result<Option<SpecFile>, CommandError> {
    let path = Path::new(argument);
    let directory =
        path.is_dir() && crate::spec::load::spec_files(path).is_ok_and(|files| !files.is_empty());
    if !path.is_file() && !directory {
        return Ok(None);
    }
    load_spec(path, env, effect).map(Some)
}

/// `warren state show SPEC_OR_NAME`.
fn show(args: &StateShowArgs, stdout: &mut dyn Write) -> CommandResult {
    let argument = args.spec.as_str();
    let file = spec_file(argument, &args.env, Effect::Reads)?;
    let name = file
        .as_ref()
        .map_or_else(|| argument.to_string(), spec_name);
    let client = client(&args.broker)?;
    let state = runtime().block_on(repair::show(&client, &name))?;
    let _ = render_state(stdout, &name, &state);
    Ok(Success::Done)
}

/// `warren state repair SPEC_OR_NAME`.
fn repair(args: &RepairArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> CommandResult {
    let argument = args.spec.as_str();
    let file = spec_file(argument, &args.env, Effect::Changes)?;
    let client = client(&args.broker)?;
    let runtime = runtime();
    let wait = std::time::Duration::ZERO;
    let prepared = match &file {
        Some(file) => runtime.block_on(repair::prepare_for_spec(&client, file, wait)),
        None => runtime
            .block_on(repair::prepare(&client, argument, None, wait))
            .map_err(PrepareError::Repair),
    };
    let prepared = match prepared {
        Err(PrepareError::Repair(RepairError::NotDamaged(spec))) => {
            let _ = writeln!(
                stdout,
                "The ownership record of spec `{spec}` reads; nothing to repair."
            );
            return Ok(Success::Done);
        }
        other => other.map_err(|error| match (error, &file) {
            (PrepareError::Invalid(diagnostics), Some(file)) => {
                invalid(file, &diagnostics, Effect::Changes)
            }
            (PrepareError::Invalid(_), None) => CommandError::already_shown(Failure::Error),
            (PrepareError::Repair(error), _) => error.into(),
        })?,
    };
    let _ = render_repair(stdout, &prepared);
    if !args.auto_approve && !confirm(stdout, stderr) {
        runtime.block_on(prepared.cancel());
        return Err(CommandError::cancelled(
            "repair cancelled; nothing was changed",
        ));
    }
    let record = runtime.block_on(prepared.write(&client))?;
    let _ = writeln!(
        stdout,
        "Repaired: record of spec `{}` written with {}, serial {}.",
        record.spec,
        crate::text::count(record.objects.len(), "object"),
        record.serial
    );
    Ok(Success::Done)
}
