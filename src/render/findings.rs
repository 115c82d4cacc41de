//! What the writers that `warren lint` and `warren upgrade-check` share ([`super::github`],
//! [`super::sarif`]) need to know of the command whose findings they write, and the
//! one-line form of a finding both formats show.
//!
//! The two commands report the same [`Finding`] type, but name what a finding is
//! about differently: a lint finding by its place in the spec (an object without one
//! is named in the message when the finding is made), an upgrade-check finding by its
//! object. A [`Reporter`] says which, with the other words that differ between them,
//! so that each format has one writer.

use std::fmt::Write as _;
use std::path::Path;

use crate::model::finding::Finding;

/// The command a report of findings comes from, as the shared writers need it.
pub struct Reporter<'a> {
    /// What an annotation's title says before the finding's code: `warren` (lint),
    /// `warren upgrade-check`.
    pub title: &'static str,
    /// The file a finding without one of its own points into: the path the command
    /// was given (a spec, a directory, a definitions file); `None` for a broker.
    pub file: Option<&'a Path>,
    /// How a finding names what it is about.
    pub subject: Subject,
    /// What the one-line form calls a finding's `help`: `help` (lint), `fix`
    /// (upgrade-check, as its other formats do).
    pub fix_word: &'static str,
    /// What a rule's SARIF help says after its explanation (or, without one, its
    /// summary): where to read more about the rule with this id.
    pub more: fn(&str) -> String,
}

/// How a finding names what it is about, in the one-line form and as SARIF's logical
/// location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// By its place in the spec (`path`): lint's findings, whose object, when no place
    /// is known, is in the message already.
    Place,
    /// By its object, written before the message: upgrade-check's findings.
    Object,
}

impl Reporter<'_> {
    /// The file `finding` points into: its own, else the one the command was given.
    pub fn file_of<'f>(&'f self, finding: &'f Finding) -> Option<&'f Path> {
        finding.file.as_deref().or(self.file)
    }

    /// The finding in one line: what it is about, the message, what it affects, the
    /// fix, and the change to make in the spec that manages its object.
    pub fn one_line(&self, finding: &Finding) -> String {
        let mut message = match (self.subject, &finding.object) {
            (Subject::Object, Some(object)) => format!("{object}: {}", finding.message),
            _ => finding.message.clone(),
        };
        if !finding.affects.is_empty() {
            let _ = write!(
                message,
                " (affects {})",
                super::diagnostics::affects_text(&finding.affects)
            );
        }
        if let Some(help) = &finding.help {
            let _ = write!(message, " ({}: {help})", self.fix_word);
        }
        if let Some(change) = &finding.upgrade().spec_change {
            let _ = write!(message, " (spec: {change})");
        }
        message
    }
}
