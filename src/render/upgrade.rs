//! `warren upgrade-check` output: human text, JSON and markdown for a pull-request
//! comment (as `plan` writes it), and what the formats it shares with `warren lint`
//! (GitHub annotations, SARIF: [`super::github`], [`super::sarif`]) need to know of it
//! ([`reporter`]).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::findings::{Reporter, Subject};
use crate::model::ObjectKind;
use crate::model::finding::{Finding, Severity};
use crate::model::upgrade_path::UPGRADABLE;
use crate::upgrade::{ChangeKind, Deprecated, Report, Source};

/// What was checked, in words: `the broker`, `defs.json`, `spec.yaml`.
fn checked(report: &Report) -> String {
    match &report.source {
        Source::Broker => "the broker".to_string(),
        Source::Definitions { file } | Source::Spec { file } => file.display().to_string(),
    }
}

/// The file findings without a file of their own point into (none for a broker).
fn given_file(report: &Report) -> Option<&Path> {
    match &report.source {
        Source::Broker => None,
        Source::Definitions { file } | Source::Spec { file } => Some(file),
    }
}

/// Upgrade-check, for the shared writers: a finding names its object, and points into
/// the file or spec checked (nowhere, for a broker) unless it names a file of its own.
pub fn reporter(report: &Report) -> Reporter<'_> {
    Reporter {
        title: "warren upgrade-check",
        file: given_file(report),
        subject: Subject::Object,
        fix_word: "fix",
        more: |id| format!(" (docs/upgrading.md, `{id}`)"),
    }
}

