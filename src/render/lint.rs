//! Lint results for CI systems: GitHub workflow commands, SARIF 2.1.0 and JSON.
//! (The human format is [`super::diagnostics`].)

use std::io::{self, Write};
use std::path::Path;

use serde_json::{Value, json};

use crate::lint::{Level, RULES, default_level};
use crate::spec::diagnostic::Diagnostic;

fn severity(diagnostic: &Diagnostic) -> &'static str {
    diagnostic.severity.as_str()
}

fn full_message(diagnostic: &Diagnostic) -> String {
    let mut message = diagnostic.message.clone();
    if !diagnostic.affects.is_empty() {
        message.push_str(&format!(
            " (affects {})",
            crate::spec::diagnostic::affects_text(&diagnostic.affects)
        ));
    }
    if let Some(help) = &diagnostic.help {
        message.push_str(&format!(" (help: {help})"));
    }
    message
}

/// Escapes per GitHub's workflow-command rules.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `::error file=…,line=…,col=…,title=…::message` lines, each with the file the
/// diagnostic points into (`file`, the path given, when it names none).
pub fn github(out: &mut dyn Write, file: &Path, diagnostics: &[Diagnostic]) -> io::Result<()> {
    for diagnostic in diagnostics {
        let mut properties = vec![format!(
            "file={}",
            escape_property(&diagnostic.file_or(file).display().to_string())
        )];
        if let Some(location) = diagnostic.location {
            properties.push(format!("line={}", location.line));
            properties.push(format!("col={}", location.column));
        }
        properties.push(format!(
            "title={}",
            escape_property(&format!("warren {}", diagnostic.code))
        ));
        writeln!(
            out,
            "::{} {}::{}",
            severity(diagnostic),
            properties.join(","),
            escape_data(&full_message(diagnostic))
        )?;
    }
    Ok(())
}

/// The stable JSON document: `file` is the path given (a file or a directory), each
/// diagnostic's `file` the file its line is in.
pub fn json_document(file: &Path, diagnostics: &[Diagnostic]) -> Value {
    let errors: usize = diagnostics.iter().map(Diagnostic::errors_counted).sum();
    let warnings = diagnostics.iter().filter(|d| !d.is_error()).count();
    json!({
        "version": 1,
        "file": file.display().to_string(),
        "diagnostics": diagnostics
            .iter()
            .map(|d| super::diagnostics::json_value(d, file, Some(severity(d))))
            .collect::<Vec<_>>(),
        "summary": {"errors": errors, "warnings": warnings},
    })
}

/// A SARIF 2.1.0 log with one run; each result's location is in the file the
/// diagnostic points into.
pub fn sarif_document(file: &Path, diagnostics: &[Diagnostic]) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.explanation},
                "help": {"text": format!("{}\n\nRun `warren rules {}` for a bad and a good example.", rule.explanation.unwrap_or_default(), rule.id)},
                "defaultConfiguration": {"level": match default_level(rule) {
                    Level::Deny => "error",
                    Level::Warn => "warning",
                    Level::Allow => "none",
                }},
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|d| {
            let uri = d.file_or(file).display().to_string();
            let mut region = json!({});
            if let Some(location) = d.location {
                region = json!({"startLine": location.line, "startColumn": location.column});
            }
            let mut location = json!({"physicalLocation": {"artifactLocation": {"uri": uri}}});
            if d.location.is_some() {
                location["physicalLocation"]["region"] = region;
            }
            if let Some(path) = &d.path {
                location["logicalLocations"] = json!([{"fullyQualifiedName": path.to_string()}]);
            }
            json!({
                "ruleId": d.code,
                "level": severity(d),
                "message": {"text": full_message(d)},
                "locations": [location],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "warren",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Location, SpecPath};

    fn sample() -> Vec<Diagnostic> {
        let mut diagnostic =
            Diagnostic::error("dead-letter-cycle-dropped", "cycle, with: 100% loss")
                .at(SpecPath::from_keys(["vhosts", "v"]))
                .help("fix it");
        diagnostic.location = Some(Location { line: 3, column: 5 });
        vec![diagnostic]
    }

    #[test]
    fn github_annotations_escape_and_point_at_the_line() {
        let mut out = Vec::new();
        github(&mut out, Path::new("specs/a,b.yaml"), &sample()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "::error file=specs/a%2Cb.yaml,line=3,col=5,title=warren dead-letter-cycle-dropped::cycle, with: 100%25 loss (help: fix it)\n"
        );
    }

    #[test]
    fn sarif_has_rules_results_and_regions() {
        let log = sarif_document(Path::new("a.yaml"), &sample());
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        assert!(run["tool"]["driver"]["rules"].as_array().unwrap().len() >= 20);
        assert_eq!(run["results"][0]["ruleId"], "dead-letter-cycle-dropped");
        assert_eq!(
            run["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
    }
}
