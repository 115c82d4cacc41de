//! `warren upgrade-check`: what in a broker (or a definitions file, or a spec) breaks,
//! changes meaning or needs doing first when its cluster is upgraded to another
//! RabbitMQ line.
//!
//! Three inputs, one report: a live broker ([`against_broker`]: its definitions, its
//! version and the deprecated features it says are in use), a definitions file
//! ([`of_definitions_file`]) or a spec compiled for the line it runs now and for the
//! line upgraded to ([`of_spec`]). The findings are the hazards of `hazards.rs` (each
//! from the facts of `model/`), every rule the target's own import enforces
//! (`definitions_file::rules::check`, the one owner of those), the deprecated features
//! the broker reported, and the upgrade path (`model::upgrade_path`).

mod compare;
mod hazards;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::broker::{BrokerError, Client};
use crate::compile;
use crate::definitions_file::locate::{self, JsonPointer, PointerToken};
use crate::definitions_file::{self, rules};
use crate::model::deprecated_features::{self, Phase};
use crate::model::record::records;
use crate::model::upgrade_path::{self, Line, NoPath, Step};
use crate::model::version::Because;
use crate::model::{Definitions, ObjectId, ObjectKind, TargetVersion};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{Location, SpecFile, SpecPath};

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

/// One kind of finding: its stable id and what it is about.
pub struct Check {
    /// The id findings carry.
    pub id: &'static str,
    /// What it finds, in one line.
    pub summary: &'static str,
}

/// Every kind of finding, in the order docs/upgrading.md explains them.
pub const CHECKS: &[Check] = &[
    Check {
        id: "upgrade-path",
        summary: "the in-place upgrade path from the line the cluster runs to the target, and what to do before each step",
    },
    Check {
        id: "classic-mirroring",
        summary: "a policy or operator policy with `ha-*` keys: 4.0 removed classic queue mirroring and refuses such a policy",
    },
    Check {
        id: "classic-queue-version-1",
        summary: "`x-queue-version: 1` (refused from 4.3) or a `queue-version: 1` policy key (ignored from 4.3)",
    },
    Check {
        id: "quorum-default-delivery-limit",
        summary: "a quorum queue without a delivery limit: from 4.0 it gets 20, and messages redelivered more often are dead-lettered or dropped",
    },
    Check {
        id: "quorum-nack-not-counted",
        summary: "a quorum queue with a delivery limit: on 4.3 `basic.nack` with requeue no longer counts toward it",
    },
    Check {
        id: "delayed-message-exchange",
        summary: "an `x-delayed-message` exchange: the plugin has no release for 4.3",
    },
    Check {
        id: "queue-master-locator",
        summary: "`x-queue-master-locator` or a `queue-master-locator` policy key: refused from 4.3; use the leader locator",
    },
    Check {
        id: "transient-nonexclusive-queue",
        summary: "a non-durable queue that is not exclusive: the deprecated feature `transient_nonexcl_queues`",
    },
    Check {
        id: "queue-mode-lazy",
        summary: "`x-queue-mode` or `queue-mode`: no effect since 3.12",
    },
    Check {
        id: "consumer-timeout-classic",
        summary: "a consumer timeout on a classic queue or stream: refused as an argument, without effect as a policy key on 4.3",
    },
    Check {
        id: "deprecated-feature-used",
        summary: "a deprecated feature the broker reports in use, with its phase on the target",
    },
    Check {
        id: "import-refused",
        summary: "anything else the target's own definitions import refuses (a rule of docs/definitions-files.md)",
    },
    Check {
        id: "target-refuses-spec",
        summary: "a spec that does not compile for the target: what to change in it",
    },
    Check {
        id: "spec-invalid",
        summary: "a spec that does not compile for the line the cluster runs now",
    },
];

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
        let (steps, finding) = path_finding(&from, to);
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

