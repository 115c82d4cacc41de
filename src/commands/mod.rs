//! One function per subcommand: flags in, exit code out.

mod broker;
mod compile;
mod import;
mod lint;
mod schema;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

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
    let stdout = &mut std::io::stdout().lock();
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
        } => broker::plan(&spec, &connection, &plan, output.as_deref(), stdout, stderr),
        Command::Apply {
            target,
            broker: connection,
            plan,
            auto_approve,
            allow_data_loss,
        } => broker::apply(
            &target,
            &connection,
            &plan,
            auto_approve,
            allow_data_loss,
            stdout,
            stderr,
        ),
        Command::Lint {
            spec,
            definitions,
            format,
            deny,
            target_version,
        } => lint::lint(
            spec.as_deref(),
            definitions.as_deref(),
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
        } => import::import(
            from.as_deref(),
            &connection,
            &vhosts,
            &name,
            &output,
            stdout,
            stderr,
        ),
        Command::Rules { id } => lint::rules(id.as_deref(), stdout, stderr),
        Command::Diff {
            spec,
            against,
            plan,
        } => broker::diff(&spec, &against, &plan, stdout, stderr),
    };
    let _ = stdout.flush();
    ExitCode::from(code)
}
