//! Reads a spec file: YAML → typed [`Spec`], with positions for later checks.

use std::path::{Path, PathBuf};

use crate::spec::diagnostic::Diagnostic;

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
            if diagnostic.message.starts_with("expected a map")
                && points_at_list_item(&source, diagnostic.location)
            {
                diagnostic.help = Some(
                    "this is a list item: write `name:` entries without the leading `- `".into(),
                );
            }
            diagnostic.path = diagnostic
                .location
                .and_then(|location| source_map.path_at(location))
                .filter(|path| !path.is_root());
            Err(vec![diagnostic.hide_secrets(&source)])
        }
    }
}

/// Turns a deserializer error into a diagnostic, adding a did-you-mean for unknown keys
/// and plain words for the parser's structural messages.
fn yaml_error_diagnostic(err: &serde_saphyr::Error) -> Diagnostic {
    use serde_saphyr::Error as E;
    let location = err.location().map(|loc| Location {
        line: loc.line() as usize,
        column: loc.column() as usize,
    });
    let raw = strip_location_suffix(&err.without_snippet().to_string());
    let mut diagnostic = match err.without_snippet() {
        E::SerdeUnknownField {
            field, expected, ..
        } => {
            let expected: Vec<String> = expected.iter().map(|e| e.to_string()).collect();
            Diagnostic::error("unknown-key", format!("unknown key `{field}`")).help(
                match crate::suggest::closest(field, &expected) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!("expected one of: {}", expected.join(", ")),
                },
            )
        }
        E::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let expected: Vec<String> = expected.iter().map(|e| e.to_string()).collect();
            Diagnostic::error("invalid-value", format!("invalid value `{variant}`")).help(
                match crate::suggest::closest(variant, &expected) {
                    Some(best) => {
                        format!("did you mean `{best}`? (one of: {})", expected.join(", "))
                    }
                    None => format!("expected one of: {}", expected.join(", ")),
                },
            )
        }
        E::SerdeMissingField { field, .. } => {
            let diagnostic = Diagnostic::error("missing-key", format!("missing key `{field}`"));
            if *field == "version" {
                let mut diagnostic = diagnostic.help("add `version: 1` at the top of the file");
                diagnostic.location = Some(Location { line: 1, column: 1 });
                return diagnostic;
            }
            diagnostic
        }
        E::DuplicateMappingKey { key, .. } => Diagnostic::error(
            "duplicate-key",
            match key {
                Some(key) => format!("`{key}` appears twice in the same mapping"),
                None => "a key appears twice in the same mapping".to_string(),
            },
        )
        .help("rename one of the entries or merge them"),
        E::Unexpected { expected, .. } => Diagnostic::error(
            "invalid-type",
            format!("expected {}", plain_words(expected)),
        ),
        E::SerdeInvalidType {
            unexpected,
            expected,
            ..
        } => Diagnostic::error(
            "invalid-type",
            format!("expected {}, found {unexpected}", plain_words(expected)),
        ),
        E::ExternalMessage { .. } | E::Eof { .. } => Diagnostic::error("yaml-syntax", raw.clone()),
        // The offending line holds the password: renderers mask it (`quoted_line`).
        _ if raw.contains("password is never written") => {
            Diagnostic::error("clear-text-password", raw.clone())
        }
        _ => Diagnostic::error("invalid-value", raw.clone()),
    };
    diagnostic.location = location;
    diagnostic
}

fn points_at_list_item(source: &str, location: Option<Location>) -> bool {
    location
        .and_then(|at| {
            let line = source.lines().nth(at.line.checked_sub(1)?)?;
            line.chars().nth(at.column.checked_sub(1)?)
        })
        .is_some_and(|c| c == '-')
}

/// Rewrites the parser's structural vocabulary in the words of a YAML author.
fn plain_words(expected: &str) -> String {
    match expected {
        "mapping start" | "a mapping" | "map" => "a map (`key: value` entries)".to_string(),
        "sequence start" | "a sequence" | "sequence" => {
            "a list (`[a, b]` or `- a` lines)".to_string()
        }
        other => other.to_string(),
    }
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
