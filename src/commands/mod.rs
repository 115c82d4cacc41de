//! One function per subcommand: flags in, one library call, rendered output and an
//! exit code out. Each command's flags are one `Args` struct in its own file, and the
//! command line below gathers them; the helpers below are the one place that builds a
//! broker client, loads a spec for a command and prints diagnostics.

mod apply;
mod ask;
mod compile;
mod config;
pub mod exit;
mod graph;
mod import;
mod lint;
mod plan;
mod replay;
mod schema;
mod shell;
mod show;
mod state;
mod status;
mod trace;
mod unlock;
mod upgrade_check;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::broker::{BrokerError, Client};
use crate::cli::{BrokerArgs, ColorWhen, EnvArg};
use crate::model::TargetVersion;
use crate::render::diagnostics;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::environment::Choice;
use crate::spec::{self, SpecFile};

pub use exit::{CHANGES as EXIT_CHANGES, ERROR as EXIT_ERROR, OK as EXIT_OK};

/// RabbitMQ topology as code: compile a short YAML spec (services, consumers, retry
/// ladders, users) into broker definitions and policies.
#[derive(Debug, Parser)]
#[command(name = "warren", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// Colors in text output: `auto` colors a terminal unless `NO_COLOR` is set
    /// (`CLICOLOR_FORCE` colors a pipe too).
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
}

/// Subcommands: each takes the `Args` of its file.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a spec: exit 0 when it compiles and passes the lint rules at the `deny` level,
    /// 1 otherwise. Needs no secrets. `warren lint` also shows the warnings.
    Validate(compile::ValidateArgs),
    /// Print the definitions a spec compiles to (JSON), or its consumer contract.
    Compile(compile::CompileArgs),
    /// Write a definitions file for a broker to load at boot or import.
    Export(compile::ExportArgs),
    /// Print the JSON Schema of the spec format.
    Schema,
    /// Show what applying a spec would change on a broker; exit 0 on success (with
    /// --detailed-exitcode: 0 = no changes, 2 = changes), other codes on errors
    /// (docs/exit-codes.md).
    Plan(plan::PlanArgs),
    /// Apply a saved plan, or plan a spec, show it, ask, and apply it.
    Apply(apply::ApplyArgs),
    /// Print a plan saved with `warren plan -o FILE` as `warren plan` printed it (text,
    /// JSON or markdown), without a broker or passwords; exit 1 when the file is not a
    /// plan this warren reads.
    Show(show::ShowArgs),
    /// Check a spec (or a definitions file) for topologies that lose, duplicate or
    /// hot-loop messages; exit 1 on errors (and on warnings with `--deny warnings`).
    Lint(lint::LintArgs),
    /// Write a spec from a live broker (or a definitions file), to adopt an existing
    /// broker: applying it to the same broker plans no changes.
    Import(import::ImportArgs),
    /// List the lint rules, or explain one with a bad and a good example.
    Rules(lint::RulesArgs),
    /// Break the locks of an apply that is stuck (as Terraform's `force-unlock`): the
    /// broker closes its connection, which frees every lock it held. Only when --holder
    /// names the holder the lock error printed. A dead apply's locks are already free.
    Unlock(unlock::UnlockArgs),
    /// Show or repair a spec's ownership record (the list of objects it manages).
    State(state::StateArgs),
    /// Show the plan of a spec against a definitions file instead of a live broker.
    Diff(plan::DiffArgs),
    /// Draw the topology a spec builds: exchanges, queues, bindings with their routing
    /// keys, dead-letter routes with their delays, parking queues; grouped by vhost and
    /// service. Mermaid (for pull requests and docs) or Graphviz DOT (`dot -Tsvg`).
    Graph(graph::GraphArgs),
    /// Report each consumer of a spec on the live broker: its work queue (messages,
    /// consumers, rates), each retry tier's waiting messages, the parking queue and the
    /// age of its oldest message, and what is wrong (docs/operating.md). Exit 0 when it
    /// reports, problems included; 1 on a bad spec or flag; 3 when the broker is
    /// unreachable.
    Status(status::StatusArgs),
    /// Follow one message offline, step by step: the queues that get a copy, and for
    /// each consumer that fails it `--fail` times, every retry tier, wait and return,
    /// then parking or drop (docs/trace.md).
    Trace(trace::TraceArgs),
    /// Send a consumer's parked messages back to its work queue once the fault that
    /// parked them is fixed: oldest first, each original acknowledged once the broker
    /// confirmed its copy, each starting its retry ladder again (docs/operating.md).
    Replay(replay::ReplayArgs),
    /// Check what breaks, changes meaning or needs doing first when a broker (or a
    /// definitions file, or a spec) moves to another RabbitMQ line: the upgrade path,
    /// what the target refuses or ignores, deprecated features in use
    /// (docs/upgrading.md). Exit 0 without errors, 1 with errors (or warnings with
    /// `--deny warnings`), 3 when the broker cannot be reached.
    UpgradeCheck(upgrade_check::UpgradeCheckArgs),
    /// Show the broker settings in force and where each came from (flag, `WARREN_*`
    /// variable, profile, default), the config file read and the profiles it
    /// defines (docs/profiles.md). Never shows a password; contacts no broker.
    Config(config::ConfigArgs),
    /// Print a shell completion script, e.g. `warren completions bash >
    /// /etc/bash_completion.d/warren` (zsh: into a directory of `$fpath` as `_warren`).
    Completions(shell::CompletionsArgs),
    /// Print warren's man page (roff: `warren man | man -l -`), or write one page per
    /// command into a directory (`warren.1`, `warren-plan.1`, …).
    Man(shell::ManArgs),
}

