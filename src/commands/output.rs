//! How a command's failure is output: the error lines it says on stderr, and the JSON
//! error document of a command asked for JSON that printed nothing of its own.

use std::io::Write;

use super::exit;
use super::streams::{ClosedPipeIsEnd, ErrorLog, Stderr};
use crate::broker::BrokerError;

/// Prints an error line; the exit code of a failure.
pub(super) fn fail(stderr: &mut dyn ErrorLog, message: &str) -> u8 {
    fail_with(stderr, exit::ERROR, message)
}

/// Prints an error line; `code`.
pub(super) fn fail_with(stderr: &mut dyn ErrorLog, code: u8, message: &str) -> u8 {
    let _ = writeln!(stderr, "error: {message}");
    stderr.said(message);
    code
}

/// Prints a broker error; its exit code ([`exit::of_broker`]).
pub(super) fn broker_failed(stderr: &mut dyn ErrorLog, error: &BrokerError) -> u8 {
    fail_with(stderr, exit::of_broker(error), &error.to_string())
}

/// A command whose output is JSON says why it failed in JSON too, when it printed no
/// document of its own (`apply --format json` puts its error in its document); `code`.
pub(super) fn finish<O: Write, E: Write>(
    code: u8,
    json: bool,
    stdout: &mut ClosedPipeIsEnd<O>,
    stderr: &mut Stderr<E>,
) -> u8 {
    if json && code != exit::OK && code != exit::CHANGES && !stdout.wrote() {
        let said = stderr.errors();
        let document = crate::render::errors::error_document(
            code,
            exit::class(code),
            &said.messages,
            &said.diagnostics,
        );
        let _ = writeln!(
            stdout,
            "{}",
            serde_json::to_string_pretty(&document).expect("JSON")
        );
    }
    code
}
