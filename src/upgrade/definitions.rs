//! Checking a definitions file, and what every input comes down to: the hazards of a
//! set of definitions on the target, and the rules of the target's own import they
//! break that no hazard explains, each at its place in the definitions document.

use std::path::Path;

use super::{Deprecated, Report, Running, Source, hazards, spec_change};
use crate::definitions_file::locate::{self, JsonPointer, PointerToken};
use crate::definitions_file::{self, rules};
use crate::model::finding::{Finding, Severity};
use crate::model::version::Because;
use crate::model::{Definitions, ObjectId, ObjectKind, TargetVersion};
use crate::spec::Location;

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
    spec_change::managed_by_specs(&read.definitions, to, &mut findings);
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

/// The hazards of `definitions` on `to`, then the rules of `to`'s import they break
/// that no hazard explains, each pointing at its place in the document
/// (`serde_json::to_value(definitions)`).
pub(super) fn of_definitions(
    definitions: &Definitions,
    from: TargetVersion,
    to: TargetVersion,
) -> Vec<Finding> {
    let mut findings = hazards::find(definitions, from, to);
    let document = serde_json::to_value(definitions).expect("definitions serialize");
    for broken in rules::check(&document, to) {
        if findings
            .iter()
            .any(|f| f.upgrade().covers.contains(&broken.path))
        {
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
        finding.upgrade_mut().rule = Some(broken.rule);
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
