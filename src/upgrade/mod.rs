//! `warren upgrade-check`: what in a broker (or a definitions file, or a spec) breaks,
//! changes meaning or needs doing first when its cluster is upgraded to another
//! RabbitMQ line.
//!
//! Three inputs, one report: a live broker ([`against_broker`], `broker.rs`: its
//! definitions, its version and the deprecated features it says are in use), a
//! definitions file ([`of_definitions_file`], `definitions.rs`) or a spec compiled for
//! the line it runs now and for the line upgraded to ([`of_spec`], `spec.rs`). The
//! findings ([`Finding`], the type every report of warren's shares, each with the id
//! of one of [`CHECKS`]) are the hazards of `hazards.rs` (each from the facts of
//! `model/`), every rule the target's own import enforces
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

use crate::model::finding::{Finding, Severity};
use crate::model::json_pointer::JsonPointer;
use crate::model::upgrade_path::{Line, Step};
use crate::model::{ObjectId, TargetVersion};
use crate::spec::Location;

/// What upgrade-check's checks set on a finding beyond what every finding has
/// ([`crate::model::finding::UpgradeDetail`]).
trait Detailed {
    /// Names the argument, policy key or deprecated feature it is about.
    fn key(self, key: &str) -> Self;
    /// Marks a value of the definitions document the finding explains, and points at
    /// it unless the finding points somewhere already: the import rule that refuses
    /// the value is not reported besides.
    fn covering(self, pointer: JsonPointer) -> Self;
}

impl Detailed for Finding {
    fn key(mut self, key: &str) -> Finding {
        self.upgrade_mut().key = Some(key.to_string());
        self
    }

    fn covering(mut self, pointer: JsonPointer) -> Finding {
        if self.pointer.is_none() {
            self.pointer = Some(pointer.clone());
        }
        self.upgrade_mut().covers.push(pointer);
        self
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

/// One object that the spec compiles differently for the target (in the JSON document
/// as `render::upgrade` lays it out, so it derives no `Serialize` of its own).
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
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
