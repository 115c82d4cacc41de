//! Reads a spec file: YAML → typed [`Spec`], with positions for later checks.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;

use super::source_map::{Location, SourceMap};
use super::types::Spec;

/// A loaded spec with the text and positions it came from.
#[derive(Debug, Clone)]
pub struct SpecFile {
    /// The path as given by the user (used in messages).
    pub path: PathBuf,
    /// The file's text.
    pub source: String,
    /// Positions of every YAML node.
    pub source_map: SourceMap,
    /// The typed spec.
    pub spec: Spec,
}

/// Reads and parses the spec at `path`.
pub fn load_file(path: &Path) -> Result<SpecFile, Vec<Diagnostic>> {
    let source = std::fs::read_to_string(path).map_err(|err| {
        vec![Diagnostic::error(
            "io",
            format!("cannot read {}: {err}", path.display()),
        )]
    })?;
    load_str(path, source)
}

/// Parses `source` as the spec of the file `path`.
pub fn load_str(path: &Path, source: String) -> Result<SpecFile, Vec<Diagnostic>> {
    let source_map = SourceMap::build(&source);
    let options = serde_saphyr::options! {
        with_snippet: false,
    };
    match serde_saphyr::from_str_with_options::<Spec>(&source, options) {
        Ok(spec) => Ok(SpecFile {
            path: path.to_path_buf(),
            source,
            source_map,
            spec,
        }),
        Err(err) => {
            let mut diagnostic = yaml_error_diagnostic(&err);
            diagnostic.path = diagnostic
                .location
                .and_then(|location| source_map.path_at(location))
                .filter(|path| !path.segments().is_empty());
            Err(vec![diagnostic])
        }
    }
}

/// Turns a deserializer error into a diagnostic, adding a did-you-mean for unknown keys.
fn yaml_error_diagnostic(err: &serde_saphyr::Error) -> Diagnostic {
    let location = err.location().map(|loc| Location {
        line: loc.line() as usize,
        column: loc.column() as usize,
    });
    let raw = err.without_snippet().to_string();
    let message = strip_location_suffix(&raw);
    let mut diagnostic = Diagnostic::error("syntax", message.clone());
    diagnostic.location = location;
    if let Some((unknown, expected)) = parse_unknown_field(&message) {
        diagnostic.code = "unknown-key";
        diagnostic.message = format!("unknown key `{unknown}`");
        diagnostic.help = Some(match crate::suggest::closest(&unknown, &expected) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("expected one of: {}", expected.join(", ")),
        });
    } else if message.contains("missing field") {
        diagnostic.code = "missing-key";
    } else if message.contains("unknown variant") {
        diagnostic.code = "invalid-value";
        if let Some((given, expected)) = parse_unknown_variant(&message) {
            diagnostic.message = format!("invalid value `{given}`");
            diagnostic.help = Some(match crate::suggest::closest(&given, &expected) {
                Some(best) => format!("did you mean `{best}`? (one of: {})", expected.join(", ")),
                None => format!("expected one of: {}", expected.join(", ")),
            });
        }
    } else if !message.contains("while parsing") && !message.contains("scan") {
        diagnostic.code = "invalid-value";
    }
    diagnostic
}

/// serde-saphyr appends " at line X column Y" to some messages; positions are shown
/// separately.
fn strip_location_suffix(message: &str) -> String {
    let trimmed = match message.rfind(" at line ") {
        Some(index) => &message[..index],
        None => message,
    };
    trimmed.trim().to_string()
}

/// Extracts the names out of serde's "unknown field `x`, expected one of `a`, `b`".
fn parse_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.split("unknown field `").nth(1)?;
    let (unknown, tail) = rest.split_once('`')?;
    Some((unknown.to_string(), backticked(tail)))
}

/// Extracts the names out of serde's "unknown variant `x`, expected one of `a`, `b`".
fn parse_unknown_variant(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.split("unknown variant `").nth(1)?;
    let (unknown, tail) = rest.split_once('`')?;
    Some((unknown.to_string(), backticked(tail)))
}

/// The names after "expected one of" (or "expected"), with or without backticks.
fn backticked(text: &str) -> Vec<String> {
    let list = match text.split_once("expected one of ") {
        Some((_, list)) => list,
        None => match text.split_once("expected ") {
            Some((_, list)) => list,
            None => return Vec::new(),
        },
    };
    list.split(", ")
        .map(|name| name.trim().trim_matches('`').to_string())
        .filter(|name| !name.is_empty())
        .collect()
}
