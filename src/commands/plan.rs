//! `warren plan`, `warren apply` and `warren diff`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use super::{
    EXIT_CHANGES, EXIT_ERROR, EXIT_OK, Effect, ErrorLog, broker_failed, client, exit, fail,
    fail_with, load_spec, read_definitions, report, runtime,
};
use crate::apply;
use crate::broker::Client;
use crate::cli::{BrokerArgs, ColorWhen, EnvArg, Format, PlanArgs};
use crate::compile::secrets::MissingPassword;
use crate::plan::{self, PLAN_FORMAT, Plan, PlanError, Planned};
use crate::render::markdown::render_markdown;
use crate::render::plan::{Applied, Style, apply_document, redacted_json, render_text};
use crate::render::progress::ApplyProgress;
use crate::spec::SpecFile;
use crate::spec::environment::Choice;

/// How a plan command prints: the format, and whether its text has colors.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// `--format`.
    pub format: Format,
    /// `--color`.
    pub color: ColorWhen,
}

impl Output {
    /// The style of text on stdout.
    fn style(self) -> Style {
        Style::new(super::colors(self.color, &std::io::stdout()))
    }
}

fn print_plan(plan: &Plan, output: Output, stdout: &mut dyn Write) -> std::io::Result<()> {
    match output.format {
        Format::Text => render_text(stdout, plan, output.style()),
        Format::Json => writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&redacted_json(plan)).expect("JSON")
        ),
        Format::Markdown => render_markdown(stdout, plan),
    }
}

/// Prints a planning result's diagnostics; the plan, or the exit code of the error.
fn reported(
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

/// Loads a spec and plans it against the broker, printing diagnostics; the exit code
/// after an error.
fn plan_spec(
    runtime: &tokio::runtime::Runtime,
    client: &Client,
    spec: &Path,
    args: &PlanArgs,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Result<Plan, u8> {
    let file = Arc::new(load_spec(spec, &args.env, effect, stderr).ok_or(EXIT_ERROR)?);
    // `plan` shows what it can without the applications' passwords; `apply` needs
    // them.
    let missing = match effect {
        Effect::Changes => MissingPassword::Error,
        Effect::Reads | Effect::Writes => MissingPassword::Unknown,
    };
    let made = runtime.block_on(plan::against_broker(
        client,
        Arc::clone(&file),
        args.target_version,
        args.prune_unmanaged,
        missing,
    ));
    reported(&file, made, effect, stderr)
}

/// The exit code of `plan` and `diff`: a plan `apply` would refuse is a refusal; with
/// `--detailed-exitcode`, changes are [`EXIT_CHANGES`].
fn exit_for_plan(plan: &Plan, detailed_exitcode: bool) -> u8 {
    if plan.refusal().is_some() {
        exit::REFUSED
    } else if detailed_exitcode && plan.has_changes() {
        EXIT_CHANGES
    } else {
        EXIT_OK
    }
}

/// `warren plan SPEC`.
#[allow(clippy::too_many_arguments)]
pub fn plan(
    spec: &Path,
    connection: &BrokerArgs,
    args: &PlanArgs,
    output: Option<&Path>,
    detailed_exitcode: bool,
    color: ColorWhen,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let client = match client(connection) {
        Ok(client) => client,
        Err(err) => return broker_failed(stderr, &err),
    };
    let plan = match plan_spec(&runtime(), &client, spec, args, Effect::Reads, stderr) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    let shown = Output {
        format: args.format,
        color,
    };
    // For benchmarks (bench/run): how many HTTP requests the plan made.
    if std::env::var_os("WARREN_REQUEST_COUNT").is_some_and(|v| v == "1") {
        let _ = writeln!(stderr, "requests: {}", client.request_count());
    }
    if print_plan(&plan, shown, stdout).is_err() {
        return EXIT_ERROR;
    }
    if let Some(output) = output {
        let text = serde_json::to_string_pretty(&plan).expect("JSON") + "\n";
        if let Err(err) = crate::definitions_file::write_atomically(output, &text) {
            return fail(stderr, &format!("cannot write {}: {err}", output.display()));
        }
        let _ = writeln!(
            stderr,
            "saved the plan to {} (apply it with `warren apply {}`)",
            output.display(),
            output.display()
        );
    }
    exit_for_plan(&plan, detailed_exitcode)
}

/// Reads a plan file, or `None` when the file is not a plan (then it is a spec; a
/// directory is a spec in several files). A file that looks like a plan (`.json`, or
/// text that starts with `{`) but does not read as one is a damaged plan, never a spec.
fn read_plan_file(path: &Path) -> Result<Option<Plan>, String> {
    if path.is_dir() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let looks_like_json = text.trim_start().starts_with('{')
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let damaged = |why: String| {
        format!(
            "{} is a damaged plan file ({why}); make a new plan with `warren plan SPEC -o FILE`",
            path.display()
        )
    };
    let value = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value) => value,
        Err(err) if looks_like_json => return Err(damaged(err.to_string())),
        Err(_) => return Ok(None),
    };
    match value["format"].as_str() {
        Some(PLAN_FORMAT) => {}
        Some(other) if other.starts_with("warren-plan/") => {
            return Err(format!(
                "{} is a `{other}` plan, which this warren does not apply (it reads `{PLAN_FORMAT}`); make the plan again with `warren plan SPEC -o FILE`",
                path.display()
            ));
        }
        _ => {
            return Err(format!(
                "{} is JSON but not a warren plan (expected \"format\": \"{PLAN_FORMAT}\")",
                path.display()
            ));
        }
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|err| damaged(err.to_string()))
}