/// What every command may need besides its own flags: the global ones.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context {
    /// `--color`.
    pub color: ColorWhen,
}

/// Parses the command line and runs the command.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            print_usage_error(&err);
            // Usage errors exit 1, not clap's 2: `plan` uses 2 for "changes pending".
            return ExitCode::from(if err.use_stderr() {
                EXIT_ERROR
            } else {
                EXIT_OK
            });
        }
    };
    let stdout = &mut ClosedPipeIsEnd::new(std::io::stdout().lock());
    // Not locked for the whole command, unlike stdout: an apply's progress (the bar's
    // ticker, the plain lines' heartbeat) writes to stderr from a thread of its own,
    // which would wait for the lock forever.
    let stderr = &mut Stderr::new(std::io::stderr());
    let json = cli.command.prints_json();
    let context = Context { color: cli.color };
    let code = match &cli.command {
        Command::Validate(args) => compile::validate(args, stdout, stderr),
        Command::Compile(args) => compile::compile(args, stdout, stderr),
        Command::Export(args) => compile::export(args, stdout, stderr),
        Command::Schema => schema::print(stdout),
        Command::Plan(args) => plan::plan(args, &context, stdout, stderr),
        Command::Apply(args) => apply::apply(args, &context, stdout, stderr),
        Command::Show(args) => show::show(args, &context, stdout, stderr),
        Command::Lint(args) => lint::lint(args, stdout, stderr),
        Command::Import(args) => import::import(args, stdout, stderr),
        Command::Rules(args) => lint::rules(args, stdout, stderr),
        Command::Unlock(args) => unlock::unlock(args, stdout, stderr),
        Command::Diff(args) => plan::diff(args, &context, stdout, stderr),
        Command::Graph(args) => graph::graph(args, stdout, stderr),
        Command::Trace(args) => trace::trace(args, stdout, stderr),
        Command::Replay(args) => replay::replay(args, stdout, stderr),
        Command::Status(args) => status::status(args, stdout, stderr),
        Command::Config(args) => config::config(args, stdout, stderr),
        Command::Completions(args) => shell::completions(args, stdout),
        Command::Man(args) => shell::man(args, stdout, stderr),
        Command::State(args) => state::state(args, stdout, stderr),
        Command::UpgradeCheck(args) => upgrade_check::upgrade_check(args, stdout, stderr),
    };
    // A command whose output is JSON says why it failed in JSON too, when it printed
    // no document of its own (`apply --format json` puts its error in its document).
    if json && code != EXIT_OK && code != EXIT_CHANGES && !stdout.wrote {
        let document = crate::render::errors::error_document(
            code,
            exit::class(code),
            &stderr.said.messages,
            &stderr.said.diagnostics,
        );
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&document).expect("JSON")
        );
    }
    let _ = stdout.flush();
    ExitCode::from(code)
}

