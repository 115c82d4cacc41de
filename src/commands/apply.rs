//! `warren apply PLAN|SPEC`: the flags, the terminal (showing the plan, asking, the
//! progress on stderr) and the rendering of what became of it. The apply itself, of
//! a saved plan or of a spec, is one library call ([`crate::apply::run::run`]).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Context;
use super::ask::ask_to_apply;
use super::diagnostics::{Effect, say_warnings};
use super::exit::{self, Failure};
use super::inputs::{client, environment_choice, load_spec};
use super::output::Reply;
use super::plan::{Output, not_planned};
use super::result::{CommandError, CommandResult, Success};
use super::runtime::{runtime, stop_on_signals};
use super::streams::{ErrorLog, colors};
use crate::apply::run::{self, Confirmation, Conversation, Input, Outcome};
use crate::apply::{self, ApplyReport};
use crate::cli::{BrokerArgs, Format, PlanOptions, parse_wait};
use crate::plan::file::NotRead;
use crate::plan::{self, Plan};
use crate::render;
use crate::render::plan::{Applied, Style, apply_document, render_text};
use crate::render::progress::ApplyProgress;
use crate::spec::SpecFile;
use crate::spec::diagnostic::Diagnostic;

/// The flags of `warren apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// A plan file from `warren plan -o`, or a spec (a file or a directory).
    #[arg(value_name = "PLAN_OR_SPEC")]
    pub target: PathBuf,
    #[command(flatten)]
    pub broker: BrokerArgs,
    #[command(flatten)]
    pub plan: PlanOptions,
    /// Apply without asking (required when there is no terminal to ask on).
    #[arg(long)]
    pub auto_approve: bool,
    /// Accept deleting or replacing queues that hold messages.
    #[arg(long)]
    pub allow_data_loss: bool,
    /// Replace queues blue/green: move their messages to a temporary queue and
    /// back while applications keep publishing (needs the `rabbitmq_shovel`
    /// plugin); also finishes a migration a stopped apply left under way.
    #[arg(long)]
    pub migrate: bool,
    /// How long to wait for locks held by other applies (e.g. `5m`); by default
    /// an apply that finds its spec or a vhost locked stops at once.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_wait)]
    pub lock_timeout: Duration,
    /// Apply the saved plan only if its digest is this one (`sha256:…`, as `warren
    /// plan -o` prints it): the plan that was reviewed, byte for byte. Exit 4 otherwise.
    #[arg(long, value_name = "DIGEST")]
    pub expect_digest: Option<plan::file::PlanDigest>,
}

