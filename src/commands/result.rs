//! What a command returns: a [`Success`], or a [`CommandError`] that carries the class
//! of its exit code ([`Failure`]) and what it says on stderr. Commands return early
//! with `?`: the library's errors convert below. The handler
//! ([`super::output::finish`]) turns either into the command's last output and its
//! exit code.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::exit::{self, Failure};
use crate::apply::UnlockError;
use crate::apply::repair::RepairError;
use crate::apply::run::Declined;
use crate::broker::{BrokerError, ReplayFailure};
use crate::render::replay::{CANCELLED, stopped};
use crate::replay::run::{Outcome, Ran};
use crate::spec::diagnostic::Diagnostic;

/// How a command ended.
pub(crate) type CommandResult = Result<Success, CommandError>;

/// A command that did what it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Success {
    /// Exit 0.
    Done,
    /// Exit 2: `plan` or `diff` with `--detailed-exitcode` found changes (or a broker
    /// that differs from the spec).
    Changes,
}

impl Success {
    /// The exit code.
    pub(super) fn code(self) -> u8 {
        match self {
            Success::Done => exit::OK,
            Success::Changes => exit::CHANGES,
        }
    }
}

/// Why a command failed: the class of its exit code, and what it says on stderr, in
/// order (the handler says it once the command has returned).
#[derive(Debug)]
pub(crate) struct CommandError {
    failure: Failure,
    told: Vec<Told>,
}

/// One thing a [`CommandError`] says on stderr.
#[derive(Debug)]
pub(super) enum Told {
    /// An `error:` line (the text without the prefix), repeated in a JSON error
    /// document.
    Error(String),
    /// Diagnostics about `file`, rendered with their source lines; the errors among
    /// them are repeated in a JSON error document.
    Diagnostics {
        file: PathBuf,
        rendered: String,
        found: Vec<Diagnostic>,
    },
    /// Text said as it is: what an apply that stopped part way made and did not, a run
    /// cancelled, what the Topology Operator cannot express.
    Text(String),
}

impl CommandError {
    /// An error line, with the exit code of `failure`.
    pub(crate) fn new(failure: Failure, message: impl Into<String>) -> Self {
        CommandError {
            failure,
            told: vec![Told::Error(message.into())],
        }
    }

    /// Bad input, or an error no other code names: an error line, exit 1.
    pub(crate) fn error(message: impl Into<String>) -> Self {
        Self::new(Failure::Error, message)
    }

    /// warren refused to change the broker to protect it: an error line, exit 4.
    pub(crate) fn refused(message: impl Into<String>) -> Self {
        Self::new(Failure::Refused, message)
    }

    /// Several errors, an error line each; exit 1.
    pub(crate) fn errors(messages: impl IntoIterator<Item = String>) -> Self {
        CommandError {
            failure: Failure::Error,
            told: messages.into_iter().map(Told::Error).collect(),
        }
    }

    /// Diagnostics about `file` with errors among them, as `render` renders them
    /// (their source lines and the count); exit 1.
    pub(crate) fn diagnostics(
        file: &Path,
        found: &[Diagnostic],
        render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Self {
        CommandError {
            failure: Failure::Error,
            told: vec![Told::Diagnostics {
                file: file.to_path_buf(),
                rendered: rendered(render),
                found: found.to_vec(),
            }],
        }
    }

    /// A run a person declined (or that had no terminal to ask on): `line` says what
    /// was left as it was; exit 1.
    pub(crate) fn cancelled(line: &str) -> Self {
        Self::saying(format!("{line}\n"))
    }

    /// A failure said by `text` as it is (no `error:` line); exit 1.
    pub(crate) fn saying(text: String) -> Self {
        CommandError {
            failure: Failure::Error,
            told: vec![Told::Text(text)],
        }
    }

    /// A failure the command's own output already showed (a check that found errors,
    /// a plan that apply would refuse, the report of a replay that a signal stopped):
    /// the exit code of `failure`, nothing more said.
    pub(crate) fn already_shown(failure: Failure) -> Self {
        CommandError {
            failure,
            told: Vec::new(),
        }
    }

    /// Standard output could not be written (a closed pipe is no error: it is an end,
    /// `streams.rs`): exit 1, nothing said.
    pub(crate) fn unwritten(_: std::io::Error) -> Self {
        Self::already_shown(Failure::Error)
    }

    /// What `render` renders, said after what this error says.
    pub(crate) fn followed_by(
        mut self,
        render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Self {
        self.told.push(Told::Text(rendered(render)));
        self
    }

    /// The class of its exit code, and what it says.
    pub(super) fn into_parts(self) -> (Failure, Vec<Told>) {
        (self.failure, self.told)
    }
}

/// What `render` writes, as text (render/ renders into any writer).
fn rendered(render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> String {
    let mut text = Vec::new();
    let _ = render(&mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// Bad input, as the library says it: a file that does not read, a name that is not
/// there.
impl From<String> for CommandError {
    fn from(message: String) -> Self {
        CommandError::error(message)
    }
}

impl From<BrokerError> for CommandError {
    fn from(error: BrokerError) -> Self {
        CommandError::new(exit::of_broker(&error), error.to_string())
    }
}

impl From<ReplayFailure> for CommandError {
    fn from(failure: ReplayFailure) -> Self {
        CommandError::new(exit::of_replay(&failure), failure.to_string())
    }
}

impl From<Declined> for CommandError {
    fn from(declined: Declined) -> Self {
        CommandError::new(exit::of_declined(declined), declined.to_string())
    }
}

/// Another holder's lock is not broken: a refusal.
impl From<UnlockError> for CommandError {
    fn from(error: UnlockError) -> Self {
        match error {
            UnlockError::Broker(error) => error.into(),
            other => CommandError::refused(other.to_string()),
        }
    }
}

impl From<RepairError> for CommandError {
    fn from(error: RepairError) -> Self {
        match error {
            RepairError::Broker(error) => error.into(),
            other => CommandError::error(other.to_string()),
        }
    }
}

impl From<crate::replay::TargetError> for CommandError {
    fn from(error: crate::replay::TargetError) -> Self {
        CommandError::error(error.to_string())
    }
}

impl From<crate::trace::Error> for CommandError {
    fn from(error: crate::trace::Error) -> Self {
        CommandError::error(error.to_string())
    }
}

/// What became of a replay that found its consumer, as its command's result: a dry
/// run, nothing to move and a finished move succeed; a move a signal stopped fails
/// with nothing more said (its count was printed); the rest say why nothing, or not
/// all, moved.
pub(super) fn replayed(ran: Ran) -> CommandResult {
    let prepared = ran.prepared.as_ref();
    Err(match ran.outcome {
        Outcome::DryRun | Outcome::NothingToMove => return Ok(Success::Done),
        Outcome::Replayed(replayed) if !replayed.interrupted => return Ok(Success::Done),
        Outcome::Replayed(_) => CommandError::already_shown(Failure::Error),
        Outcome::NoClient(error) | Outcome::NotLocked(error) => error.into(),
        Outcome::NotPrepared(failure) => failure.into(),
        Outcome::Cancelled => CommandError::cancelled(CANCELLED),
        Outcome::Stopped(error) => CommandError::new(
            exit::of_replay(&error.failure),
            stopped(prepared.expect("a replay that moved was prepared"), &error),
        ),
    })
}
