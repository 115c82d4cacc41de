//! The `upgrade-path` finding: the in-place steps from the line a cluster runs to the
//! target (`model::upgrade_path`), and what to do before each, or why there is no
//! such path.

use super::Running;
use crate::model::TargetVersion;
use crate::model::finding::{Finding, Severity};
use crate::model::upgrade_path::{self, Line, NoPath, Step};

/// The `upgrade-path` finding, and the steps.
pub(super) fn finding(from: &Running, to: TargetVersion) -> (Vec<Step>, Finding) {
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
