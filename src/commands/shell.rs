//! `warren completions` and `warren man`: generated from the same clap definition as
//! the parser, so they never list a flag warren does not have.

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;

use super::output::fail;
use super::streams::ErrorLog;
use super::{Cli, EXIT_OK};

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
pub fn completions(args: &CompletionsArgs, stdout: &mut dyn Write) -> u8 {
    let mut command = Cli::command();
    clap_complete::generate(args.shell, &mut command, "warren", stdout);
    EXIT_OK
}

/// Prints the top-level man page, or writes every page into `--output-dir`.
pub fn man(args: &ManArgs, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let command = Cli::command();
    let Some(dir) = args.output_dir.as_deref() else {
        return match clap_mangen::Man::new(command).render(stdout) {
            Ok(()) => EXIT_OK,
            Err(err) => fail(stderr, &format!("cannot write the man page: {err}")),
        };
    };
    if let Err(err) = std::fs::create_dir_all(dir) {
        return fail(stderr, &format!("cannot create {}: {err}", dir.display()));
    }
    match clap_mangen::generate_to(command, dir) {
        Ok(()) => {
            let _ = writeln!(stderr, "wrote the man pages into {}", dir.display());
            EXIT_OK
        }
        Err(err) => fail(
            stderr,
            &format!("cannot write the man pages into {}: {err}", dir.display()),
        ),
    }
}