/// Prints a command-line error. A missing argument's usage line names only what the
/// command needs: clap also lists there the arguments its environment variables gave
/// (`--url <URL> --user <USER> --password <PASSWORD>` with `WARREN_*` set), which
/// reads as if they were required.
fn print_usage_error(err: &clap::Error) {
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    if err.kind() != ErrorKind::MissingRequiredArgument {
        let _ = err.print();
        return;
    }
    let mut command = Cli::command();
    command.build();
    let words: Vec<String> = std::env::args().skip(1).collect();
    let mut chosen = &mut command;
    for word in &words {
        if chosen.find_subcommand(word).is_none() {
            continue;
        }
        chosen = chosen.find_subcommand_mut(word).expect("found above");
    }
    let usage = chosen.render_usage().to_string();
    let text = err.render().to_string();
    let mut fixed: Vec<&str> = Vec::new();
    for line in text.lines() {
        fixed.push(if line.starts_with("Usage: ") {
            usage.as_str()
        } else {
            line
        });
    }
    eprintln!("{}", fixed.join("\n"));
}

impl Command {
    /// Whether the command was asked for JSON on stdout.
    fn prints_json(&self) -> bool {
        use crate::cli::{Format, LintFormat, StatusFormat, TraceFormat};
        match self {
            Command::Plan(args) => args.plan.format == Format::Json,
            Command::Apply(args) => args.plan.format == Format::Json,
            Command::Diff(args) => args.plan.format == Format::Json,
            Command::Show(args) => args.format == Format::Json,
            Command::Lint(args) => args.format == LintFormat::Json,
            Command::Trace(args) => args.format == TraceFormat::Json,
            Command::Replay(args) => args.format == TraceFormat::Json,
            Command::Status(args) => args.format == StatusFormat::Json,
            Command::UpgradeCheck(args) => args.format == upgrade_check::UpgradeFormat::Json,
            Command::Config(args) => args.format == TraceFormat::Json,
            _ => false,
        }
    }
}

/// Standard error, remembering the errors said on it: a command asked for JSON repeats
/// them in the one JSON document it prints on stdout when it fails.
pub(crate) struct Stderr<W> {
    inner: W,
    said: Said,
}

/// The errors a command said.
#[derive(Debug, Default)]
pub(crate) struct Said {
    /// `error:` lines, without the prefix.
    pub messages: Vec<String>,
    /// Error diagnostics about a file, with the file.
    pub diagnostics: Vec<(PathBuf, Diagnostic)>,
}

impl<W: Write> Stderr<W> {
    fn new(inner: W) -> Self {
        Stderr {
            inner,
            said: Said::default(),
        }
    }
}

/// What the commands write their logs and errors to.
pub(crate) trait ErrorLog: Write {
    /// Remembers an error line (already written).
    fn said(&mut self, message: &str);
    /// Remembers error diagnostics about `file` (already written).
    fn said_diagnostics(&mut self, file: &Path, diagnostics: &[Diagnostic]);
    /// Everything remembered.
    fn errors(&self) -> &Said;
}

impl<W: Write> ErrorLog for Stderr<W> {
    fn said(&mut self, message: &str) {
        self.said.messages.push(message.to_string());
    }

    fn said_diagnostics(&mut self, file: &Path, diagnostics: &[Diagnostic]) {
        self.said.diagnostics.extend(
            diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| (file.to_path_buf(), d.clone())),
        );
    }

    fn errors(&self) -> &Said {
        &self.said
    }
}

impl<W: Write> Write for Stderr<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Standard output whose reader may stop reading early (`warren compile … | head`):
/// a closed pipe is a normal end of the output, as in other command-line tools, not an
/// error. Writes after the reader left are dropped, so the command finishes what it
/// does (an apply is never cut short by its reader) and exits with its own code.
struct ClosedPipeIsEnd<W> {
    inner: W,
    closed: bool,
    /// Whether anything was written (a command's own document, or part of one).
    wrote: bool,
}