/// The `upgrade-path` finding, and the steps.
fn path_finding(from: &Running, to: TargetVersion) -> (Vec<Step>, Finding) {
    let to_line = Line::of(&to.to_string()).expect("a target is a line");
    match upgrade_path::path(from.line, to_line) {
        Ok(steps) => {
            let lines: Vec<String> = std::iter::once(from.line.to_string())
                .chain(steps.iter().map(|s| s.to.to_string()))
                .collect();
            let fix = steps
                .iter()
                .map(|s| format!("{} → {}: {}", s.from, s.to, s.before))
                .collect::<Vec<_>>()
                .join("; ");
            let finding = Finding::new(
                "upgrade-path",
                Severity::Note,
                format!(
                    "upgrade in place in {}: {} (the latest patch of each line first, every feature flag enabled before each step)",
                    crate::text::count(steps.len(), "step"),
                    lines.join(" → ")
                ),
            )
            .fix(fix);
            (steps, finding)
        }
        Err(NoPath::Same) => (
            Vec::new(),
            Finding::new(
                "upgrade-path",
                Severity::Note,
                format!("RabbitMQ {} is already on the {to} line: no upgrade step", from.version),
            )
            .fix("nothing to upgrade; the findings are what the line itself refuses or ignores"),
        ),
        Err(NoPath::Downgrade) => (
            Vec::new(),
            Finding::new(
                "upgrade-path",
                Severity::Error,
                format!("RabbitMQ {} is newer than {to}: RabbitMQ does not support downgrades", from.version),
            )
            .fix(format!("deploy a new {to} cluster and move the definitions and messages to it (blue-green)")),
        ),
        Err(NoPath::Unknown) => (
            Vec::new(),
            Finding::new(
                "upgrade-path",
                Severity::Warning,
                format!("warren knows no in-place path from RabbitMQ {} to {to}", from.version),
            )
            .fix("see https://www.rabbitmq.com/docs/upgrade, or deploy a new cluster and move to it (blue-green)"),
        ),
    }
}

