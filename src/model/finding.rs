//! What a check found: the one type of every report warren makes about a spec or a
//! topology. A spec's diagnostics (`spec::diagnostic::Diagnostic` is this type), the
//! findings of the lint rules and those of `warren upgrade-check` are all a
//! [`Finding`], with one [`Severity`], so that one writer per output format
//! (`render/`) writes any of them.
//!
//! A finding says what is wrong (`code`, `message`), how bad it is (`severity`), what
//! it is about and where (`object`, a spec `path`, a JSON `pointer` into a definitions
//! document, the `file` and `location` of its line) and how to fix it (`help`). What
//! only some findings carry is kept apart: the things an inherited setting affects
//! (`affects`), how many errors a `more-errors` diagnostic stands for (`omitted`), and
//! what upgrade-check adds ([`UpgradeDetail`]).
//!
//! Messages and help texts of [`Finding::error`], [`Finding::warning`] and
//! [`Finding::help`] are bounded when they are made ([`super::shorten`]): a value quoted
//! from a hostile spec cannot make a finding unbounded.

use std::path::{Path, PathBuf};

use super::id::ObjectId;
use super::json_pointer::JsonPointer;
use super::redact::{self, MaskedLine};
use super::spec_path::{Location, Segment, SpecPath};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// It cannot be used as written: the spec does not compile, a rule at the `deny`
    /// level fails, the upgraded broker refuses it.
    Error,
    /// It works, but probably not as meant, or the upgraded broker ignores it or gives
    /// it another meaning.
    Warning,
    /// For the user to know (upgrade-check's upgrade path, say).
    Note,
}

impl Severity {
    /// The word, as every format writes it: `error`, `warning`, `note`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How serious it is.
    pub severity: Severity,
    /// The stable id of its kind: a diagnostic's code (`unknown-key`), a lint rule's id,
    /// an upgrade-check check's id. Empty only while a lint rule's check makes it
    /// ([`Finding::on`]).
    pub code: &'static str,
    /// What is wrong, in one sentence.
    pub message: String,
    /// The object it is about, when it is about one.
    pub object: Option<ObjectId>,
    /// Where in the spec's structure.
    pub path: Option<SpecPath>,
    /// Where in a definitions document (a file's, or the broker's), when the finding is
    /// about one rather than a spec.
    pub pointer: Option<JsonPointer>,
    /// The file `location` is in: a spec written in several files (a directory) has
    /// one per file, and a finding is printed with the file that wrote the value.
    /// `None`: the file the command was given.
    pub file: Option<PathBuf>,
    /// Where in the file.
    pub location: Option<Location>,
    /// How to fix it, when that is clear (lint and the spec's diagnostics call it
    /// `help`, upgrade-check calls it `fix`).
    pub help: Option<String>,
    /// What inherits the setting at `path` and is affected by it (consumers that take a
    /// delay from `defaults`): one finding at the line that sets the value, naming
    /// them all, instead of one per consumer at a place the file does not have.
    pub affects: Vec<Affected>,
    /// For the last error of a file with too many to show (`more-errors`): how many
    /// more errors it stands for, so that counts stay true.
    pub omitted: usize,
    /// What upgrade-check adds; `None` for every other finding. Boxed: a spec of
    /// thousands of consumers makes thousands of diagnostics that never need it.
    pub upgrade: Option<Box<UpgradeDetail>>,
}

/// One of the things a finding about an inherited setting affects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affected {
    /// Its name, as the finding lists it (`orders.email`).
    pub name: String,
    /// Its own place in the spec, where an inline `lint: { allow: [...] }` takes it off
    /// the list; `None` when the check did not say.
    pub at: Option<SpecPath>,
}

/// What a finding of `warren upgrade-check` says beyond what every finding says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpgradeDetail {
    /// The argument, policy key or deprecated feature it is about.
    pub key: Option<String>,
    /// The change to make in the spec that manages the object, when one does.
    pub spec_change: Option<String>,
    /// The spec whose ownership record lists the object (on a live broker, or in a
    /// definitions file exported from one).
    pub managed_by: Option<String>,
    /// The broker itself reported the feature in use (`GET /api/deprecated-features/used`).
    pub reported_by_broker: bool,
    /// The rule of the target's import that refuses it (`import-refused`).
    pub rule: Option<&'static str>,
    /// The values of the document this finding explains better than the import rule
    /// that refuses them: those rules' findings are left out. No format writes it.
    pub covers: Vec<JsonPointer>,
}

/// The detail of a finding that has none.
static NO_UPGRADE_DETAIL: UpgradeDetail = UpgradeDetail {
    key: None,
    spec_change: None,
    managed_by: None,
    reported_by_broker: false,
    rule: None,
    covers: Vec::new(),
};

impl Finding {
    /// A finding as it is said, unshortened: warren's own words about what it read.
    pub fn new(code: &'static str, severity: Severity, message: impl Into<String>) -> Finding {
        Finding {
            severity,
            code,
            message: message.into(),
            object: None,
            path: None,
            pointer: None,
            file: None,
            location: None,
            help: None,
            affects: Vec::new(),
            omitted: 0,
            upgrade: None,
        }
    }

