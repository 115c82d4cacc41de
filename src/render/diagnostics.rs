//! Diagnostics as text, rustc style: message, file:line:column, the source line with a
//! caret, the spec path, and the fix. Each diagnostic is printed with its own file (a
//! spec directory has several) and quotes that file's line.

use std::io::{self, Write};
use std::path::Path;

use crate::model::shorten;
use crate::spec::Sources;
use crate::spec::diagnostic::{Affected, Diagnostic};

/// Most characters of a source line quoted under a diagnostic: a generated spec can
/// hold a 1 MB line, and the caret only needs the text around the column.
pub const EXCERPT_WIDTH: usize = 120;
/// Most characters of the `at:` path (its keys come from the spec).
const MAX_PATH: usize = 200;
/// Warnings of one rule printed in full; the rest of that rule's warnings are said once,
/// counted, with their places (a generated spec of 10,000 consumers otherwise printed
/// 10,000 copies of one warning). Errors are always printed in full.
const WARNINGS_IN_FULL: usize = 3;
/// Places listed for the warnings of a rule that are not printed in full.
const PLACES_LISTED: usize = 8;
/// Most names a diagnostic's `affects` line shows; the rest are counted.
const MAX_AFFECTED_SHOWN: usize = 5;

/// The `affects` list as text: `` `a`, `b` and 3 more ``.
pub(super) fn affects_text(affects: &[Affected]) -> String {
    let shown: Vec<String> = affects
        .iter()
        .take(MAX_AFFECTED_SHOWN)
        .map(|affected| format!("`{}`", affected.name))
        .collect();
    match affects.len().saturating_sub(MAX_AFFECTED_SHOWN) {
        0 => shown.join(", "),
        rest => format!("{} and {rest} more", shown.join(", ")),
    }
}

/// One diagnostic as a JSON object, with the fields every JSON document of warren
/// gives it (lint's, and the error document of a failed command), in one order;
/// `severity` for documents that carry warnings too. Only the `more-errors`
/// diagnostic of a file with too many errors to list has `omitted`: how many it
/// stands for.
pub fn json_value(
    diagnostic: &Diagnostic,
    file: &Path,
    severity: Option<&str>,
) -> serde_json::Value {
    use serde_json::json;
    let d = diagnostic;
    let mut item = serde_json::Map::new();
    item.insert("file".into(), json!(d.file_or(file).display().to_string()));
    item.insert("rule".into(), json!(d.code));
    if let Some(severity) = severity {
        item.insert("severity".into(), json!(severity));
    }
    item.insert("message".into(), json!(d.message));
    item.insert("path".into(), json!(d.path.as_ref().map(|p| p.to_string())));
    item.insert("line".into(), json!(d.location.map(|l| l.line)));
    item.insert("column".into(), json!(d.location.map(|l| l.column)));
    item.insert("help".into(), json!(d.help));
    item.insert(
        "affects".into(),
        json!(d.affected_names().collect::<Vec<_>>()),
    );
    if d.omitted > 0 {
        item.insert("omitted".into(), json!(d.omitted));
    }
    serde_json::Value::Object(item)
}

/// Writes every diagnostic, then, when there are errors, a one-line count of them
/// followed by `ending` (what the command did not do, e.g. "; nothing was written").
/// `file` is the path the command was given (a file or a directory): the file of a
/// diagnostic that names none, and the one the count is about; `sources` gives the
/// text of each file, for quoting lines.
pub fn render_with(
    out: &mut dyn Write,
    file: &Path,
    sources: &dyn Sources,
    diagnostics: &[Diagnostic],
    ending: &str,
) -> io::Result<()> {
    // Diagnostics are never colored: every escape character in them is a name's.
    super::visibly(out, false, |out| {
        render_all(out, file, sources, diagnostics, ending)
    })
}

