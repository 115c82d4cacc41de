//! Diagnostics as text, rustc style: message, file:line:column, the source line with a
//! caret, the spec path, and the fix.

use std::io::{self, Write};
use std::path::Path;

use crate::spec::diagnostic::{Diagnostic, Severity};

/// Writes every diagnostic, then a one-line summary ending in "; nothing was written"
/// when there are errors (what every command that writes something says).
pub fn render(
    out: &mut dyn Write,
    file: &Path,
    source: Option<&str>,
    diagnostics: &[Diagnostic],
) -> io::Result<()> {
    render_with(out, file, source, diagnostics, "; nothing was written")
}

/// Like [`render`], with the given ending for the summary line.
pub fn render_with(
    out: &mut dyn Write,
    file: &Path,
    source: Option<&str>,
    diagnostics: &[Diagnostic],
    ending: &str,
) -> io::Result<()> {
    // Split once: looking lines up from the start for each of thousands of findings
    // made rendering quadratic in the size of the spec.
    let lines: Option<Vec<&str>> = source.map(|s| s.lines().collect());
    for diagnostic in diagnostics {
        render_one(out, file, lines.as_deref(), diagnostic)?;
    }
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    if errors > 0 {
        writeln!(
            out,
            "{}: {errors} error{}{}{ending}",
            file.display(),
            plural(errors),
            if warnings > 0 {
                format!(", {warnings} warning{}", plural(warnings))
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn render_one(
    out: &mut dyn Write,
    file: &Path,
    lines: Option<&[&str]>,
    diagnostic: &Diagnostic,
) -> io::Result<()> {
    let severity = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    writeln!(
        out,
        "{severity}[{}]: {}",
        diagnostic.code, diagnostic.message
    )?;
    match diagnostic.location {
        Some(location) => {
            writeln!(
                out,
                "  --> {}:{}:{}",
                file.display(),
                location.line,
                location.column
            )?;
            // Masked: a password-like key's value never shows (`Diagnostic::quoted_line`).
            if let Some(line) = lines.and_then(|lines| diagnostic.quoted_line(lines)) {
                // A caret that pointed into a hidden value points at its mask.
                let column = match line.mask_column {
                    Some(mask) => location.column.min(mask + 1),
                    None => location.column,
                };
                let line = line.text;
                let number = location.line.to_string();
                let gutter = " ".repeat(number.len());
                let caret_offset: String = line
                    .chars()
                    .take(column.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                writeln!(out, "{gutter} |")?;
                writeln!(out, "{number} | {line}")?;
                writeln!(out, "{gutter} | {caret_offset}^")?;
            }
        }
        None => writeln!(out, "  --> {}", file.display())?,
    }
    if let Some(path) = &diagnostic.path {
        writeln!(out, "  = at: {path}")?;
    }
    if let Some(help) = &diagnostic.help {
        writeln!(out, "  = help: {help}")?;
    }
    writeln!(out)
}
