//! The one handler from a command's result to its output: what a failed command says
//! on stderr, the JSON document of a command asked for JSON (its own, or the error
//! document), and the exit code. Every command's result goes through [`finish`].

use std::io::Write;

use serde_json::Value;

use super::result::{CommandError, CommandResult, Told};
use super::streams::{ClosedPipeIsEnd, ErrorLog, Stderr};
use crate::render;

/// What a command hands the handler: how it ended and, for a command that prints one
/// JSON document whatever happened (`apply` and `replay` under `--format json`), that
/// document.
pub(crate) struct Reply {
    /// How the command ended.
    pub result: CommandResult,
    /// The command's own JSON document.
    pub document: Option<OwnDocument>,
}

/// A command's own JSON document, given its `error` (`None` when it succeeded): the
/// handler fills that in, from what the command said.
pub(crate) type OwnDocument = Box<dyn FnOnce(Option<Value>) -> Value>;

impl Reply {
    /// A result, and the command's own JSON document (given its `error`).
    pub(crate) fn documented(
        result: CommandResult,
        document: impl FnOnce(Option<Value>) -> Value + 'static,
    ) -> Self {
        Reply {
            result,
            document: Some(Box::new(document)),
        }
    }
}

impl From<CommandResult> for Reply {
    fn from(result: CommandResult) -> Self {
        Reply {
            result,
            document: None,
        }
    }
}

/// Turns a command's reply into its last output and its exit code. A failure says its
/// error on stderr (each `error:` line and diagnostic remembered); then, under JSON,
/// the command's own document gets an `error` that lists everything the command said
/// as errors, or, when the command printed nothing of its own, the error document
/// (docs/exit-codes.md) is printed in its place.
pub(super) fn finish<O: Write, E: Write>(
    reply: Reply,
    json: bool,
    stdout: &mut ClosedPipeIsEnd<O>,
    stderr: &mut Stderr<E>,
) -> u8 {
    let Reply { result, document } = reply;
    match result {
        Ok(success) => {
            if let Some(document) = document {
                print(stdout, &document(None));
            }
            success.code()
        }
        Err(error) => say_failure(error, document, json, stdout, stderr),
    }
}

/// Says a command's error, prints its JSON document; its exit code.
fn say_failure<O: Write, E: Write>(
    error: CommandError,
    document: Option<OwnDocument>,
    json: bool,
    stdout: &mut ClosedPipeIsEnd<O>,
    stderr: &mut Stderr<E>,
) -> u8 {
    let (failure, told) = error.into_parts();
    for told in told {
        tell(told, stderr);
    }
    let said = stderr.errors();
    let error = render::errors::error_value(
        failure.code(),
        failure.class(),
        &said.messages,
        &said.diagnostics,
    );
    match document {
        Some(document) => print(stdout, &document(Some(error))),
        None if json && !stdout.wrote() => print(stdout, &render::errors::error_document(error)),
        None => {}
    }
    failure.code()
}

/// Says one thing of an error on stderr, remembering the errors said.
fn tell(told: Told, stderr: &mut dyn ErrorLog) {
    match told {
        Told::Error(message) => stderr.error(&message),
        Told::Diagnostics {
            file,
            rendered,
            found,
        } => {
            let _ = stderr.write_all(rendered.as_bytes());
            stderr.said_diagnostics(&file, &found);
        }
        Told::Text(text) => {
            let _ = stderr.write_all(text.as_bytes());
        }
    }
}

/// Prints a JSON document on stdout.
fn print(stdout: &mut dyn Write, document: &Value) {
    let _ = render::json_document(stdout, document);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::commands::exit;
    use crate::commands::result::{CommandError, Success};

    /// Runs the handler on `reply` with what was said before it; stdout, stderr and
    /// the exit code.
    fn handled(reply: Reply, json: bool, said_before: &[&str]) -> (String, String, u8) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = {
            let stdout = &mut ClosedPipeIsEnd::new(&mut out);
            let stderr = &mut Stderr::new(&mut err);
            for message in said_before {
                stderr.error(message);
            }
            finish(reply, json, stdout, stderr)
        };
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
            code,
        )
    }

    #[test]
    fn an_error_is_said_on_stderr_and_listed_in_the_error_document() {
        let reply = Reply::from(Err(CommandError::refused("the plan is stale")));
        let (out, err, code) = handled(reply, true, &["no terminal to confirm on"]);
        assert_eq!(code, exit::REFUSED);
        assert_eq!(
            err,
            "error: no terminal to confirm on\nerror: the plan is stale\n"
        );
        let document: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            document,
            json!({"error": {
                "exit_code": 4,
                "class": "refused",
                "messages": ["no terminal to confirm on", "the plan is stale"],
                "diagnostics": [],
            }})
        );
        // Text output gets no document.
        let reply = Reply::from(Err(CommandError::refused("the plan is stale")));
        let (out, _, code) = handled(reply, false, &[]);
        assert_eq!((out.as_str(), code), ("", exit::REFUSED));
    }

    #[test]
    fn a_commands_own_document_gets_the_error_in_place_of_the_error_document() {
        let document = |error: Option<Value>| json!({"format": "own/1", "error": error});
        let failed = CommandError::error("stopped").followed_by(|out| writeln!(out, "1 made"));
        let (out, err, code) = handled(Reply::documented(Err(failed), document), true, &[]);
        assert_eq!(code, exit::ERROR);
        assert_eq!(err, "error: stopped\n1 made\n");
        let printed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(printed["format"], "own/1");
        assert_eq!(printed["error"]["messages"], json!(["stopped"]));

        let (out, err, code) = handled(Reply::documented(Ok(Success::Done), document), true, &[]);
        assert_eq!((err.as_str(), code), ("", exit::OK));
        let printed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(printed, json!({"format": "own/1", "error": null}));
    }

    #[test]
    fn a_failure_already_shown_says_nothing_more() {
        let shown = CommandError::already_shown(exit::Failure::Error);
        let (out, err, code) = handled(Reply::from(Err(shown)), false, &[]);
        assert_eq!((out.as_str(), err.as_str(), code), ("", "", exit::ERROR));
        let (_, _, code) = handled(Reply::from(Ok(Success::Changes)), true, &[]);
        assert_eq!(code, exit::CHANGES);
    }
}
