//! A spec's diagnostics on stderr: warnings said as they come, errors as the
//! [`CommandError`] the command ends with; and what the count line adds that nothing
//! was done ([`Effect`]).

use std::path::Path;

use super::result::CommandError;
use super::streams::ErrorLog;
use crate::render::diagnostics;
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{SpecFile, Texts};

/// What a command would have done had its spec been valid: said after the count of
/// errors, so a user knows whether a failed run left anything behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// Only reads and prints (validate, compile, lint, plan, diff, state show).
    Reads,
    /// Writes a file (export).
    Writes,
    /// Changes the broker (apply, unlock, state repair).
    Changes,
}

impl Effect {
    /// The end of the error count line.
    pub(super) fn ending(self) -> &'static str {
        match self {
            Effect::Reads => "",
            Effect::Writes => "; nothing was written",
            Effect::Changes => "; nothing was changed on the broker",
        }
    }
}

/// Prints the warnings about a loaded spec, with the source lines of their files.
pub(super) fn say_warnings(
    file: &SpecFile,
    warnings: &[Diagnostic],
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) {
    let _ = diagnostics::render_with(stderr, &file.path, file, warnings, effect.ending());
}

/// The error of a loaded spec with errors among `found` (its warnings are said with
/// them), with the source lines of their files.
pub(super) fn invalid(file: &SpecFile, found: &[Diagnostic], effect: Effect) -> CommandError {
    CommandError::diagnostics(&file.path, found, |out| {
        diagnostics::render_with(out, &file.path, file, found, effect.ending())
    })
}

/// The error of a spec at `path` that does not load, with what its files read.
pub(super) fn unloaded(path: &Path, found: &[Diagnostic], effect: Effect) -> CommandError {
    let texts = Texts::for_report(path, found);
    CommandError::diagnostics(path, found, |out| {
        diagnostics::render_with(out, path, &texts, found, effect.ending())
    })
}
