//! Findings as a SARIF 2.1.0 log, for code-scanning UIs: the one writer of `warren lint
//! --format sarif` and `warren upgrade-check --format sarif`. The log has one run;
//! its rules are the command's registry ([`Rule`]), and each result points into its
//! file and names what it is about as a logical location.

use serde_json::{Value, json};

use super::findings::{Reporter, Subject};
use crate::model::finding::Finding;
use crate::model::rule::{Level, Rule};

/// The rule as SARIF describes it: its summary, its explanation when it has one, where
/// to read more, and the level it reports at when it has one of its own.
fn rule<C>(reporter: &Reporter, rule: &Rule<C>) -> Value {
    let mut described = json!({
        "id": rule.id,
        "shortDescription": {"text": rule.summary},
    });
    if let Some(explanation) = rule.explanation {
        described["fullDescription"] = json!({"text": explanation});
    }
    let said = rule.explanation.unwrap_or(rule.summary);
    described["help"] = json!({"text": format!("{said}{}", (reporter.more)(rule.id))});
    if let Some(level) = rule.level {
        described["defaultConfiguration"] = json!({"level": match level {
            Level::Deny => "error",
            Level::Warn => "warning",
            Level::Allow => "none",
        }});
    }
    described
}

fn result(reporter: &Reporter, finding: &Finding) -> Value {
    let mut location = json!({});
    if let Some(file) = reporter.file_of(finding) {
        location["physicalLocation"] =
            json!({"artifactLocation": {"uri": file.display().to_string()}});
        if let Some(at) = finding.location {
            location["physicalLocation"]["region"] =
                json!({"startLine": at.line, "startColumn": at.column});
        }
    }
    let logical = match reporter.subject {
        Subject::Place => finding.path.as_ref().map(ToString::to_string),
        Subject::Object => finding.object.as_ref().map(ToString::to_string),
    };
    if let Some(name) = logical {
        location["logicalLocations"] = json!([{"fullyQualifiedName": name}]);
    }
    let mut result = json!({
        "ruleId": finding.code,
        "level": finding.severity.as_str(),
        "message": {"text": reporter.one_line(finding)},
    });
    if location.as_object().is_some_and(|l| !l.is_empty()) {
        result["locations"] = json!([location]);
    }
    result
}

/// The log of `findings`, made by the rules of `rules`.
pub fn document<C>(reporter: &Reporter, rules: &[Rule<C>], findings: &[Finding]) -> Value {
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "warren",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|r| rule(reporter, r)).collect::<Vec<_>>(),
            }},
            "results": findings.iter().map(|f| result(reporter, f)).collect::<Vec<_>>(),
        }],
    })
}
