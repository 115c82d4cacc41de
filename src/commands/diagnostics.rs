//! A spec's diagnostics on stderr, and what the count line adds that nothing was done
//! ([`Effect`]).

use super::streams::ErrorLog;
use crate::render::diagnostics;
use crate::spec::SpecFile;
use crate::spec::diagnostic::Diagnostic;

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

/// Prints diagnostics about a loaded spec, with the source lines of their files.
pub(super) fn report(
    file: &SpecFile,
    found: &[Diagnostic],
    effect: Effect,
    stderr: &mut dyn ErrorLog,
) {
    let _ = diagnostics::render_with(stderr, &file.path, file, found, effect.ending());
    stderr.said_diagnostics(&file.path, found);
}