fn render_all(
    out: &mut dyn Write,
    file: &Path,
    sources: &dyn Sources,
    diagnostics: &[Diagnostic],
    ending: &str,
) -> io::Result<()> {
    // Split each file once: looking lines up from the start for each of thousands of
    // findings made rendering quadratic in the size of the spec.
    let mut split: Vec<(&Path, Option<Vec<&str>>)> = Vec::new();
    let mut warnings_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for diagnostic in diagnostics.iter().filter(|d| !d.is_error()) {
        *warnings_of.entry(diagnostic.code).or_default() += 1;
    }
    // The warnings of a rule past the first few, in the order their rules first came.
    let mut held_back: Vec<(&str, Vec<&Diagnostic>)> = Vec::new();
    for diagnostic in diagnostics {
        if !diagnostic.is_error() && warnings_of[diagnostic.code] > WARNINGS_IN_FULL {
            match held_back
                .iter_mut()
                .find(|(code, _)| *code == diagnostic.code)
            {
                Some((_, rest)) => {
                    rest.push(diagnostic);
                    if rest.len() > WARNINGS_IN_FULL {
                        continue;
                    }
                }
                None => held_back.push((diagnostic.code, vec![diagnostic])),
            }
        }
        let path = diagnostic.file_or(file);
        let at = match split.iter().position(|(known, _)| *known == path) {
            Some(at) => at,
            None => {
                split.push((path, sources.text(path).map(split_lines)));
                split.len() - 1
            }
        };
        render_one(out, path, split[at].1.as_deref(), diagnostic)?;
    }
    for (code, warnings) in &held_back {
        render_rest(
            out,
            file,
            code,
            &warnings[WARNINGS_IN_FULL.min(warnings.len())..],
        )?;
    }
    let errors: usize = diagnostics.iter().map(Diagnostic::errors_counted).sum();
    let warnings = diagnostics.iter().filter(|d| !d.is_error()).count();
    if errors > 0 {
        writeln!(
            out,
            "{}: {}{}{ending}",
            file.display(),
            crate::text::count(errors, "error"),
            if warnings > 0 {
                format!(", {}", crate::text::count(warnings, "warning"))
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// The warnings of rule `code` not printed in full: one entry, counted, with the places
/// of the first few.
fn render_rest(
    out: &mut dyn Write,
    file: &Path,
    code: &str,
    rest: &[&Diagnostic],
) -> io::Result<()> {
    if rest.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "warning[{code}]: {} more {} of this kind, like those above",
        rest.len(),
        crate::text::noun_for(rest.len(), "warning")
    )?;
    let places: Vec<String> = rest
        .iter()
        .take(PLACES_LISTED)
        .map(|diagnostic| {
            let path = diagnostic.file_or(file).display();
            match diagnostic.location {
                Some(at) => format!("{path}:{}:{}", at.line, at.column),
                None => path.to_string(),
            }
        })
        .collect();
    let unlisted = rest.len().saturating_sub(PLACES_LISTED);
    writeln!(
        out,
        "  --> {}{}",
        places.join(", "),
        if unlisted > 0 {
            format!(", and {unlisted} more")
        } else {
            String::new()
        }
    )?;
    writeln!(
        out,
        "  = help: `warren lint --format json` (or `sarif`) lists each with its message"
    )?;
    writeln!(out)
}

fn render_one(
    out: &mut dyn Write,
    file: &Path,
    lines: Option<&[&str]>,
    diagnostic: &Diagnostic,
) -> io::Result<()> {
    let severity = diagnostic.severity.as_str();
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
                let (shown, caret_offset) = excerpt(&line, column);
                writeln!(out, "{gutter} |")?;
                writeln!(out, "{number} | {shown}")?;
                writeln!(out, "{gutter} | {caret_offset}^")?;
            }
        }
        None => writeln!(out, "  --> {}", file.display())?,
    }
    if let Some(path) = &diagnostic.path {
        writeln!(
            out,
            "  = at: {}",
            shorten::middle(&path.to_string(), MAX_PATH)
        )?;
    }
    if !diagnostic.affects.is_empty() {
        writeln!(out, "  = affects: {}", affects_text(&diagnostic.affects))?;
    }
    if let Some(help) = &diagnostic.help {
        // A help of several lines (an example to copy) keeps its lines under the first.
        let mut lines = help.lines();
        writeln!(out, "  = help: {}", lines.next().unwrap_or_default())?;
        for line in lines {
            writeln!(out, "          {line}")?;
        }
    }
    writeln!(out)
}

