//! `warren lint` and `warren rules` output: the report for people, its JSON document,
//! and what the formats lint shares with `upgrade-check` (GitHub annotations, SARIF:
//! [`super::github`], [`super::sarif`]) need to know of lint ([`reporter`]). The text
//! of each finding is [`super::diagnostics`]'s.

use std::io::{self, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::findings::{Reporter, Subject};
use crate::lint::{Level, RULES, Rule, default_level};
use crate::spec::Sources;
use crate::spec::diagnostic::Diagnostic;

/// Lint, for the shared writers: a finding names its place in the spec, and the given
/// path is the file of a finding that names none.
pub fn reporter(file: &Path) -> Reporter<'_> {
    Reporter {
        title: "warren",
        file: Some(file),
        subject: Subject::Place,
        fix_word: "help",
        more: |id| format!("\n\nRun `warren rules {id}` for a bad and a good example."),
    }
}

/// The report for people: each finding with its line, then the count of errors (and
/// warnings), or, without errors, the count of warnings or that there is none.
pub fn human(
    out: &mut dyn Write,
    file: &Path,
    sources: &dyn Sources,
    diagnostics: &[Diagnostic],
) -> io::Result<()> {
    let result = super::diagnostics::render_with(out, file, sources, diagnostics, "");
    if !diagnostics.iter().any(Diagnostic::is_error) {
        let warnings = diagnostics.len();
        let _ = writeln!(
            out,
            "{}: {}",
            file.display(),
            if warnings == 0 {
                "no problems found".to_string()
            } else {
                crate::text::count(warnings, "warning")
            }
        );
    }
    result
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
            .map(|d| super::diagnostics::json_value(d, file, Some(d.severity.as_str())))
            .collect::<Vec<_>>(),
        "summary": {"errors": errors, "warnings": warnings},
    })
}

/// A rule's level as `warren rules` says it.
fn level_word(level: Level) -> &'static str {
    match level {
        Level::Deny => "error",
        Level::Warn => "warning",
        Level::Allow => "off",
    }
}

/// `warren rules`: every rule, its default level and what it catches.
pub fn rules(out: &mut dyn Write) -> io::Result<()> {
    let width = RULES.iter().map(|r| r.id.len()).max().unwrap_or(0);
    for rule in RULES {
        writeln!(
            out,
            "{:width$}  {:7}  {}",
            rule.id,
            level_word(default_level(rule)),
            rule.summary
        )?;
    }
    writeln!(
        out,
        "\n`warren rules ID` explains a rule with a bad and a good example."
    )
}

/// `warren rules ID`: the rule explained, with a spec it reports and the spec fixed.
pub fn rule(out: &mut dyn Write, rule: &Rule) -> io::Result<()> {
    writeln!(
        out,
        "{} ({} by default)\n",
        rule.id,
        level_word(default_level(rule))
    )?;
    writeln!(out, "{}\n", rule.summary)?;
    writeln!(out, "{}\n", rule.explanation.unwrap_or_default())?;
    writeln!(out, "Reported:\n\n{}\n", indent(rule.check.bad))?;
    writeln!(out, "Fixed:\n\n{}", indent(rule.check.good))?;
    writeln!(
        out,
        "Turn it off for one object with `lint: {{ allow: [{0}] }}` on it, or for the whole spec with a top-level `lint: {{ allow: [{0}] }}`.",
        rule.id
    )
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
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
        let file = Path::new("specs/a,b.yaml");
        crate::render::github::annotations(&mut out, &reporter(file), &sample()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "::error file=specs/a%2Cb.yaml,line=3,col=5,title=warren dead-letter-cycle-dropped::cycle, with: 100%25 loss (help: fix it)\n"
        );
    }

    #[test]
    fn sarif_has_rules_results_and_regions() {
        let file = Path::new("a.yaml");
        let log = crate::render::sarif::document(&reporter(file), RULES, &sample());
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
