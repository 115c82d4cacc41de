//! `warren upgrade-check`: what in a broker (or a definitions file, or a spec) breaks,
//! changes meaning or needs doing first when its cluster is upgraded to another
//! RabbitMQ line.
//!
//! Three inputs, one report: a live broker ([`against_broker`], `broker.rs`: its
//! definitions, its version and the deprecated features it says are in use), a
//! definitions file ([`of_definitions_file`], `definitions.rs`) or a spec compiled for
//! the line it runs now and for the line upgraded to ([`of_spec`], `spec.rs`). The
//! findings, each with the id of one of [`CHECKS`], are the hazards of `hazards.rs`
//! (each from the facts of `model/`), every rule the target's own import enforces
//! (`definitions_file::rules::check`, the one owner of those), the deprecated features
//! the broker reported, and the upgrade path (`path.rs`, from `model::upgrade_path`).
//! What to change in the spec that manages an object is `spec_change.rs`'s; how the
//! spec's objects change between the two lines, `compare.rs`'s.
//!
//! This file holds the report and what it is made of.

mod broker;
mod checks;
mod compare;
mod definitions;
mod hazards;
mod path;
mod spec;
mod spec_change;

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

pub use broker::against_broker;
pub use checks::CHECKS;
pub use definitions::of_definitions_file;
pub use spec::of_spec;

use crate::definitions_file::locate::JsonPointer;
use crate::model::upgrade_path::{Line, Step};
use crate::model::{ObjectId, TargetVersion};
use crate::spec::{Location, SpecPath};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The target refuses it: an import or a declare fails.
    Error,
    /// The target accepts it, but ignores it or gives it another meaning.
    Warning,
    /// For the user to know.
    Note,
}

impl Severity {
    /// The word, as every format writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Its stable id ([`CHECKS`]).
    pub id: &'static str,
    /// How serious it is.
    pub severity: Severity,
    /// The object it is about, when it is about one.
    pub object: Option<ObjectId>,
    /// The argument, policy key or feature it is about.
    pub key: Option<String>,
    /// What the target does, and why it matters.
    pub message: String,
    /// What to do.
    pub fix: String,
    /// The change to make in the spec that manages the object, when one does.
    pub spec_change: Option<String>,
    /// The spec whose ownership record lists the object (on a live broker, or in a
    /// definitions file exported from one).
    pub managed_by: Option<String>,
    /// The broker itself reported the feature in use (`GET /api/deprecated-features/used`).
    pub reported_by_broker: bool,
    /// The rule of the target's import that refuses it (`import-refused`).
    pub rule: Option<&'static str>,
    /// Where in the definitions document (a file's, or the broker's).
    #[serde(serialize_with = "pointer_text")]
    pub pointer: Option<JsonPointer>,
    /// Where in the spec.
    #[serde(serialize_with = "spec_path_text")]
    pub spec_path: Option<SpecPath>,
    /// The file `location` is in.
    pub file: Option<PathBuf>,
    /// Line and column in it.
    #[serde(skip)]
    pub location: Option<Location>,
    /// The values of the document this finding explains better than the import rule
    /// that refuses them: those rules' findings are left out.
    #[serde(skip)]
    covers: Vec<JsonPointer>,
}

fn pointer_text<S: serde::Serializer>(
    pointer: &Option<JsonPointer>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match pointer {
        Some(pointer) => s.collect_str(pointer),
        None => s.serialize_none(),
    }
}

fn spec_path_text<S: serde::Serializer>(path: &Option<SpecPath>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(path) => s.collect_str(path),
        None => s.serialize_none(),
    }
}

impl Finding {
    fn new(id: &'static str, severity: Severity, message: impl Into<String>) -> Finding {
        Finding {
            id,
            severity,
            object: None,
            key: None,
            message: message.into(),
            fix: String::new(),
            spec_change: None,
            managed_by: None,
            reported_by_broker: false,
            rule: None,
            pointer: None,
            spec_path: None,
            file: None,
            location: None,
            covers: Vec::new(),
        }
    }

    fn on(mut self, object: ObjectId) -> Finding {
        self.object = Some(object);
        self
    }

