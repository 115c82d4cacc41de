//! `warren plan` and `warren diff`, and how a plan is printed (`warren apply` and
//! `warren show` print theirs the same way).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::Context;
use super::diagnostics::{Effect, invalid, say_warnings};
use super::exit::Failure;
use super::inputs::{client, load_spec, read_definitions};
use super::result::{CommandError, CommandResult, Success};
use super::runtime::{runtime, say_request_count};
use super::streams::{ErrorLog, colors};
use crate::cli::{BrokerArgs, ColorWhen, Format, PlanOptions};
use crate::compile::secrets::MissingPassword;
use crate::plan::{self, Plan, PlanError, Planned};
use crate::render;
use crate::render::markdown::render_markdown;
use crate::render::plan::{Style, redacted_json, render_text};
use crate::spec::SpecFile;
use crate::topology;

/// The flags of `warren plan`.
#[derive(Debug, clap::Args)]
// These commands delete nothing, so the AMQP URL of the deletion checks and locks
// means nothing to them: accepted (a profile or `WARREN_AMQP_URL` may set it), not
// shown in `--help`.
#[command(mut_arg("amqp_url", |arg| arg.hide(true)))]
pub struct PlanArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    #[command(flatten)]
    pub broker: BrokerArgs,
    #[command(flatten)]
    pub plan: PlanOptions,
    /// Save the plan to this file, for `warren apply FILE`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit 2 when the plan has changes, 0 when it has none (Terraform's convention).
    #[arg(long)]
    pub detailed_exitcode: bool,
}

/// The flags of `warren diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The spec: a YAML file, or a directory of YAML files read as one spec.
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// A definitions file (e.g. a broker's export).
    #[arg(long, value_name = "FILE")]
    pub against: PathBuf,
    /// The vhost of a vhost-scoped definitions file (the format of
    /// `GET /api/definitions/{vhost}`, whose objects carry no `vhost`).
    #[arg(long, value_name = "VHOST")]
    pub vhost: Option<String>,
    #[command(flatten)]
    pub plan: PlanOptions,
    /// Exit 2 when the plan has changes, 0 when it has none (Terraform's convention).
    #[arg(long)]
    pub detailed_exitcode: bool,
}

/// How a plan command prints: the format, and whether its text has colors.
#[derive(Debug, Clone, Copy)]
pub(super) struct Output {
    /// `--format`.
    pub format: Format,
    /// `--color`.
    pub color: ColorWhen,
}

impl Output {
    pub(super) fn new(options: &PlanOptions, context: &Context) -> Self {
        Output {
            format: options.format,
            color: context.color,
        }
    }

    /// Prints `plan` on stdout as `--format` says.
    pub(super) fn print(self, plan: &Plan, stdout: &mut dyn Write) -> std::io::Result<()> {
        match self.format {
            Format::Text => {
                let style = Style::new(colors(self.color, &std::io::stdout()));
                render_text(stdout, plan, style)
            }
            Format::Json => render::json_document(stdout, &redacted_json(plan)),
            Format::Markdown => render_markdown(stdout, plan),
        }
    }
}

/// The plan made, its warnings said; or the error of a plan not made.
pub(super) fn planned(
    file: &SpecFile,
    made: Result<Planned, PlanError>,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Result<Plan, CommandError> {
    match made {
        Ok(Planned { plan, warnings }) => {
            say_warnings(file, &warnings, effect, stderr);
            Ok(plan)
        }
        Err(error) => Err(not_planned(file, error, effect, stderr)),
    }
}

/// The error of a plan not made: the spec's errors, or, after its warnings, the
/// broker's.
pub(super) fn not_planned(
    file: &SpecFile,
    error: PlanError,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> CommandError {
    match error {
        PlanError::Invalid(diagnostics) => invalid(file, &diagnostics, effect),
        PlanError::Broker { error, warnings } => {
            say_warnings(file, &warnings, effect, stderr);
            error.into()
        }
    }
}

/// How `plan` and `diff` end: a plan `apply` would refuse is a refusal; with
/// `--detailed-exitcode`, changes are [`Success::Changes`], and so are
/// effective-policy drift and role hazards: the broker differs from the spec even when
/// warren has nothing to change.
fn ending_of_plan(plan: &Plan, detailed_exitcode: bool) -> CommandResult {
    if plan.refusal().is_some() {
        Err(CommandError::already_shown(Failure::Refused))
    } else if detailed_exitcode && (plan.has_changes() || plan.differs_from_spec()) {
        Ok(Success::Changes)
    } else {
        Ok(Success::Done)
    }
}

/// `warren plan SPEC`: plans without the applications' secrets (a password it cannot
/// read is unknown, and the plan says so; `apply` needs them).
pub fn plan(
    args: &PlanArgs,
    context: &Context,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let client = client(&args.broker)?;
    let options = &args.plan;
    let file = Arc::new(load_spec(&args.spec, &options.env, Effect::Reads)?);
    let made = runtime().block_on(plan::against_broker(
        &client,
        Arc::clone(&file),
        options.target_version,
        options.prune_unmanaged,
        MissingPassword::Unknown,
    ));
    let plan = planned(&file, made, Effect::Reads, stderr)?;
    say_request_count(&client, stderr);
    Output::new(options, context)
        .print(&plan, stdout)
        .map_err(CommandError::unwritten)?;
    if let Some(output) = &args.output {
        let saved = topology::as_saved(&plan, render::markdown::PICTURE_NODES);
        let digest = plan::file::write(output, &saved)
            .map_err(|err| format!("cannot write {}: {err}", output.display()))?;
        // The digest goes where the plan is read (a pull request shows the text or the
        // Markdown), so that the apply can be pinned to the plan that was reviewed.
        let _ = match options.format {
            Format::Text => render::apply::saved_digest_text(stdout, output, &digest),
            Format::Markdown => render::apply::saved_digest_markdown(stdout, output, &digest),
            Format::Json => Ok(()),
        };
        let _ = render::apply::saved(stderr, output, &digest);
    }
    ending_of_plan(&plan, args.detailed_exitcode)
}

/// `warren diff SPEC --against FILE`.
pub fn diff(
    args: &DiffArgs,
    context: &Context,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let options = &args.plan;
    let read = read_definitions(
        &args.against,
        args.vhost.as_deref(),
        options.target_version,
        stderr,
    )?;
    let file = load_spec(&args.spec, &options.env, Effect::Reads)?;
    let made = plan::against_definitions(
        &file,
        &read.definitions,
        read.target.target,
        options.prune_unmanaged,
    );
    let plan = planned(&file, made, Effect::Reads, stderr)?;
    Output::new(options, context)
        .print(&plan, stdout)
        .map_err(CommandError::unwritten)?;
    ending_of_plan(&plan, args.detailed_exitcode)
}
