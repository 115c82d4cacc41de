//! `warren plan` and `warren diff`, and how a plan is printed (`warren apply` and
//! `warren show` print theirs the same way).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::diagnostics::{Effect, report};
use super::inputs::{client, load_spec, read_definitions};
use super::output::{broker_failed, fail};
use super::runtime::{runtime, say_request_count};
use super::streams::{ErrorLog, colors};
use super::{Context, EXIT_CHANGES, EXIT_ERROR, EXIT_OK, exit};
use crate::cli::{BrokerArgs, ColorWhen, Format, PlanOptions};
use crate::compile::secrets::MissingPassword;
use crate::plan::{self, Plan, PlanError, Planned};
use crate::render;
use crate::render::markdown::render_markdown;
use crate::render::plan::{Style, redacted_json, render_text};
use crate::spec::SpecFile;

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
            Format::Json => writeln!(
                stdout,
                "{}",
                serde_json::to_string_pretty(&redacted_json(plan)).expect("JSON")
            ),
            Format::Markdown => render_markdown(stdout, plan),
        }
    }
}

/// Prints a planning result's diagnostics; the plan, or the exit code of the error.
pub(super) fn reported(
    file: &SpecFile,
    made: Result<Planned, PlanError>,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Result<Plan, u8> {
    match made {
        Ok(Planned { plan, warnings }) => {
            report(file, &warnings, effect, stderr);
            Ok(plan)
        }
        Err(PlanError::Invalid(diagnostics)) => {
            report(file, &diagnostics, effect, stderr);
            Err(EXIT_ERROR)
        }
        Err(PlanError::Broker { error, warnings }) => {
            report(file, &warnings, effect, stderr);
            Err(broker_failed(stderr, &error))
        }
    }
}

/// The exit code of `plan` and `diff`: a plan `apply` would refuse is a refusal; with
/// `--detailed-exitcode`, changes are [`EXIT_CHANGES`], and so are effective-policy
/// drift and role hazards: the broker differs from the spec even when warren has
/// nothing to change.
fn exit_for_plan(plan: &Plan, detailed_exitcode: bool) -> u8 {
    if plan.refusal().is_some() {
        exit::REFUSED
    } else if detailed_exitcode && (plan.has_changes() || plan.differs_from_spec()) {
        EXIT_CHANGES
    } else {
        EXIT_OK
    }
}

/// `warren plan SPEC`: plans without the applications' secrets (a password it cannot
/// read is unknown, and the plan says so; `apply` needs them).
pub fn plan(
    args: &PlanArgs,
    context: &Context,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let client = match client(&args.broker) {
        Ok(client) => client,
        Err(err) => return broker_failed(stderr, &err),
    };
    let options = &args.plan;
    let Some(file) = load_spec(&args.spec, &options.env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    let file = Arc::new(file);
    let made = runtime().block_on(plan::against_broker(
        &client,
        Arc::clone(&file),
        options.target_version,
        options.prune_unmanaged,
        MissingPassword::Unknown,
    ));
    let plan = match reported(&file, made, Effect::Reads, stderr) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    say_request_count(&client, stderr);
    if Output::new(options, context).print(&plan, stdout).is_err() {
        return EXIT_ERROR;
    }
    if let Some(output) = &args.output {
        let digest = match plan::file::write(output, &plan) {
            Ok(digest) => digest,
            Err(err) => return fail(stderr, &format!("cannot write {}: {err}", output.display())),
        };
        // The digest goes where the plan is read (a pull request shows the text or the
        // Markdown), so that the apply can be pinned to the plan that was reviewed.
        let _ = match options.format {
            Format::Text => render::apply::saved_digest_text(stdout, output, &digest),
            Format::Markdown => render::apply::saved_digest_markdown(stdout, output, &digest),
            Format::Json => Ok(()),
        };
        let _ = render::apply::saved(stderr, output, &digest);
    }
    exit_for_plan(&plan, args.detailed_exitcode)
}

/// `warren diff SPEC --against FILE`.
pub fn diff(
    args: &DiffArgs,
    context: &Context,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let options = &args.plan;
    let against = &args.against;
    let read = match read_definitions(
        against,
        args.vhost.as_deref(),
        options.target_version,
        stderr,
    ) {
        Ok(read) => read,
        Err(err) => return fail(stderr, &err),
    };
    let Some(file) = load_spec(&args.spec, &options.env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    let made = plan::against_definitions(
        &file,
        &read.definitions,
        read.target.target,
        options.prune_unmanaged,
    );
    let plan = match reported(&file, made, Effect::Reads, stderr) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    if Output::new(options, context).print(&plan, stdout).is_err() {
        return EXIT_ERROR;
    }
    exit_for_plan(&plan, args.detailed_exitcode)
}
