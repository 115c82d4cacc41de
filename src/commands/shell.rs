//! `warren completions` and `warren man`: generated from the same clap definition as
//! the parser, so they never list a flag warren does not have.

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;

use super::Cli;
use super::result::{CommandResult, Success};
use super::streams::ErrorLog;

/// The flags of `warren completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The flags of `warren man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `warren.1` and a page per command into this directory.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
}

/// Prints the completion script for the shell.
pub fn completions(args: &CompletionsArgs, stdout: &mut dyn Write) -> CommandResult {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "warren", stdout);
    Ok(Success::Done)
}

/// Prints the top-level man page, or writes every page into `--output-dir`.
pub fn man(args: &ManArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> CommandResult {
    let command = Cli::command();
    match args.output_dir.as_deref() {
        None => clap_mangen::Man::new(command)
            .render(stdout)
            .map_err(|err| format!("cannot write the man page: {err}"))?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
            clap_mangen::generate_to(command, dir).map_err(|err| {
                format!("cannot write the man pages into {}: {err}", dir.display())
            })?;
            let _ = writeln!(stderr, "wrote the man pages into {}", dir.display());
        }
    }
    Ok(Success::Done)
}
