//! Findings as GitHub Actions workflow commands (`::error file=…,line=…,col=…,title=…::message`),
//! which GitHub shows as annotations on a pull request's lines: the one writer of
//! `warren lint --format github` and `warren upgrade-check --format github`.

use std::io::{self, Write};

use super::findings::Reporter;
use crate::model::finding::{Finding, Severity};

/// Escapes per GitHub's workflow-command rules.
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The workflow command of a severity (GitHub calls a note a `notice`).
fn command(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "notice",
    }
}

/// One annotation per finding: in its file (or the one the command was given) at its
/// line and column when it has them, titled with its code.
pub fn annotations(
    out: &mut dyn Write,
    reporter: &Reporter,
    findings: &[Finding],
) -> io::Result<()> {
    for finding in findings {
        let mut properties = Vec::new();
        if let Some(file) = reporter.file_of(finding) {
            properties.push(format!(
                "file={}",
                escape_property(&file.display().to_string())
            ));
        }
        if let Some(at) = finding.location {
            properties.push(format!("line={}", at.line));
            properties.push(format!("col={}", at.column));
        }
        properties.push(format!(
            "title={}",
            escape_property(&format!("{} {}", reporter.title, finding.code))
        ));
        writeln!(
            out,
            "::{} {}::{}",
            command(finding.severity),
            properties.join(","),
            escape_data(&reporter.one_line(finding))
        )?;
    }
    Ok(())
}
