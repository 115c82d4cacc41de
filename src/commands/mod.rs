//! One function per subcommand: flags in, one library call, rendered output and an
//! exit code out. The helpers below are the one place that builds a broker client,
//! loads a spec for a command and prints diagnostics.

mod compile;
mod import;
mod lint;
mod plan;
mod schema;
mod shell;
mod state;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::broker::{BrokerError, Client, Endpoint};
use crate::cli::{BrokerArgs, Cli, Command, StateAction};
use crate::model::TargetVersion;
use crate::render::diagnostics;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{self, SpecFile};

/// Exit code: success (and, for `plan`, no changes).
pub const EXIT_OK: u8 = 0;
/// Exit code: bad input, a failed check, or any error.
pub const EXIT_ERROR: u8 = 1;
/// Exit code of `plan` and `diff`: there are changes to apply.
pub const EXIT_CHANGES: u8 = 2;

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
    let stderr = &mut std::io::stderr().lock();
    let code = match cli.command {
        Command::Validate(args) => compile::validate(&args, stdout, stderr),
        Command::Compile { spec, contract } => compile::compile(&spec, contract, stdout, stderr),
        Command::Export { spec, output } => compile::export(&spec, &output, stdout, stderr),
        Command::Schema => schema::print(stdout),
        Command::Plan {
            spec,
            broker: connection,
            plan,
            output,
        } => plan::plan(&spec, &connection, &plan, output.as_deref(), stdout, stderr),
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
            stdout,
            stderr,
        ),
        Command::Lint {
            spec,
            definitions,
            format,
            deny,
            target_version,
            vhost,
        } => lint::lint(
            spec.as_deref(),
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
            broker: connection,
            holder,
        } => plan::unlock(&spec, &connection, &holder, stdout, stderr),
        Command::Diff {
            spec,
            against,
            vhost,
            plan,
        } => plan::diff(&spec, &against, vhost.as_deref(), &plan, stdout, stderr),
        Command::Completions { shell } => shell::completions(shell, stdout),
        Command::Man { output_dir } => shell::man(output_dir.as_deref(), stdout, stderr),
        Command::State { action } => match action {
            StateAction::Show { spec, broker } => state::show(&spec, &broker, stdout, stderr),
            StateAction::Repair {
                spec,
                broker,
                auto_approve,
            } => state::repair(&spec, &broker, auto_approve, stdout, stderr),
        },
    };
    let _ = stdout.flush();
    ExitCode::from(code)
}

/// Standard output whose reader may stop reading early (`warren compile … | head`):
/// a closed pipe is a normal end of the output, as in other command-line tools, not an
/// error. Writes after the reader left are dropped, so the command finishes what it
/// does (an apply is never cut short by its reader) and exits with its own code.
struct ClosedPipeIsEnd<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> ClosedPipeIsEnd<W> {
    fn new(inner: W) -> Self {
        ClosedPipeIsEnd {
            inner,
            closed: false,
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

/// The runtime the broker commands run on.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

/// Prints an error line; the exit code of a failure.
fn fail(stderr: &mut dyn Write, message: &str) -> u8 {
    let _ = writeln!(stderr, "error: {message}");
    EXIT_ERROR
}

/// Reads the definitions file of `diff --against` or `lint --definitions`; `vhost`
/// names the vhost of a vhost-scoped file and is refused for a whole broker's file
/// (where it would be silently meaningless).
fn read_definitions(
    path: &Path,
    vhost: Option<&str>,
    target: Option<TargetVersion>,
    stderr: &mut dyn Write,
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

/// Loads a spec, printing its diagnostics; `None` when it does not load.
fn load_spec(path: &Path, effect: Effect, stderr: &mut dyn Write) -> Option<SpecFile> {
    match spec::load_file(path) {
        Ok(file) => Some(file),
        Err(found) => {
            let source = crate::spec::load::source_for_report(path);
            let _ =
                diagnostics::render_with(stderr, path, source.as_deref(), &found, effect.ending());
            None
        }
    }
}

/// Prints diagnostics about a loaded spec, with its source lines.
fn report(file: &SpecFile, found: &[Diagnostic], effect: Effect, stderr: &mut dyn Write) {
    let _ = diagnostics::render_with(
        stderr,
        &file.path,
        Some(&file.source),
        found,
        effect.ending(),
    );
}