impl<W: Write> ClosedPipeIsEnd<W> {
    fn new(inner: W) -> Self {
        ClosedPipeIsEnd {
            inner,
            closed: false,
            wrote: false,
        }
    }

    fn absorb(&mut self, result: std::io::Result<usize>, len: usize) -> std::io::Result<usize> {
        match result {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(len)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for ClosedPipeIsEnd<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.wrote |= !buf.is_empty();
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write(buf);
        self.absorb(result, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

/// The broker client for the connection flags and variables, the profile and the
/// defaults, as [`crate::config::resolve`] weighs them. A profiles file that does not
/// read, an unknown profile or a password its profile cannot give is bad input.
fn client(args: &BrokerArgs) -> Result<Client, BrokerError> {
    let resolved = crate::config::resolve(&args.given, &environment)
        .map_err(|err| BrokerError::Setup(err.into()))?;
    Client::new(resolved.endpoint()?)
}

/// The process's environment, for [`crate::config::resolve`].
fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Whether text written to `stream` gets colors: `--color always|never`, else as
/// `anstream` decides for the stream (a terminal, `NO_COLOR`, `CLICOLOR_FORCE`,
/// `CLICOLOR`, `TERM=dumb`), the conventions other command-line tools follow.
fn colors<S: anstream::stream::RawStream>(when: crate::cli::ColorWhen, stream: &S) -> bool {
    use crate::cli::ColorWhen;
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never,
    }
}

/// The runtime the broker commands run on.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

/// For tests and benchmarks (bench/run), with `WARREN_REQUEST_COUNT=1`: says how many
/// HTTP requests the command made (the one place that reads the variable).
fn say_request_count(client: &Client, stderr: &mut dyn ErrorLog) {
    if std::env::var_os("WARREN_REQUEST_COUNT").is_some_and(|v| v == "1") {
        let _ = writeln!(stderr, "requests: {}", client.request_count());
    }
}

/// The signals SIGINT and SIGTERM, counted: on the first an apply or a replay stops at
/// its next safe point, releases its locks and reports what it did; the second only
/// makes it say what that wait protects; the third ([`crate::apply::STOP_AT_ONCE`])
/// ends the process at once, with exit code 1, once that was said (or after a second).
/// Its locks go with its connection. What is said is the progress's to print
/// ([`crate::render::stopping`]).
fn stop_on_signals(runtime: &tokio::runtime::Runtime) -> crate::apply::Interrupt {
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = crate::apply::Interrupt::default();
    let counted = interrupt.clone();
    runtime.spawn(async move {
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            // Nothing is printed here: the command holds stderr, and a runtime worker
            // must never block on it.
            if counted.raise() >= crate::apply::STOP_AT_ONCE {
                let said = std::time::Instant::now() + std::time::Duration::from_secs(1);
                while !counted.announced(crate::apply::STOP_AT_ONCE)
                    && std::time::Instant::now() < said
                {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                std::process::exit(i32::from(EXIT_ERROR));
            }
        }
    });
    interrupt
}

/// Prints an error line; the exit code of a failure.
fn fail(stderr: &mut dyn ErrorLog, message: &str) -> u8 {
    fail_with(stderr, EXIT_ERROR, message)
}

/// Prints an error line; `code`.
fn fail_with(stderr: &mut dyn ErrorLog, code: u8, message: &str) -> u8 {
    let _ = writeln!(stderr, "error: {message}");
    stderr.said(message);
    code
}

/// Prints a broker error; its exit code ([`exit::of_broker`]).
fn broker_failed(stderr: &mut dyn ErrorLog, error: &BrokerError) -> u8 {
    fail_with(stderr, exit::of_broker(error), &error.to_string())
}

/// Reads the definitions file of `diff --against` or `lint --definitions`; `vhost`
/// names the vhost of a vhost-scoped file and is refused for a whole broker's file
/// (where it would be silently meaningless).
fn read_definitions(
    path: &Path,
    vhost: Option<&str>,
    target: Option<TargetVersion>,
    stderr: &mut dyn ErrorLog,
) -> Result<crate::definitions_file::Read, String> {
    let read = crate::definitions_file::read(path, vhost, target)?;
    if let (Some(vhost), None) = (vhost, &read.scoped_to) {
        return Err(format!(
            "{}: --vhost {vhost} is for a vhost-scoped file, and this file holds a whole broker's definitions (every object names its vhost)",
            path.display()
        ));
    }
    let _ = writeln!(stderr, "note: {} {}", path.display(), read.target);
    for note in &read.notes {
        let _ = writeln!(stderr, "note: {note}");
    }
    Ok(read)
}

/// What a command would have done had its spec been valid: said after the count of
/// errors, so a user knows whether a failed run left anything behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Only reads and prints (validate, compile, lint, plan, diff, state show).
    Reads,
    /// Writes a file (export).
    Writes,
    /// Changes the broker (apply, unlock, state repair).
    Changes,
}

impl Effect {
    /// The end of the error count line.
    fn ending(self) -> &'static str {
        match self {
            Effect::Reads => "",
            Effect::Writes => "; nothing was written",
            Effect::Changes => "; nothing was changed on the broker",
        }
    }
}

/// The environment a command reads its spec for: `--env`, else `WARREN_ENV` (what
/// [`Choice`] borrows from).
struct EnvironmentChoice {
    flag: Option<String>,
    variable: Option<String>,
}

impl EnvironmentChoice {
    fn as_choice(&self) -> Choice<'_> {
        Choice::of(self.flag.as_deref(), self.variable.as_deref())
    }
}

