//! Findings about a spec: what is wrong, where, and how to fix it.
//!
//! Messages and help texts are bounded when they are made ([`crate::model::shorten`]): a value
//! quoted from a hostile spec cannot make a diagnostic unbounded.

use std::path::{Path, PathBuf};

use super::source_map::Segment;
use super::{Location, SpecPath};
use crate::model::redact::{self, MaskedLine};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
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
    /// The file `location` is in: a spec written in several files (a directory) has
    /// one per file, and a diagnostic is printed with the file that wrote the value.
    /// `None`: the file the command was given.
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// Where in the file.
    #[serde(skip)]
    pub location: Option<Location>,
    /// How to fix it, when that is clear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// What inherits the setting at `path` and is affected by it (consumers that take a
    /// delay from `defaults`): one diagnostic at the line that sets the value, naming
    /// them all, instead of one per consumer at a place the file does not have.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub affects: Vec<String>,
    /// For the last error of a file with too many to show (`more-errors`): how many
    /// more errors it stands for, so that counts stay true.
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
            file: None,
            location: None,
            help: None,
            affects: Vec::new(),
            omitted: 0,
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

    /// Names what inherits the setting this diagnostic is about (see
    /// [`Diagnostic::affects`]).
    pub fn affecting(mut self, name: impl Into<String>) -> Self {
        self.affects.push(name.into());
        self
    }

    /// Attaches a fix hint.
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(crate::model::shorten::message(&help.into()));
        self
    }

    /// Sets a fix hint of several lines (an example to copy). Only warren's own text,
    /// which is why it is `'static`: text from a spec goes through [`Self::help`],
    /// which shortens it and escapes line breaks.
    pub fn help_lines(mut self, help: &'static str) -> Self {
        self.help = Some(help.to_string());
        self
    }

    /// Sets the fix hint of a diagnostic already collected.
    pub fn hint(&mut self, help: impl Into<String>) -> &mut Self {
        self.help = Some(crate::model::shorten::message(&help.into()));
        self
    }

    /// The file the diagnostic points into: its own, else `given` (the path the
    /// command was given).
    pub fn file_or<'a>(&'a self, given: &'a Path) -> &'a Path {
        self.file.as_deref().unwrap_or(given)
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// How many errors this diagnostic counts for: none for a warning, one for an
    /// error, and for a `more-errors` diagnostic the errors it stands for as well.
    pub fn errors_counted(&self) -> usize {
        if self.is_error() { 1 + self.omitted } else { 0 }
    }

    /// Whether the diagnostic points at or below a password-like key
    /// (`users.app.password.value`, `users.app.pasword`): what is there is a secret.
    pub fn points_into_secret(&self) -> bool {
        self.path.as_ref().is_some_and(|path| {
            path.segments()
                .iter()
                .any(|segment| matches!(segment, Segment::Key(key) if redact::is_secret_key(key)))
        })
    }

    /// The source line the diagnostic points at, as it may be quoted under it: values
    /// of password-like keys, and of the line when the diagnostic points into a secret,
    /// replaced by `***` ([`redact::yaml_line`]). `None` without a location or line.
    pub fn quoted_line(&self, lines: &[&str]) -> Option<MaskedLine> {
        let line = lines.get(self.location?.line.checked_sub(1)?)?;
        Some(redact::yaml_line(line, self.points_into_secret()))
    }

    /// Hides, in the message and the help, the secret values of the line the
    /// diagnostic points at, and URI credentials: the parser's messages quote the
    /// offending value, which under a `password` key is the password. Keys stay quoted,
    /// so the message still says what is wrong.
    pub fn hide_secrets(mut self, source: &str) -> Self {
        let lines: Vec<&str> = source.lines().collect();
        let hidden = self
            .quoted_line(&lines)
            .map(|line| line.hidden)
            .unwrap_or_default();
        let keys: Vec<String> = self
            .path
            .iter()
            .flat_map(|path| path.segments())
            .filter_map(|segment| match segment {
                Segment::Key(key) => Some(key.clone()),
                Segment::Index(_) => None,
            })
            .collect();
        let hidden: Vec<String> = hidden
            .into_iter()
            .filter(|value| !keys.contains(value))
            .collect();
        self.message = redact::hide_values(&self.message, &hidden);
        self.help = self.help.map(|help| redact::hide_values(&help, &hidden));
        self
    }
}

/// Most names a diagnostic's `affects` line shows; the rest are counted.
pub const MAX_AFFECTED_SHOWN: usize = 5;

/// The `affects` list as text: `` `a`, `b` and 3 more ``.
pub fn affects_text(names: &[String]) -> String {
    let shown: Vec<String> = names
        .iter()
        .take(MAX_AFFECTED_SHOWN)
        .map(|name| format!("`{name}`"))
        .collect();
    match names.len().saturating_sub(MAX_AFFECTED_SHOWN) {
        0 => shown.join(", "),
        rest => format!("{} and {rest} more", shown.join(", ")),
    }
}

/// Merges diagnostics that say the same thing at the same place and differ only in
/// what they affect: an inherited setting is checked once per consumer that inherits
/// it, and reported once. Keeps the order of first appearance.
pub fn merge_affected(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut merged: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
    let mut index: std::collections::HashMap<
        (Severity, &'static str, String, Option<SpecPath>),
        usize,
    > = std::collections::HashMap::new();
    for diagnostic in diagnostics {
        if diagnostic.affects.is_empty() {
            merged.push(diagnostic);
            continue;
        }
        let key = (
            diagnostic.severity,
            diagnostic.code,
            diagnostic.message.clone(),
            diagnostic.path.clone(),
        );
        match index.get(&key) {
            Some(&at) => {
                for name in diagnostic.affects {
                    if !merged[at].affects.contains(&name) {
                        merged[at].affects.push(name);
                    }
                }
            }
            None => {
                index.insert(key, merged.len());
                merged.push(diagnostic);
            }
        }
    }
    merged
}