/// Checks a definitions file: `from` is `--from`, else the version that wrote the file.
pub fn of_definitions_file(
    path: &Path,
    vhost: Option<&str>,
    from: Option<Running>,
    to: TargetVersion,
) -> Result<Report, String> {
    let read = definitions_file::read(path, vhost, from.as_ref().map(|f| f.target))?;
    if let (Some(vhost), None) = (vhost, &read.scoped_to) {
        return Err(format!(
            "{}: --vhost {vhost} is for a vhost-scoped file, and this file holds a whole broker's definitions (every object names its vhost)",
            path.display()
        ));
    }
    let from = match (from, &read.target.because) {
        (Some(from), _) => from,
        (None, Because::WrittenBy(version) | Because::OlderThanSupported(version)) => {
            Running::of(version, "file")?
        }
        (None, _) => {
            return Err(format!(
                "{}: the file does not say which RabbitMQ wrote it (`rabbitmq_version`): give the version the cluster runs with --from",
                path.display()
            ));
        }
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut report = Report::new(
        Source::Definitions {
            file: path.to_path_buf(),
        },
        from,
        to,
        Deprecated::NotABroker,
    );
    let mut findings = of_definitions(&read.definitions, report.from.target, to);
    managed_by_specs(&read.definitions, to, &mut findings);
    for finding in &mut findings {
        if let Some(pointer) = &finding.pointer
            && !text.is_empty()
        {
            let (line, column) =
                locate::line_column(text.as_bytes(), locate::offset(&text, pointer));
            finding.location = Some(Location { line, column });
            finding.file = Some(path.to_path_buf());
        }
    }
    report.findings.extend(findings);
    Ok(report.finish())
}

/// Checks a live broker: its definitions, its version, the deprecated features it
/// reports in use, and the ownership records of the specs that manage its objects.
pub async fn against_broker(client: &Client, to: TargetVersion) -> Result<Report, BrokerError> {
    let version = client.version().await?;
    let (definitions, used) = tokio::try_join!(
        client.read_definitions(&[]),
        client.deprecated_features_used()
    )?;
    let from = Running::of(&version, "broker").unwrap_or(Running {
        line: Line::of(&version).unwrap_or(Line { major: 0, minor: 0 }),
        version: version.clone(),
        target: TargetVersion::of_broker(&version),
        because: "broker",
    });
    let deprecated = match used {
        Some(names) => Deprecated::Reported(names),
        None => Deprecated::CannotTell,
    };
    let mut report = Report::new(Source::Broker, from, to, deprecated);
    let mut findings = of_definitions(&definitions, report.from.target, to);
    if let Deprecated::Reported(names) = &report.deprecated {
        for finding in &mut findings {
            let feature = match finding.id {
                "transient-nonexclusive-queue" => "transient_nonexcl_queues",
                "queue-master-locator" => "queue_master_locator",
                "classic-mirroring" => "classic_queue_mirroring",
                _ => continue,
            };
            finding.reported_by_broker = names.iter().any(|n| n == feature);
        }
        findings.extend(names.iter().map(|name| deprecated_used(name, to)));
    } else {
        findings.push(
            Finding::new(
                "deprecated-feature-used",
                Severity::Note,
                format!("RabbitMQ {version} cannot tell which deprecated features are in use (the API came with 3.13): warren judged from the definitions alone"),
            )
            .fix("check clients for what definitions do not show (`basic.qos` with `global`, AMQP 1.0 address formats) once the cluster runs 3.13"),
        );
    }
    managed_by_specs(&definitions, to, &mut findings);
    report.findings.extend(findings);
    Ok(report.finish())
}

/// Names, on each finding, the spec whose ownership record lists its object (in a
/// broker's definitions or a file exported from one), with the change to make in that
/// spec instead of by hand: a managed object is changed in its spec, or the next apply
/// undoes the fix.
fn managed_by_specs(definitions: &Definitions, to: TargetVersion, findings: &mut [Finding]) {
    let Ok(owners) = records(&definitions.global_parameters) else {
        return;
    };
    for finding in findings {
        let Some(object) = &finding.object else {
            continue;
        };
        let Some((spec, _)) = owners
            .iter()
            .find(|(_, record)| record.object_ids().contains(object))
        else {
            continue;
        };
        finding.managed_by = Some(spec.clone());
        if finding.id == "quorum-default-delivery-limit" {
            // Whether the spec sets the limit itself depends on what it says about the
            // queue, which only the spec knows: no hand-made policy.
            finding.fix = format!(
                "spec `{spec}` manages the queue (its ownership record lists it): `warren upgrade-check SPEC --to {to}` with that spec says whether, compiled for {to}, it sets the limit itself (warren's retry ladders do); apply the spec right after the upgrade, and set `delivery_limit` on the consumer where it does not"
            );
            continue;
        }
        finding.spec_change = spec_change(finding.id, object.kind, None).map(|change| {
            format!("in spec `{spec}` (its ownership record lists the object): {change}; then `warren apply`")
        });
    }
}

/// The finding of a deprecated feature the broker reported in use.
fn deprecated_used(name: &str, to: TargetVersion) -> Finding {
    let known = deprecated_features::find(name);
    let phase = known.map_or(Phase::PermittedByDefault, |f| f.phase_on(to));
    let severity = match (phase, known.and_then(|f| f.measured)) {
        (Phase::Removed, _) | (Phase::DeniedByDefault, None) => Severity::Error,
        (Phase::DeniedByDefault, Some(_)) => Severity::Warning,
        _ => Severity::Note,
    };
    let what = known.map_or(String::new(), |f| format!(" ({})", f.what));
    let measured = known
        .and_then(|f| f.measured)
        .map_or(String::new(), |m| format!("; {m}"));
    let mut finding = Finding::new(
        "deprecated-feature-used",
        severity,
        format!(
            "the broker reports the deprecated feature `{name}`{what} in use; on {to} it is {}{measured}",
            phase.as_str()
        ),
    )
    .key(name)
    .fix(match phase {
        Phase::Removed => format!("stop using it before the upgrade: {to} has no way to permit it"),
        Phase::DeniedByDefault => format!("stop using it before the upgrade, or permit it on every node (`deprecated_features.permit.{name} = true`) until then"),
        _ => "plan to stop using it: a later line denies it".to_string(),
    });
    finding.reported_by_broker = true;
    finding
}

/// The hazards of `definitions` on `to`, then the rules of `to`'s import they break
/// that no hazard explains, each pointing at its place in the document
/// (`serde_json::to_value(definitions)`).
fn of_definitions(
    definitions: &Definitions,
    from: TargetVersion,
    to: TargetVersion,
) -> Vec<Finding> {
    let mut findings = hazards::find(definitions, from, to);
    let document = serde_json::to_value(definitions).expect("definitions serialize");
    for broken in rules::check(&document, to) {
        if findings.iter().any(|f| f.covers.contains(&broken.path)) {
            continue;
        }
        let mut finding = Finding::new(
            "import-refused",
            Severity::Error,
            format!("RabbitMQ {to} refuses it on import: {}", broken.message),
        )
        .fix(format!(
            "change the value before the upgrade so that {to} accepts it (docs/definitions-files.md, rule `{}`)",
            broken.rule
        ));
        finding.rule = Some(broken.rule);
        finding.object = object_at(definitions, &broken.path);
        finding.pointer = Some(broken.path);
        findings.push(finding);
    }
    findings
}

/// The object a document's value belongs to.
fn object_at(definitions: &Definitions, pointer: &JsonPointer) -> Option<ObjectId> {
    let [PointerToken::Key(section), PointerToken::Index(index), ..] = pointer.0.as_slice() else {
        return None;
    };
    Some(match section.as_str() {
        "queues" => {
            let q = definitions.queues.get(*index)?;
            ObjectId::in_vhost(ObjectKind::Queue, &q.vhost, &q.name)
        }
        "exchanges" => {
            let e = definitions.exchanges.get(*index)?;
            ObjectId::in_vhost(ObjectKind::Exchange, &e.vhost, &e.name)
        }
        "policies" => {
            let p = definitions.policies.get(*index)?;
            ObjectId::in_vhost(ObjectKind::Policy, &p.vhost, &p.name)
        }
        "parameters" => {
            let p = definitions.parameters.get(*index)?;
            match p.as_operator_policy() {
                Some(_) => ObjectId::in_vhost(ObjectKind::OperatorPolicy, &p.vhost, &p.name),
                None => ObjectId::in_vhost(
                    ObjectKind::Parameter,
                    &p.vhost,
                    format!("{}/{}", p.component, p.name),
                ),
            }
        }
        "permissions" => {
            let p = definitions.permissions.get(*index)?;
            ObjectId::in_vhost(ObjectKind::Permission, &p.vhost, &p.user)
        }
        "topic_permissions" => {
            let p = definitions.topic_permissions.get(*index)?;
            ObjectId::in_vhost(ObjectKind::TopicPermission, &p.vhost, &p.user)
        }
        "vhosts" => ObjectId::global(ObjectKind::Vhost, &definitions.vhosts.get(*index)?.name),
        "users" => ObjectId::global(ObjectKind::User, &definitions.users.get(*index)?.name),
        _ => return None,
    })
}

/// The change to make in a spec for a finding about an object of `kind` it writes at
/// `path` (a consumer's work queue, a plain queue, a policy).
fn spec_change(id: &str, kind: ObjectKind, path: Option<&SpecPath>) -> Option<String> {
    let consumer = path.is_some_and(|p| p.to_string().contains("consumers"));
    let policy = matches!(kind, ObjectKind::Policy | ObjectKind::OperatorPolicy);
    Some(match id {
        "classic-mirroring" => "remove the `ha-*` keys from the policy's `definition` (the policy itself when nothing else is left); queues that need replicas become quorum queues".into(),
        "classic-queue-version-1" if policy => "remove `queue-version` from the policy's `definition`".into(),
        "classic-queue-version-1" => "remove `x-queue-version` from the queue's `arguments`".into(),
        "queue-master-locator" if policy => "replace `queue-master-locator` with `queue-leader-locator` in the policy's `definition`".into(),
        "queue-master-locator" => "replace `x-queue-master-locator` with `x-queue-leader-locator` in the queue's `arguments`".into(),
        "queue-mode-lazy" if policy => "remove `queue-mode` from the policy's `definition`".into(),
        "queue-mode-lazy" => "remove `x-queue-mode` from the queue's `arguments`".into(),
        "consumer-timeout-classic" if policy => "give the policy `apply_to: quorum_queues`, or remove `consumer-timeout`".into(),
        "consumer-timeout-classic" => "remove `x-consumer-timeout` from the queue's `arguments`, or make it `type: quorum`".into(),
        "transient-nonexclusive-queue" => "set `durable: true` on the queue".into(),
        "quorum-default-delivery-limit" if consumer => "set `delivery_limit` on the consumer (or in `defaults`): a number works on every line; `unlimited` compiles to -1, which only 4.0 and later accept".into(),
        "quorum-default-delivery-limit" => "set a delivery limit: a `delivery-limit` policy over the queue, or `x-delivery-limit` in its `arguments` for a new queue".into(),
        "delayed-message-exchange" => "remove the exchange and give the consumers that need delays a retry ladder (`retry: { delays: [...] }`)".into(),
        _ => return None,
    })
}

/// Checks a spec: compiled for the line the cluster runs (`from`) and for `to`. What
/// `to` refuses in the spec (its compile errors), the hazards of the definitions the
/// spec has the broker hold now, and the objects that compile differently for `to`;
/// each pointing at the spec's line.
pub fn of_spec(file: &SpecFile, from: Running, to: TargetVersion) -> Report {
    let mut report = Report::new(
        Source::Spec {
            file: file.path.clone(),
        },
        from,
        to,
        Deprecated::NotABroker,
    );
    let compile_for = |target| {
        compile::compile(
            file,
            &compile::Options {
                target,
                secrets: None,
            },
        )
    };
    let before = match compile_for(report.from.target) {
        Ok(compiled) => compiled,
        Err(diagnostics) => {
            let line = report.from.target;
            report.findings.extend(compile_errors(
                diagnostics,
                "spec-invalid",
                &format!(
                    "the spec does not compile for RabbitMQ {line}, the line the cluster runs"
                ),
            ));
            return report.finish();
        }
    };
    let after = match compile_for(to) {
        Ok(compiled) => Some(compiled),
        Err(diagnostics) => {
            report.findings.extend(compile_errors(
                diagnostics,
                "target-refuses-spec",
                &format!("RabbitMQ {to} refuses what the spec compiles to"),
            ));
            None
        }
    };
    let mut findings = of_definitions(&before.definitions, report.from.target, to);
    for finding in &mut findings {
        let Some(object) = &finding.object else {
            continue;
        };
        let path = before.origins.get(object).cloned();
        finding.spec_change = spec_change(finding.id, object.kind, path.as_ref());
        if finding.id == "quorum-default-delivery-limit"
            && let Some(after) = &after
            && writes_delivery_limit(&after.definitions, object, to)
        {
            finding.spec_change = Some(format!(
                "none: compiled for {to} the spec sets a delivery limit on this queue itself (see the changes); apply it right after the upgrade"
            ));
        }
        if let Some(path) = &path
            && let Some(place) = file.locate(path)
        {
            finding.file = Some(place.file.to_path_buf());
            finding.location = Some(place.location);
        }
        finding.spec_path = path;
        finding.pointer = None;
    }
    report.findings.extend(findings);
    if let Some(after) = &after {
        let mut changes = compare::changes(&before.definitions, &after.definitions);
        for change in &mut changes {
            let origins = match change.change {
                ChangeKind::Removed => &before.origins,
                _ => &after.origins,
            };
            if let Some(path) = origins.get(&change.object)
                && let Some(place) = file.locate(path)
            {
                change.file = Some(place.file.to_path_buf());
                change.location = Some(place.location);
            }
        }
        report.changes = changes;
    }
    report.finish()
}

/// Whether the definitions compiled for `to` give the queue a delivery limit of their
/// own (an argument or a policy), not the broker's default.
fn writes_delivery_limit(definitions: &Definitions, queue: &ObjectId, to: TargetVersion) -> bool {
    use crate::model::queue_facts::{operator_policies, queue_facts};
    let operators = operator_policies(definitions);
    queue_facts(definitions, &operators, to)
        .iter()
        .any(|facts| {
            facts.queue.name == queue.name
                && Some(&facts.queue.vhost) == queue.vhost.as_ref()
                && (facts.queue.arguments.contains_key("x-delivery-limit")
                    || facts
                        .policy
                        .is_some_and(|p| p.definition.contains_key("delivery-limit"))
                    || facts
                        .operator_policy
                        .as_ref()
                        .is_some_and(|p| p.definition.contains_key("delivery-limit")))
        })
}

/// A spec's compile errors as findings.
fn compile_errors(diagnostics: Vec<Diagnostic>, id: &'static str, why: &str) -> Vec<Finding> {
    diagnostics
        .into_iter()
        .filter(Diagnostic::is_error)
        .map(|d| {
            let mut finding = Finding::new(
                id,
                Severity::Error,
                format!("{why}: {} [{}]", d.message, d.code),
            )
            .fix(
                d.help
                    .clone()
                    .unwrap_or_else(|| "change the spec as the message says".into()),
            );
            finding.spec_path = d.path;
            finding.file = d.file;
            finding.location = d.location;
            finding
        })
        .collect()
}