/// The environment `--env` or `WARREN_ENV` chose (the one place that reads the
/// variable).
fn environment_choice(environment: &EnvArg) -> EnvironmentChoice {
    EnvironmentChoice {
        flag: environment.env.clone(),
        variable: std::env::var("WARREN_ENV").ok(),
    }
}

/// Loads a spec (a file or a directory) for the environment chosen, printing its
/// diagnostics; `None` when it does not load.
fn load_spec(
    path: &Path,
    environment: &EnvArg,
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) -> Option<SpecFile> {
    match spec::load(path, environment_choice(environment).as_choice()) {
        Ok(file) => Some(file),
        Err(found) => {
            let texts = spec::Texts::for_report(path, &found);
            let _ = diagnostics::render_with(stderr, path, &texts, &found, effect.ending());
            stderr.said_diagnostics(path, &found);
            None
        }
    }
}

/// Prints diagnostics about a loaded spec, with the source lines of their files.
fn report(file: &SpecFile, found: &[Diagnostic], effect: Effect, stderr: &mut dyn ErrorLog) {
    let _ = diagnostics::render_with(stderr, &file.path, file, found, effect.ending());
    stderr.said_diagnostics(&file.path, found);
}

/// Reads a spec for a command that reports its load errors itself, as findings
/// (`lint`, `validate`): the spec for the environment chosen, or why it did not load.
fn read_spec(path: &Path, environment: &EnvArg) -> crate::lint::Read {
    spec::load_for_checking(path, environment_choice(environment).as_choice())
}

/// Reads a spec in each environment it declares (`lint --all-envs`): the names and
/// the spec read for each, or the spec as it is when it declares none (`Ok` with no
/// names), or why it did not load.
fn read_spec_in_every_environment(
    path: &Path,
) -> Result<crate::lint::Environments, Vec<Diagnostic>> {
    let file = spec::load_file(path)?;
    let names = file.environment_names();
    if names.is_empty() {
        return file
            .for_environment(Choice::None)
            .map(|file| crate::lint::Environments::NoneDeclared(Box::new(file)));
    }
    Ok(crate::lint::Environments::Each(
        names
            .into_iter()
            .map(|name| {
                let read = file
                    .clone()
                    .for_environment(Choice::Flag(&name))
                    .map_err(spec::Unread::from);
                (name, read)
            })
            .collect(),
    ))
}