fn summary(report: &Report) -> String {
    [Severity::Error, Severity::Warning, Severity::Note]
        .iter()
        .map(|s| crate::text::count(report.count(*s), s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn deprecated_line(report: &Report) -> Option<String> {
    match &report.deprecated {
        Deprecated::NotABroker => None,
        Deprecated::CannotTell => Some(format!(
            "deprecated features: RabbitMQ {} cannot tell which are in use; warren judged from the definitions",
            report.from.version
        )),
        Deprecated::Reported(names) if names.is_empty() => {
            Some("deprecated features: the broker reports none in use".to_string())
        }
        Deprecated::Reported(names) => Some(format!(
            "deprecated features: the broker reports {} in use",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Text for people.
pub fn human(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    writeln!(
        out,
        "upgrade-check: {} runs RabbitMQ {} ({}), checked for {}",
        checked(report),
        report.from.version,
        match report.from.because {
            "broker" => "the broker's own version",
            "file" => "the file's `rabbitmq_version`",
            _ => "--from",
        },
        report.to
    )?;
    if let Some(line) = deprecated_line(report) {
        writeln!(out, "{line}")?;
    }
    writeln!(out)?;
    for group in groups(&report.findings) {
        let finding = group.first;
        let object = match group.members.as_slice() {
            [one] => one
                .object
                .as_ref()
                .map_or(String::new(), |o| format!("{o}: ")),
            many => format!("{}: ", objects_counted(many)),
        };
        writeln!(
            out,
            "{}[{}]: {object}{}",
            finding.severity.as_str(),
            finding.code,
            finding.message
        )?;
        match (&finding.file, finding.location) {
            _ if group.members.len() > 1 => {
                for line in members_listed(&group.members) {
                    writeln!(out, "  {line}")?;
                }
            }
            (Some(file), Some(at)) => {
                writeln!(out, "  --> {}:{}:{}", file.display(), at.line, at.column)?;
            }
            _ => {
                if let Some(pointer) = &finding.pointer {
                    writeln!(out, "  --> {pointer}")?;
                }
            }
        }
        if finding.code == "upgrade-path" {
            for step in &report.steps {
                writeln!(out, "  {} → {}: {}", step.from, step.to, step.before)?;
            }
        } else if let Some(fix) = &finding.help {
            writeln!(out, "  fix: {fix}")?;
        }
        if let Some(change) = &finding.upgrade().spec_change {
            writeln!(out, "  spec: {change}")?;
        }
        if finding.upgrade().reported_by_broker {
            writeln!(out, "  the broker reported it in use")?;
        }
        writeln!(out)?;
    }
    if !report.changes.is_empty() {
        writeln!(
            out,
            "compiled for {} instead of {}, the spec changes {}:",
            report.to,
            report.from.target,
            crate::text::count(report.changes.len(), "object")
        )?;
        for change in &report.changes {
            let sign = match change.change {
                ChangeKind::Added => '+',
                ChangeKind::Changed => '~',
                ChangeKind::Removed => '-',
            };
            let at = match (&change.file, change.location) {
                (Some(file), Some(at)) => {
                    format!(" ({}:{}:{})", file.display(), at.line, at.column)
                }
                _ => String::new(),
            };
            writeln!(out, "  {sign} {}{at}", change.object)?;
        }
        writeln!(out)?;
    }
    writeln!(out, "{}: {}", checked(report), summary(report))
}

/// Findings that say the same about several objects (one per quorum queue of a broker,
/// say), printed once with their objects listed: a report of 38 identical warnings
/// hides the one that differs. The machine formats keep one finding per object.
struct Group<'a> {
    first: &'a Finding,
    members: Vec<&'a Finding>,
}

fn groups(findings: &[Finding]) -> Vec<Group<'_>> {
    let joins = |finding: &Finding| finding.object.is_some() && finding.code != "upgrade-path";
    let same = |a: &Finding, b: &Finding| {
        let (detail_a, detail_b) = (a.upgrade(), b.upgrade());
        a.code == b.code
            && a.severity == b.severity
            && a.message == b.message
            && a.help == b.help
            && detail_a.spec_change == detail_b.spec_change
            && detail_a.managed_by == detail_b.managed_by
            && detail_a.reported_by_broker == detail_b.reported_by_broker
    };
    let mut groups: Vec<Group> = Vec::new();
    for finding in findings {
        if joins(finding)
            && let Some(group) = groups
                .iter_mut()
                .find(|group| joins(group.first) && same(group.first, finding))
        {
            group.members.push(finding);
            continue;
        }
        groups.push(Group {
            first: finding,
            members: vec![finding],
        });
    }
    groups
}

/// `38 queues`, or `3 objects` of several kinds.
fn objects_counted(members: &[&Finding]) -> String {
    let kinds: Vec<ObjectKind> = members
        .iter()
        .filter_map(|f| f.object.as_ref().map(|object| object.kind))
        .collect();
    match kinds.first() {
        Some(first) if kinds.iter().all(|kind| kind == first) => {
            crate::text::count(members.len(), first.as_str())
        }
        _ => crate::text::count(members.len(), "object"),
    }
}

/// One line per object of a group, with its place when it has one; past the first
/// few, how many more.
fn members_listed(members: &[&Finding]) -> Vec<String> {
    const SHOWN: usize = 8;
    let mut lines: Vec<String> = members
        .iter()
        .take(SHOWN)
        .map(|finding| {
            let object = finding
                .object
                .as_ref()
                .map_or(String::new(), ToString::to_string);
            match (&finding.file, finding.location) {
                (Some(file), Some(at)) => {
                    format!(
                        "--> {object} ({}:{}:{})",
                        file.display(),
                        at.line,
                        at.column
                    )
                }
                _ => format!("--> {object}"),
            }
        })
        .collect();
    let rest = members.len().saturating_sub(SHOWN);
    if rest > 0 {
        lines.push(format!("… and {rest} more (`--format json` lists each)"));
    }
    lines
}

/// The stable JSON document (`version` 1).
pub fn json_document(report: &Report) -> Value {
    json!({
        "version": 1,
        "source": report.source,
        "from": report.from,
        "to": report.to,
        "upgrade_path": report.steps,
        "deprecated_features": report.deprecated,
        "changes": report.changes.iter().map(|c| json!({
            "change": c.change,
            "object": c.object,
            "before": c.before,
            "after": c.after,
            "file": c.file,
            "line": c.location.map(|l| l.line),
            "column": c.location.map(|l| l.column),
        })).collect::<Vec<_>>(),
        "findings": report.findings.iter().map(|f| finding_json(report, f)).collect::<Vec<_>>(),
        "summary": {
            "errors": report.count(Severity::Error),
            "warnings": report.count(Severity::Warning),
            "notes": report.count(Severity::Note),
        },
    })
}

/// One finding of the JSON document, its fields in their documented order.
fn finding_json(report: &Report, finding: &Finding) -> Value {
    let detail = finding.upgrade();
    let file = finding.file.as_deref().or_else(|| given_file(report));
    json!({
        "id": finding.code,
        "severity": finding.severity.as_str(),
        "object": finding.object,
        "key": detail.key,
        "message": finding.message,
        "fix": finding.help.as_deref().unwrap_or_default(),
        "spec_change": detail.spec_change,
        "managed_by": detail.managed_by,
        "reported_by_broker": detail.reported_by_broker,
        "rule": detail.rule,
        "pointer": finding.pointer.as_ref().map(ToString::to_string),
        "spec_path": finding.path.as_ref().map(ToString::to_string),
        "file": file.map(|p| p.display().to_string()),
        "line": finding.location.map(|l| l.line),
        "column": finding.location.map(|l| l.column),
    })
}

/// Text for a markdown table cell: pipes escaped, `<`, `>` and `&` as entities, one line.
fn cell(text: &str) -> String {
    crate::model::shorten::middle(text, 600)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
        .replace('|', "\\|")
}

/// The upgrade-path table of `model::upgrade_path`, as markdown (docs/upgrading.md
/// holds it as rendered; a test checks they agree).
pub fn upgrade_path_table() -> String {
    let mut out = String::from(
        "| to | in place from | before the step | source |\n| --- | --- | --- | --- |\n",
    );
    for line in UPGRADABLE {
        let from: Vec<String> = line.from.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | [release notes]({}) |",
            line.to,
            from.join(", "),
            cell(line.before),
            line.source
        );
    }
    out
}

/// Markdown for a pull-request comment.
pub fn markdown(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    let mut text = String::new();
    let icon = if report.count(Severity::Error) > 0 {
        "❌"
    } else if report.count(Severity::Warning) > 0 {
        "⚠️"
    } else {
        "✅"
    };
    let _ = writeln!(
        text,
        "### {icon} warren upgrade-check: RabbitMQ {} → {}\n",
        report.from.version, report.to
    );
    let _ = writeln!(text, "{} ({}).\n", cell(&checked(report)), summary(report));
    if let Some(line) = deprecated_line(report) {
        let _ = writeln!(text, "{}\n", cell(&line));
    }
    if !report.steps.is_empty() {
        let _ = writeln!(
            text,
            "#### Upgrade path\n\n| step | before it |\n| --- | --- |"
        );
        for step in &report.steps {
            let _ = writeln!(
                text,
                "| {} → {} | {} ([release notes]({})) |",
                step.from,
                step.to,
                cell(step.before),
                step.source
            );
        }
        text.push('\n');
    }
    let listed: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.code != "upgrade-path" || report.steps.is_empty())
        .collect();
    if !listed.is_empty() {
        let _ = writeln!(
            text,
            "#### Findings\n\n| | id | object | what | fix |\n| --- | --- | --- | --- | --- |"
        );
        for f in listed {
            let object = f.object.as_ref().map_or(String::new(), ToString::to_string);
            let place = match (&f.file, f.location) {
                (Some(file), Some(at)) => {
                    format!(" ({}:{}:{})", file.display(), at.line, at.column)
                }
                _ => String::new(),
            };
            let mut fix = f.help.clone().unwrap_or_default();
            if let Some(change) = &f.upgrade().spec_change {
                let _ = write!(fix, " Spec: {change}");
            }
            let _ = writeln!(
                text,
                "| {} | `{}` | {} | {} | {} |",
                f.severity.as_str(),
                f.code,
                cell(&format!("{object}{place}")),
                cell(&f.message),
                cell(&fix)
            );
        }
        text.push('\n');
    }
    if !report.changes.is_empty() {
        let _ = writeln!(
            text,
            "<details><summary>Compiled for {} instead of {}: {}</summary>\n\n| change | object |\n| --- | --- |",
            report.to,
            report.from.target,
            crate::text::count(report.changes.len(), "object")
        );
        for change in &report.changes {
            let word = match change.change {
                ChangeKind::Added => "added",
                ChangeKind::Changed => "changed",
                ChangeKind::Removed => "removed",
            };
            let _ = writeln!(text, "| {word} | {} |", cell(&change.object.to_string()));
        }
        text.push_str("\n</details>\n");
    }
    out.write_all(crate::text::visible(&text).as_bytes())
}
