//! Findings about a spec: what is wrong, where, and how to fix it.
//!
//! Messages and help texts are bounded when they are made ([`crate::model::shorten`]): a value
//! quoted from a hostile spec cannot make a diagnostic unbounded.

use super::{Location, SpecPath};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The spec cannot be compiled as written.
    Error,
    /// The spec compiles, but probably does not do what was meant.
    Warning,
}

/// One finding, pointing at a place in the spec.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable identifier of the kind of finding, e.g. `unknown-key`.
    pub code: &'static str,
    /// What is wrong, in one sentence.
    pub message: String,
    /// Where in the spec's structure.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "path_as_string"
    )]
    pub path: Option<SpecPath>,
    /// Where in the file.
    #[serde(skip)]
    pub location: Option<Location>,
    /// How to fix it, when that is clear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Whether renderers may quote the source line (false when it holds a secret).
    #[serde(skip)]
    pub quote_source: bool,
}

fn path_as_string<S: serde::Serializer>(path: &Option<SpecPath>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => s.collect_str(path),
        None => s.serialize_none(),
    }
}

impl Diagnostic {
    /// An error without position.
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: crate::model::shorten::message(&message.into()),
            path: None,
            location: None,
            help: None,
            quote_source: true,
        }
    }

    /// A warning without position.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Attaches the spec path (the location is resolved later from the source map).
    pub fn at(mut self, path: SpecPath) -> Self {
        self.path = Some(path);
        self
    }

    /// Attaches a fix hint.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(crate::model::shorten::message(&help.into()));
        self
    }

    /// Sets the fix hint of a diagnostic already collected.
    pub fn hint(&mut self, help: impl Into<String>) -> &mut Self {
        self.help = Some(crate::model::shorten::message(&help.into()));
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}
