//! Checking a live broker: its definitions, its version, the deprecated features it
//! reports in use (each a finding of its own, and a mark on the findings about the
//! objects that use them), and the specs that manage its objects.

use super::{Deprecated, Detailed, Report, Running, Source, definitions, spec_change};
use crate::broker::{BrokerError, Client};
use crate::model::TargetVersion;
use crate::model::deprecated_features::{self, Phase};
use crate::model::finding::{Finding, Severity};
use crate::model::upgrade_path::Line;

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
    let mut findings = definitions::of_definitions(&definitions, report.from.target, to);
    if let Deprecated::Reported(names) = &report.deprecated {
        for finding in &mut findings {
            let feature = match finding.code {
                "transient-nonexclusive-queue" => "transient_nonexcl_queues",
                "queue-master-locator" => "queue_master_locator",
                "classic-mirroring" => "classic_queue_mirroring",
                _ => continue,
            };
            finding.upgrade_mut().reported_by_broker = names.iter().any(|n| n == feature);
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
    spec_change::managed_by_specs(&definitions, to, &mut findings);
    report.findings.extend(findings);
    Ok(report.finish())
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
    finding.upgrade_mut().reported_by_broker = true;
    finding
}
