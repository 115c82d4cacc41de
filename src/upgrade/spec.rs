//! Checking a spec: compiled for the line the cluster runs and for the target, what
//! the target refuses in it, the hazards of what it has the broker hold now (each at
//! the spec's line, with the change to make in the spec), and the objects that compile
//! differently for the target.

use super::{ChangeKind, Deprecated, Report, Running, Source, compare, definitions, spec_change};
use crate::compile;
use crate::model::finding::{Finding, Severity};
use crate::model::{Definitions, ObjectId, TargetVersion};
use crate::spec::SpecFile;
use crate::spec::diagnostic::Diagnostic;

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
    let mut findings = definitions::of_definitions(&before.definitions, report.from.target, to);
    for finding in &mut findings {
        let Some(object) = &finding.object else {
            continue;
        };
        let path = before.origins.get(object).cloned();
        let mut change = spec_change::spec_change(finding.code, object.kind, path.as_ref());
        if finding.code == "quorum-default-delivery-limit"
            && let Some(after) = &after
            && writes_delivery_limit(&after.definitions, object, to)
        {
            change = Some(format!(
                "none: compiled for {to} the spec sets a delivery limit on this queue itself (see the changes); apply it right after the upgrade"
            ));
        }
        finding.upgrade_mut().spec_change = change;
        if let Some(path) = &path
            && let Some(place) = file.locate(path)
        {
            finding.file = Some(place.file.to_path_buf());
            finding.location = Some(place.location);
        }
        finding.path = path;
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
            finding.path = d.path;
            finding.file = d.file;
            finding.location = d.location;
            finding
        })
        .collect()
}