/// The lines of `source` as the YAML parser counts them: `\n`, `\r\n` and a lone `\r`
/// each end a line.
fn split_lines(source: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let bytes = source.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&source[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&source[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < bytes.len() {
        lines.push(&source[start..]);
    }
    lines
}

/// The part of `line` to quote for a caret at `column` (1-based, in characters): at most
/// [`EXCERPT_WIDTH`] characters around the column, with `…` where text was left out, and
/// control characters other than tabs shown as `�` so that one character stays one
/// column. Returns the text and the run of blanks (tabs kept) that puts the caret under
/// the column.
fn excerpt(line: &str, column: usize) -> (String, String) {
    let chars: Vec<char> = line.chars().collect();
    let at = column.saturating_sub(1).min(chars.len());
    let (start, end) = if chars.len() <= EXCERPT_WIDTH {
        (0, chars.len())
    } else {
        let start = at
            .saturating_sub(EXCERPT_WIDTH / 2)
            .min(chars.len() - EXCERPT_WIDTH);
        (start, start + EXCERPT_WIDTH)
    };
    let visible = |c: char| {
        if c.is_control() && c != '\t' {
            '\u{FFFD}'
        } else {
            c
        }
    };
    let mut shown = String::new();
    let mut caret = String::new();
    if start > 0 {
        shown.push(shorten::ELLIPSIS);
        caret.push(' ');
    }
    shown.extend(chars[start..end].iter().map(|&c| visible(c)));
    if end < chars.len() {
        shown.push(shorten::ELLIPSIS);
    }
    caret.extend(
        chars[start..at]
            .iter()
            .map(|&c| if c == '\t' { '\t' } else { ' ' }),
    );
    (shown, caret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Location, Texts};

    #[test]
    fn many_warnings_of_one_rule_are_said_once_past_the_first_few() {
        let at = |line: usize| Location { line, column: 3 };
        let mut diagnostics: Vec<Diagnostic> = (1..=12)
            .map(|n| {
                let mut warning =
                    Diagnostic::warning("classic-queue-in-retry-loop", format!("queue q{n}"));
                warning.location = Some(at(n));
                warning
            })
            .collect();
        let mut other = Diagnostic::warning("unused-exchange", "exchange x");
        other.location = Some(at(20));
        diagnostics.insert(5, other);
        let mut error = Diagnostic::error("unknown-key", "unknown key `delay`");
        error.location = Some(at(30));
        diagnostics.push(error);
        let mut out = Vec::new();
        render_with(
            &mut out,
            Path::new("w.yaml"),
            &Texts::default(),
            &diagnostics,
            "",
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        // The first three in full, the other rule's and the error too.
        for shown in [
            "queue q1",
            "queue q2",
            "queue q3",
            "exchange x",
            "unknown key `delay`",
        ] {
            assert!(text.contains(shown), "{shown}: {text}");
        }
        assert!(!text.contains("queue q4"), "{text}");
        assert!(
            text.contains("warning[classic-queue-in-retry-loop]: 9 more warnings of this kind, like those above\n  --> w.yaml:4:3, w.yaml:5:3, w.yaml:6:3, w.yaml:7:3, w.yaml:8:3, w.yaml:9:3, w.yaml:10:3, w.yaml:11:3, and 1 more\n"),
            "{text}"
        );
        // Counts are of every finding.
        assert!(text.ends_with("w.yaml: 1 error, 13 warnings\n"), "{text}");
    }

    #[test]
    fn lines_end_as_yaml_ends_them() {
        assert_eq!(split_lines("a\nb\r\nc\rd"), ["a", "b", "c", "d"]);
        assert_eq!(split_lines("a\n"), ["a"]);
    }

    #[test]
    fn short_lines_are_quoted_whole() {
        assert_eq!(
            excerpt("  key: value", 3),
            ("  key: value".into(), "  ".into())
        );
        assert_eq!(excerpt("\tkey", 2), ("\tkey".into(), "\t".into()));
    }

    #[test]
    fn long_lines_are_cut_around_the_column() {
        let line = format!("{}X{}", "a".repeat(500_000), "b".repeat(500_000));
        let (shown, caret) = excerpt(&line, 500_001);
        assert_eq!(shown.chars().count(), EXCERPT_WIDTH + 2);
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        assert_eq!(shown.chars().nth(caret.chars().count()), Some('X'));
    }

    #[test]
    fn the_ends_of_long_lines_keep_one_mark() {
        let line = "c".repeat(1_000);
        let (shown, caret) = excerpt(&line, 1);
        assert!(!shown.starts_with('…') && shown.ends_with('…'));
        assert_eq!(caret, "");
        let (shown, caret) = excerpt(&line, 1_000);
        assert!(shown.starts_with('…') && !shown.ends_with('…'));
        assert_eq!(caret.chars().count(), EXCERPT_WIDTH);
    }

    #[test]
    fn control_characters_do_not_reach_the_terminal() {
        let (shown, _) = excerpt("name: a\u{1b}[2Jb\0", 1);
        assert!(!shown.contains('\u{1b}') && !shown.contains('\0'));
    }
}