    fn key(mut self, key: &str) -> Finding {
        self.key = Some(key.to_string());
        self
    }

    fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = fix.into();
        self
    }

    fn covering(mut self, pointer: JsonPointer) -> Finding {
        if self.pointer.is_none() {
            self.pointer = Some(pointer.clone());
        }
        self.covers.push(pointer);
        self
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The version a cluster runs before the upgrade, and how warren knows.
#[derive(Debug, Clone, Serialize)]
pub struct Running {
    /// The version as the broker, the file or `--from` wrote it.
    pub version: String,
    /// Its release line.
    pub line: Line,
    /// The line warren checks and compiles for (the newest it supports not newer).
    pub target: TargetVersion,
    /// How warren knows: `broker`, `file` or `--from`.
    pub because: &'static str,
}

impl Running {
    /// The version `--from` gave (`3.13`, `3.13.7`): an error when it does not read as
    /// one warren can check.
    pub fn asked(version: &str) -> Result<Running, String> {
        Running::of(version, "--from")
    }

    fn of(version: &str, because: &'static str) -> Result<Running, String> {
        let line = Line::of(version).ok_or_else(|| {
            format!("`{version}` is not a RabbitMQ version (e.g. 3.13 or 3.13.7)")
        })?;
        let target = TargetVersion::for_broker(version).ok_or_else(|| {
            format!(
                "RabbitMQ {version} is older than every line warren checks (the oldest is {})",
                TargetVersion::ALL[0]
            )
        })?;
        Ok(Running {
            version: version.to_string(),
            line,
            target,
            because,
        })
    }
}

/// What was checked.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// A live broker.
    Broker,
    /// A definitions file.
    Definitions {
        /// The file.
        file: PathBuf,
    },
    /// A spec.
    Spec {
        /// The spec's file or directory.
        file: PathBuf,
    },
}

/// What the broker said about its deprecated features.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", content = "features", rename_all = "snake_case")]
pub enum Deprecated {
    /// Not a broker: warren judged from the definitions.
    NotABroker,
    /// The broker has no deprecated-features API (before 3.13) and cannot tell.
    CannotTell,
    /// The features the broker reported in use.
    Reported(Vec<String>),
}

/// How an object changes between the spec compiled for the two lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Compiled for the target only.
    Added,
    /// Compiled for both, differently.
    Changed,
    /// Compiled for the current line only.
    Removed,
}

/// One object that the spec compiles differently for the target.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Added, changed or removed.
    pub change: ChangeKind,
    /// The object.
    pub object: ObjectId,
    /// Its value compiled for the current line.
    pub before: Option<Value>,
    /// Its value compiled for the target.
    pub after: Option<Value>,
    /// The spec's file that writes it.
    pub file: Option<PathBuf>,
    /// Where in it.
    #[serde(skip)]
    pub location: Option<Location>,
}

impl Change {
    fn new(
        change: ChangeKind,
        object: ObjectId,
        before: Option<Value>,
        after: Option<Value>,
    ) -> Change {
        Change {
            change,
            object,
            before,
            after,
            file: None,
            location: None,
        }
    }
}

/// The report of one check.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What was checked.
    pub source: Source,
    /// The version it runs now.
    pub from: Running,
    /// The line it is upgraded to.
    pub to: TargetVersion,
    /// The in-place steps, empty when there is no path (the `upgrade-path` finding says why).
    pub steps: Vec<Step>,
    /// Deprecated features, as the broker reported them.
    pub deprecated: Deprecated,
    /// Objects the spec compiles differently for the target (a spec only).
    pub changes: Vec<Change>,
    /// The findings: errors first, then warnings, then notes.
    pub findings: Vec<Finding>,
}

impl Report {
    /// How many findings of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    fn new(source: Source, from: Running, to: TargetVersion, deprecated: Deprecated) -> Report {
        let (steps, finding) = path::finding(&from, to);
        Report {
            source,
            from,
            to,
            steps,
            deprecated,
            changes: Vec::new(),
            findings: vec![finding],
        }
    }

    fn finish(mut self) -> Report {
        self.findings.sort_by_key(|f| f.severity);
        self
    }
}