/// `warren apply PLAN|SPEC`. With `--format json`, stdout gets one document at the end:
/// the plan and what was applied, or why not.
pub fn apply(
    args: &ApplyArgs,
    context: &Context,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> Reply {
    let output = Output::new(&args.plan, context);
    let mut document = Document::default();
    let result = apply_target(args, output, &mut document, stdout, stderr);
    match output.format {
        Format::Json => Reply::documented(result, move |error| {
            apply_document(document.plan.as_ref(), document.applied.as_ref(), error)
        }),
        _ => Reply::from(result),
    }
}

/// What the JSON document of one apply holds: the plan it showed, what it applied.
#[derive(Default)]
struct Document {
    plan: Option<Plan>,
    applied: Option<Applied>,
}

fn apply_target(
    args: &ApplyArgs,
    output: Output,
    document: &mut Document,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> CommandResult {
    let saved = plan::file::read_expecting(&args.target, args.expect_digest.as_ref()).map_err(
        |not_read| match not_read {
            // A file that is not the reviewed plan is refused, as a stale plan is.
            NotRead::NotReviewed(why) => CommandError::refused(why),
            NotRead::Unreadable(why) => CommandError::error(why),
        },
    )?;
    if let Some(plan) = &saved {
        plan::file::check_appliable(plan, &args.target)?;
        let choice = environment_choice(&args.plan.env);
        plan::file::check_environment(plan, &args.target, choice.as_choice())
            .map_err(|wrong| wrong.to_string())?;
    }
    let client = client(&args.broker)?;
    let runtime = runtime();
    // From here on a signal stops the apply cleanly: before it starts (nothing is
    // changed), or at its next safe point.
    let interrupt = stop_on_signals(&runtime);
    // Progress goes to stderr (stdout may be JSON): a bar on a terminal, plain lines
    // in a log, and each signal told as it arrives. It is finished before the apply's
    // summary is printed.
    let mut progress = ApplyProgress::on_stderr(&interrupt);
    let options = apply::Options {
        allow_data_loss: args.allow_data_loss,
        interrupt,
        lock_wait: args.lock_timeout,
        migrate: args.migrate,
    };
    let is_saved = saved.is_some();
    let (input, file) = match saved {
        Some(plan) => (Input::Saved(Box::new(plan)), None),
        None => {
            let file = Arc::new(load_spec(&args.target, &args.plan.env, Effect::Changes)?);
            let input = Input::Spec {
                file: Arc::clone(&file),
                target: args.plan.target_version,
                prune_unmanaged: args.plan.prune_unmanaged,
                auto_approve: args.auto_approve,
            };
            (input, Some(file))
        }
    };
    let mut terminal = Terminal {
        output,
        file: file.as_deref(),
        stdout: &mut *stdout,
        stderr: &mut *stderr,
    };
    let ran = runtime.block_on(run::run(
        &client,
        input,
        &options,
        &mut terminal,
        &mut |event| progress.event(event),
    ));
    progress.finish();
    document.plan = ran.plan;
    let json = output.format == Format::Json;
    let requests = client.request_count();
    match ran.outcome {
        Outcome::Applied(report) => {
            let plan = document.plan.as_ref().expect("an applied plan was shown");
            if !json {
                let _ = render::apply::applied(stdout, plan, &report, requests);
            }
            document.applied = Some(Applied {
                done: report.done,
                adopted: plan.adopted.len(),
                requests,
                ..Applied::default()
            });
            Ok(Success::Done)
        }
        Outcome::NothingToApply => {
            // A spec's plan was shown, and says so; a saved plan's is not.
            if is_saved && !json {
                let _ = render::apply::nothing_to_apply(stdout);
            }
            document.applied = Some(Applied::default());
            Ok(Success::Done)
        }
        Outcome::Declined(why) => Err(why.into()),
        Outcome::Failed(error) => {
            let failure = exit::of_apply(&error);
            Err(match error.report() {
                Some(report) => {
                    document.applied = Some(unfinished(report, requests));
                    CommandError::new(failure, error.to_string())
                        .followed_by(|out| render::apply::unfinished(out, report))
                }
                None => CommandError::new(failure, format!("{error}; nothing was changed")),
            })
        }
        Outcome::NotPlanned(error) => {
            let file = file.expect("only a spec is planned");
            Err(not_planned(&file, error, Effect::Changes, stderr))
        }
        Outcome::NotShown => Err(CommandError::already_shown(Failure::Error)),
    }
}

/// What an apply that stopped part way did, for the JSON document.
fn unfinished(report: &ApplyReport, requests: u64) -> Applied {
    Applied {
        done: report.done.clone(),
        unconfirmed: report.unconfirmed.clone(),
        not_done: report.not_done.clone(),
        adopted: 0,
        requests,
    }
}

/// The terminal of an apply of a spec: the spec's warnings and the plan are shown
/// as `--format` says, and the question is asked where a person reads.
struct Terminal<'t> {
    output: Output,
    file: Option<&'t SpecFile>,
    stdout: &'t mut dyn Write,
    stderr: &'t mut dyn ErrorLog,
}

impl Conversation for Terminal<'_> {
    fn planned(&mut self, warnings: &[Diagnostic]) {
        if let Some(file) = self.file {
            say_warnings(file, warnings, Effect::Changes, self.stderr);
        }
    }

    /// As text on stdout, or, under `--format json`, kept for the document (and shown
    /// as text on stderr when a person is asked to confirm it).
    fn show(&mut self, plan: &Plan, confirming: bool) -> bool {
        match self.output.format {
            Format::Json => {
                if confirming {
                    let style = Style::new(colors(self.output.color, &std::io::stderr()));
                    let _ = render_text(self.stderr, plan, style);
                }
                true
            }
            _ => self.output.print(plan, self.stdout).is_ok(),
        }
    }

    /// Under JSON, the question goes to stderr: stdout holds one document.
    fn confirm(&mut self, _: &Plan) -> Confirmation {
        let json = self.output.format == Format::Json;
        match ask_to_apply((!json).then_some(&mut *self.stdout), self.stderr) {
            true => Confirmation::Approved,
            false => Confirmation::Declined,
        }
    }
}
