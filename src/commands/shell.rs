//! `warren completions` and `warren man`: generated from the same clap definition as
//! the parser, so they never list a flag warren does not have.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;

use super::{EXIT_ERROR, EXIT_OK, ErrorLog, fail};
use crate::cli::Cli;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell, stdout: &mut dyn Write) -> u8 {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "warren", stdout);
    EXIT_OK
}

/// Prints the top-level man page, or writes every page into `output_dir`.
pub fn man(output_dir: Option<&Path>, stdout: &mut dyn Write, stderr: &mut dyn ErrorLog) -> u8 {
    let command = Cli::command();
    let Some(dir) = output_dir else {
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
        Err(err) => {
            let _ = writeln!(
                stderr,
                "error: cannot write the man pages into {}: {err}",
                dir.display()
            );
            EXIT_ERROR
        }
    }
}