/// How `warren apply` runs.
pub struct ApplyFlags {
    /// Apply without asking.
    pub auto_approve: bool,
    /// Accept deleting or replacing queues that hold messages.
    pub allow_data_loss: bool,
    /// Replace queues blue/green (`--migrate`).
    pub migrate: bool,
    /// How long to wait for other applies' locks.
    pub lock_timeout: std::time::Duration,
}

/// `warren apply PLAN|SPEC`. With `--format json`, stdout gets one document at the end:
/// the plan and what was applied, or why not.
pub fn apply(
    target: &Path,
    connection: &BrokerArgs,
    args: &PlanArgs,
    flags: &ApplyFlags,
    color: ColorWhen,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let output = Output {
        format: args.format,
        color,
    };
    let mut run = ApplyRun {
        output,
        shown: None,
        applied: None,
    };
    let code = run.apply(target, connection, args, flags, stdout, stderr);
    if output.format == Format::Json {
        let error = (code != EXIT_OK).then(|| {
            let said = stderr.errors();
            crate::render::errors::error_value(
                code,
                exit::class(code),
                &said.messages,
                &said.diagnostics,
            )
        });
        let document = apply_document(run.shown.as_ref(), run.applied.as_ref(), error);
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&document).expect("JSON")
        );
    }
    code
}

/// One `warren apply`: the plan it showed and what it applied, for its JSON document.
struct ApplyRun {
    output: Output,
    shown: Option<Plan>,
    applied: Option<Applied>,
}