    /// An error without position; the message is bounded.
    pub fn error(code: &'static str, message: impl Into<String>) -> Finding {
        Finding::new(
            code,
            Severity::Error,
            super::shorten::message(&message.into()),
        )
    }

    /// A warning without position; the message is bounded.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            severity: Severity::Warning,
            ..Finding::error(code, message)
        }
    }

    /// A finding about an object, made by a lint rule's check: `lint::run` gives it
    /// the rule's id and the severity of the rule's level, and its place in the spec.
    pub fn on(object: ObjectId, message: impl Into<String>) -> Finding {
        Finding::new("", Severity::Warning, message).about(object)
    }

    /// A finding about a place in the spec, made by a lint rule's check (see
    /// [`Finding::on`]).
    pub fn in_spec(path: SpecPath, message: impl Into<String>) -> Finding {
        Finding::new("", Severity::Warning, message).at(path)
    }

    /// Attaches the spec path (the location is resolved later from the source map).
    pub fn at(mut self, path: SpecPath) -> Finding {
        self.path = Some(path);
        self
    }

    /// Names the object it is about.
    pub fn about(mut self, object: ObjectId) -> Finding {
        self.object = Some(object);
        self
    }

    /// Names one thing that inherits the setting this finding is about (see
    /// [`Finding::affects`]).
    pub fn affecting(mut self, name: impl Into<String>) -> Finding {
        self.affects.push(Affected {
            name: name.into(),
            at: None,
        });
        self
    }

    /// Names the things that inherit the setting, each with its own place in the spec.
    pub fn affecting_each(mut self, affects: Vec<(String, SpecPath)>) -> Finding {
        self.affects.extend(
            affects
                .into_iter()
                .map(|(name, at)| Affected { name, at: Some(at) }),
        );
        self
    }

    /// Attaches a fix hint; the text is bounded.
    pub fn help(mut self, help: impl Into<String>) -> Finding {
        self.help = Some(super::shorten::message(&help.into()));
        self
    }

    /// Sets how to fix it, as given (unbounded): warren's own advice about objects it
    /// names, written whole by a lint rule or an upgrade-check check. An empty text
    /// is no advice.
    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        let fix = fix.into();
        self.help = (!fix.is_empty()).then_some(fix);
        self
    }

    /// Sets a fix hint of several lines (an example to copy). Only warren's own text,
    /// which is why it is `'static`: text from a spec goes through [`Self::help`],
    /// which shortens it and escapes line breaks.
    pub fn help_lines(mut self, help: &'static str) -> Finding {
        self.help = Some(help.to_string());
        self
    }

    /// Sets the fix hint of a finding already collected; the text is bounded.
    pub fn hint(&mut self, help: impl Into<String>) -> &mut Finding {
        self.help = Some(super::shorten::message(&help.into()));
        self
    }

    /// What upgrade-check added to it (nothing, for any other finding).
    pub fn upgrade(&self) -> &UpgradeDetail {
        self.upgrade.as_deref().unwrap_or(&NO_UPGRADE_DETAIL)
    }

    /// What upgrade-check adds to it, made on first use.
    pub fn upgrade_mut(&mut self) -> &mut UpgradeDetail {
        self.upgrade.get_or_insert_default()
    }

    /// The names of what it affects.
    pub fn affected_names(&self) -> impl Iterator<Item = &str> {
        self.affects.iter().map(|affected| affected.name.as_str())
    }

    /// The file the finding points into: its own, else `given` (the path the command
    /// was given).
    pub fn file_or<'a>(&'a self, given: &'a Path) -> &'a Path {
        self.file.as_deref().unwrap_or(given)
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// How many errors this finding counts for: none for a warning or a note, one for
    /// an error, and for a `more-errors` diagnostic the errors it stands for as well.
    pub fn errors_counted(&self) -> usize {
        if self.is_error() { 1 + self.omitted } else { 0 }
    }

    /// Whether the finding points at or below a password-like key
    /// (`users.app.password.value`, `users.app.pasword`): what is there is a secret.
    pub fn points_into_secret(&self) -> bool {
        self.path.as_ref().is_some_and(|path| {
            path.segments()
                .iter()
                .any(|segment| matches!(segment, Segment::Key(key) if redact::is_secret_key(key)))
        })
    }

    /// The source line the finding points at, as it may be quoted under it: values
    /// of password-like keys, and of the line when the finding points into a secret,
    /// replaced by `***` ([`redact::yaml_line`]). `None` without a location or line.
    pub fn quoted_line(&self, lines: &[&str]) -> Option<MaskedLine> {
        let line = lines.get(self.location?.line.checked_sub(1)?)?;
        Some(redact::yaml_line(line, self.points_into_secret()))
    }

    /// Hides, in the message and the help, the secret values of the line the finding
    /// points at, and URI credentials: the parser's messages quote the offending
    /// value, which under a `password` key is the password. Keys stay quoted, so the
    /// message still says what is wrong.
    pub fn hide_secrets(mut self, source: &str) -> Finding {
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
