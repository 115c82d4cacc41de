//! One function per subcommand: flags in, one library call, rendered output and an
//! exit code out. The helpers below are the one place that builds a broker client,
//! loads a spec for a command and prints diagnostics.

mod compile;
pub mod exit;
mod graph;
mod import;
mod lint;
mod plan;
mod replay;
mod schema;
mod shell;
mod state;
mod status;
mod trace;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::broker::{BrokerError, Client, Endpoint};
use crate::cli::{BrokerArgs, Cli, Command, EnvArg, StateAction};
use crate::model::TargetVersion;
use crate::render::diagnostics;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::environment::Choice;
use crate::spec::{self, SpecFile};

pub use exit::{CHANGES as EXIT_CHANGES, ERROR as EXIT_ERROR, OK as EXIT_OK};

/// Parses the command line and runs the command.
pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
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
    let code = match cli.command {
        Command::Validate(args) => compile::validate(&args, stdout, stderr),
        Command::Compile { spec, contract } => compile::compile(&spec, contract, stdout, stderr),
        Command::Export {
            spec,
            output,
            format,
            cluster,
            namespace,
        } => compile::export(
            &spec,
            &output,
            &compile::ExportTarget {
                format,
                cluster,
                namespace,
            },
            stdout,
            stderr,
        ),
        Command::Schema => schema::print(stdout),
        Command::Plan {
            spec,
            broker: connection,
            plan,
            output,
            detailed_exitcode,
        } => plan::plan(
            &spec,
            &connection,
            &plan,
            output.as_deref(),
            detailed_exitcode,
            cli.color,
            stdout,
            stderr,
        ),
        Command::Apply {
            target,
            broker: connection,
            plan,
            auto_approve,
            allow_data_loss,
            migrate,
            lock_timeout,
        } => plan::apply(
            &target,
            &connection,
            &plan,
            &plan::ApplyFlags {
                auto_approve,
                allow_data_loss,
                migrate,
                lock_timeout,
            },
            cli.color,
            stdout,
            stderr,
        ),
        Command::Lint {
            spec,
            env,
            all_envs,
            definitions,
            format,
            deny,
            target_version,
            vhost,
        } => lint::lint(
            spec.as_deref(),
            &lint::Environments { env, all_envs },
            definitions.as_deref(),
            vhost.as_deref(),
            format,
            !deny.is_empty(),
            target_version,
            stdout,
            stderr,
        ),
        Command::Import {
            from,
            broker: connection,
            vhosts,
            name,
            output,
            target_version,
        } => import::import(
            from.as_deref(),
            &connection,
            &vhosts,
            &name,
            target_version,
            &output,
            stdout,
            stderr,
        ),
        Command::Rules { id } => lint::rules(id.as_deref(), stdout, stderr),
        Command::Unlock {
            spec,
            env,
            broker: connection,
            holder,
        } => plan::unlock(&spec, &env, &connection, &holder, stdout, stderr),
        Command::Diff {
            spec,
            against,
            vhost,
            plan,
            detailed_exitcode,
        } => plan::diff(
            &spec,
            &against,
            vhost.as_deref(),
            &plan,
            detailed_exitcode,
            cli.color,
            stdout,
            stderr,
        ),
        Command::Graph {
            spec,
            format,
            vhost,
            service,
        } => graph::graph(
            &spec,
            format,
            vhost.as_deref(),
            service.as_deref(),
            stdout,
            stderr,
        ),
        Command::Trace {
            spec,
            env,
            exchange,
            routing_key,
            headers,
            vhost,
            failures,
            format,
            target_version,
        } => trace::trace(
            &spec,
            &env,
            &trace::Flags {
                vhost: vhost.as_deref(),
                exchange: &exchange,
                routing_key: &routing_key,
                headers: &headers,
                failures,
                format,
                target: target_version,
            },
            stdout,
            stderr,
        ),
        Command::Replay {
            spec,
            env,
            queue,
            vhost,
            limit,
            batch,
            dry_run,
            auto_approve,
            format,
            broker,
            lock_timeout,
        } => replay::replay(
            &spec,
            &env,
            &broker,
            &replay::Flags {
                queue: &queue,
                vhost: vhost.as_deref(),
                limit,
                batch,
                dry_run,
                auto_approve,
                format,
                lock_timeout,
            },
            stdout,
            stderr,
        ),
        Command::Status {
            spec,
            env,
            broker: connection,
            format,
            vhost,
            service,
            target_version,
        } => status::status(
            &spec,
            &env,
            &connection,
            &status::Flags {
                format,
                vhost: vhost.as_deref(),
                service: service.as_deref(),
                target: target_version,
            },
            stdout,
            stderr,
        ),
        Command::Completions { shell } => shell::completions(shell, stdout),
        Command::Man { output_dir } => shell::man(output_dir.as_deref(), stdout, stderr),
        Command::State { action } => match action {
            StateAction::Show { spec, env, broker } => {
                state::show(&spec, &env, &broker, stdout, stderr)
            }
            StateAction::Repair {
                spec,
                env,
                broker,
                auto_approve,
            } => state::repair(&spec, &env, &broker, auto_approve, stdout, stderr),
        },
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

impl Command {
    /// Whether the command was asked for JSON on stdout.
    fn prints_json(&self) -> bool {
        use crate::cli::{Format, LintFormat, StatusFormat, TraceFormat};
        match self {
            Command::Plan { plan, .. }
            | Command::Apply { plan, .. }
            | Command::Diff { plan, .. } => plan.format == Format::Json,
            Command::Lint { format, .. } => *format == LintFormat::Json,
            Command::Trace { format, .. } | Command::Replay { format, .. } => {
                *format == TraceFormat::Json
            }
            Command::Status { format, .. } => *format == StatusFormat::Json,
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

/// The broker client for the connection flags: credentials from the flags, else from
/// the URL, else from RabbitMQ's container variables, else guest/guest.
fn client(args: &BrokerArgs) -> Result<Client, BrokerError> {
    let endpoint = Endpoint::from_urls(
        &args.urls,
        args.user.clone(),
        args.password.clone(),
        || {
            let variable = |name: &str| std::env::var(name).ok();
            (
                variable("RABBITMQ_DEFAULT_USER").unwrap_or_else(|| "guest".into()),
                variable("RABBITMQ_DEFAULT_PASS").unwrap_or_else(|| "guest".into()),
            )
        },
        args.ca_cert.clone(),
        Duration::from_secs(args.timeout.max(1)),
    )?
    .with_amqp_url(args.amqp_url.as_deref())?;
    Client::new(endpoint)
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

/// The environment a command reads its spec for: `--env`, else `WARREN_ENV`.
struct Chosen {
    flag: Option<String>,
    variable: Option<String>,
}

impl Chosen {
    fn as_choice(&self) -> Choice<'_> {
        Choice::of(self.flag.as_deref(), self.variable.as_deref())
    }
}

/// The environment `--env` or `WARREN_ENV` chose (the one place that reads the
/// variable).
fn chosen(environment: &EnvArg) -> Chosen {
    Chosen {
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
    match spec::load(path, chosen(environment).as_choice()) {
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