impl ApplyRun {
    /// Shows the plan: as text on stdout, or, under `--format json`, kept for the
    /// document (and shown as text on stderr when a person is asked to confirm it).
    fn show(
        &mut self,
        plan: &Plan,
        asks: bool,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> bool {
        self.shown = Some(plan.clone());
        match self.output.format {
            Format::Json => {
                if asks {
                    let style = Style::new(super::colors(self.output.color, &std::io::stderr()));
                    let _ = render_text(stderr, plan, style);
                }
                true
            }
            _ => print_plan(plan, self.output, stdout).is_ok(),
        }
    }

    fn apply(
        &mut self,
        target: &Path,
        connection: &BrokerArgs,
        args: &PlanArgs,
        flags: &ApplyFlags,
        stdout: &mut dyn Write,
        stderr: &mut dyn ErrorLog,
    ) -> u8 {
        let saved = match read_plan_file(target) {
            Ok(saved) => saved,
            Err(err) => return fail(stderr, &err),
        };
        // A saved plan is for the environment it was made for; an `--env` that names
        // another one is a mistake worth stopping for (a staging plan applied to prod).
        let choice = super::chosen(&args.env);
        let wrong = match (&saved, choice.as_choice()) {
            (Some(plan), Choice::Flag(chosen)) => {
                (plan.environment.as_deref() != Some(chosen)).then_some(chosen)
            }
            (Some(plan), Choice::Variable(chosen)) => plan
                .environment
                .as_deref()
                .is_some_and(|made_for| made_for != chosen)
                .then_some(chosen),
            _ => None,
        };
        if let (Some(plan), Some(chosen)) = (&saved, wrong) {
            let made_for = match &plan.environment {
                Some(environment) => format!("environment `{environment}`"),
                None => "a spec without environments".to_string(),
            };
            return fail(
                stderr,
                &format!(
                    "{} was made for {made_for}, not for environment `{chosen}` (--env or WARREN_ENV); nothing was changed",
                    target.display()
                ),
            );
        }
        let client = match client(connection) {
            Ok(client) => client,
            Err(err) => return broker_failed(stderr, &err),
        };
        let runtime = runtime();
        // From here on a signal stops the apply cleanly: before it starts (nothing is
        // changed), or at its next safe point.
        let interrupt = stop_on_signals(&runtime);
        let options = apply::Options {
            allow_data_loss: flags.allow_data_loss,
            interrupt,
            lock_wait: flags.lock_timeout,
            migrate: flags.migrate,
        };
        // Progress goes to stderr (stdout may be JSON): a bar on a terminal, plain lines
        // in a log. It is finished before the apply's summary is printed.
        let mut shown = ApplyProgress::on_stderr();
        // Under JSON, the confirmation question goes to stderr: stdout holds one document.
        let json = self.output.format == Format::Json;
        let (plan, result) = match saved {
            Some(plan) => {
                self.shown = Some(plan.clone());
                if !plan.has_changes() {
                    if !json {
                        let _ = writeln!(stdout, "Nothing to apply.");
                    }
                    self.applied = Some(Applied::default());
                    return EXIT_OK;
                }
                let result = runtime.block_on(apply::apply(&client, &plan, &options, &mut |e| {
                    shown.event(e)
                }));
                shown.finish();
                (plan, result)
            }
            None => {
                // Plan, then take the locks that plan needs and plan again under them:
                // what is shown and confirmed is what nobody else can change until it
                // is applied.
                let planned =
                    match plan_spec(&runtime, &client, target, args, Effect::Changes, stderr) {
                        Ok(plan) => plan,
                        Err(code) => return code,
                    };
                let locked = if planned.refusal().is_none() && planned.has_changes() {
                    match runtime.block_on(apply::lock_and_replan(
                        &client,
                        &planned,
                        flags.lock_timeout,
                    )) {
                        Ok(locked) => Some(locked),
                        Err(error) => {
                            self.show(&planned, false, stdout, stderr);
                            return fail_with(
                                stderr,
                                exit::of_apply(&error),
                                &format!("{error}; nothing was changed"),
                            );
                        }
                    }
                } else {
                    None
                };
                let plan = locked.as_ref().map_or(&planned, |l| &l.plan);
                let asks = plan.refusal().is_none() && plan.has_changes() && !flags.auto_approve;
                if !self.show(plan, asks, stdout, stderr) {
                    return EXIT_ERROR;
                }
                let declined = if !plan.conflicts.is_empty() {
                    Some((
                        exit::REFUSED,
                        "the plan takes over objects another spec manages; nothing was applied",
                    ))
                } else if plan.refusal().is_some() {
                    Some((
                        exit::REFUSED,
                        "the plan's generated policies would apply to queues that are not the spec's (see above); nothing was applied",
                    ))
                } else if !plan.has_changes() {
                    None
                } else if !flags.auto_approve && !ask((!json).then_some(&mut *stdout), stderr) {
                    Some((EXIT_ERROR, "apply cancelled; nothing was changed"))
                } else {
                    let locked = locked.expect("a plan with changes was made under its locks");
                    let plan = locked.plan.clone();
                    let result = runtime.block_on(apply::apply_locked_plan(
                        &client,
                        locked,
                        &options,
                        &mut |e| shown.event(e),
                    ));
                    shown.finish();
                    return self.report(&client, &plan, result, stdout, stderr);
                };
                if let Some(locked) = locked {
                    runtime.block_on(locked.release());
                }
                return match declined {
                    Some((code, why)) => fail_with(stderr, code, why),
                    None => {
                        self.applied = Some(Applied::default());
                        EXIT_OK
                    }
                };
            }
        };
        self.report(&client, &plan, result, stdout, stderr)
    }

    /// Prints what an apply did, or why it did not; the exit code.
    fn report(
        &mut self,
        client: &Client,
        plan: &Plan,
        result: Result<apply::ApplyReport, apply::ApplyError>,
        stdout: &mut dyn Write,
        stderr: &mut dyn ErrorLog,
    ) -> u8 {
        match result {
            Ok(report) => {
                let applied = Applied {
                    done: report.done.clone(),
                    adopted: plan.adopted.len(),
                    requests: client.request_count(),
                    ..Applied::default()
                };
                if self.output.format != Format::Json {
                    let adopted = if plan.adopted.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", {} adopted",
                            crate::text::count(plan.adopted.len(), "existing object")
                        )
                    };
                    let _ = writeln!(
                        stdout,
                        "Applied: {} to spec `{}`{adopted} ({}).",
                        crate::text::count(report.done.len(), "change"),
                        plan.spec,
                        crate::text::count(client.request_count(), "request")
                    );
                }
                self.applied = Some(applied);
                EXIT_OK
            }
            Err(error) => {
                let code = exit::of_apply(&error);
                match error.report() {
                    Some(report) => {
                        fail_with(stderr, code, &error.to_string());
                        let _ = writeln!(
                            stderr,
                            "{} made, {}{} not; run `warren plan` and `warren apply` again to finish",
                            was_were(report.done.len(), "change", "was", "were"),
                            if report.unconfirmed.is_empty() {
                                String::new()
                            } else {
                                format!(
                                    "{} sent but not confirmed (the broker may have made {}), ",
                                    was_were(report.unconfirmed.len(), "change", "was", "were"),
                                    if report.unconfirmed.len() == 1 {
                                        "it"
                                    } else {
                                        "them"
                                    }
                                )
                            },
                            was_were(report.not_done.len(), "change", "was", "were")
                        );
                        for item in report.unconfirmed.iter().take(20) {
                            let _ = writeln!(stderr, "  not confirmed: {item}");
                        }
                        for item in report.not_done.iter().take(20) {
                            let _ = writeln!(stderr, "  not done: {item}");
                        }
                        if report.not_done.len() > 20 {
                            let _ = writeln!(stderr, "  … and {} more", report.not_done.len() - 20);
                        }
                        self.applied = Some(Applied {
                            done: report.done.clone(),
                            unconfirmed: report.unconfirmed.clone(),
                            not_done: report.not_done.clone(),
                            adopted: 0,
                            requests: client.request_count(),
                        });
                    }
                    None => {
                        fail_with(stderr, code, &format!("{error}; nothing was changed"));
                    }
                }
                code
            }
        }
    }
}
/// A flag set by SIGINT or SIGTERM: the apply stops at its next safe point, releases
/// its lock and reports what it did.
pub(super) fn stop_on_signals(runtime: &tokio::runtime::Runtime) -> apply::Interrupt {
    let interrupt = apply::Interrupt::default();
    let flag = interrupt.clone();
    runtime.spawn(async move {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate => {}
        }
        // Nothing is printed here: the command holds stderr, and a runtime worker must
        // never block on it. The apply reports the stop when it reaches a safe point.
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    interrupt
}

/// Asks on the terminal; anything but "yes" declines.
pub(super) fn confirm(stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> bool {
    ask(Some(stdout), stderr)
}

/// Asks whether to apply, on `question`, or on stderr when `None` (stdout holds a JSON
/// document); anything but "yes" declines.
fn ask(question: Option<&mut dyn Write>, stderr: &mut dyn ErrorLog) -> bool {
    ask_yes(
        "Apply these changes?",
        "review the plan and pass --auto-approve, or apply a saved plan file",
        question,
        stderr,
    )
}

/// Asks `question` on the terminal, written to `out`, or to stderr when `None`;
/// without a terminal, fails with `without_terminal` (what to do instead). Anything but
/// "yes" declines.
pub(super) fn ask_yes(
    question: &str,
    without_terminal: &str,
    out: Option<&mut dyn Write>,
    stderr: &mut dyn ErrorLog,
) -> bool {
    if !std::io::stdin().is_terminal() {
        fail(
            stderr,
            &format!("no terminal to confirm on: {without_terminal}"),
        );
        return false;
    }
    let text = format!("\n{question} Only `yes` is accepted: ");
    match out {
        Some(out) => {
            let _ = write!(out, "{text}");
            let _ = out.flush();
        }
        None => {
            let _ = write!(stderr, "{text}");
            let _ = stderr.flush();
        }
    }
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer.trim() == "yes"
}

/// `warren diff SPEC --against FILE`.
#[allow(clippy::too_many_arguments)]
pub fn diff(
    spec: &Path,
    against: &Path,
    vhost: Option<&str>,
    args: &PlanArgs,
    detailed_exitcode: bool,
    color: ColorWhen,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let read = match read_definitions(against, vhost, args.target_version, stderr) {
        Ok(read) => read,
        Err(err) => return fail(stderr, &err),
    };
    let Some(file) = load_spec(spec, &args.env, Effect::Reads, stderr) else {
        return EXIT_ERROR;
    };
    let made = plan::against_definitions(
        &file,
        &read.definitions,
        read.target.target,
        args.prune_unmanaged,
    );
    let plan = match reported(&file, made, Effect::Reads, stderr) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    let output = Output {
        format: args.format,
        color,
    };
    if print_plan(&plan, output, stdout).is_err() {
        return EXIT_ERROR;
    }
    exit_for_plan(&plan, detailed_exitcode)
}

/// `warren unlock SPEC --holder HOLDER`.
pub fn unlock(
    spec: &Path,
    env: &EnvArg,
    connection: &BrokerArgs,
    holder: &str,
    stdout: &mut dyn Write,
    stderr: &mut dyn ErrorLog,
) -> u8 {
    let Some(file) = load_spec(spec, env, Effect::Changes, stderr) else {
        return EXIT_ERROR;
    };
    let client = match client(connection) {
        Ok(client) => client,
        Err(err) => return broker_failed(stderr, &err),
    };
    let name = plan::spec_name(&file);
    match runtime().block_on(apply::unlock(&client, &name, holder)) {
        Ok(apply::Unlocked::NotLocked) => {
            let _ = writeln!(stdout, "Spec `{name}` is not locked; nothing to do.");
            EXIT_OK
        }
        Ok(apply::Unlocked::Removed(holder)) => {
            let _ = writeln!(
                stdout,
                "Unlocked spec `{name}`: closed the lock connection of {holder}; every lock it held is free."
            );
            EXIT_OK
        }
        Err(apply::UnlockError::Broker(err)) => broker_failed(stderr, &err),
        Err(err) => fail_with(stderr, exit::REFUSED, &err.to_string()),
    }
}

/// `1 change was`, `3 changes were`.
fn was_were(n: usize, noun: &str, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        crate::text::count(n, noun),
        if n == 1 { one } else { many }
    )
}
