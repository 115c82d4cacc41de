//! Translates the YAML parser's errors into diagnostics. The parser (serde-saphyr)
//! speaks of mapping starts, Rust types and budgets; a spec's author reads "expected a
//! map", "a whole number from 0 to 255", "the spec is empty" with the smallest spec to
//! copy. Kept apart from loading, which only decides what is read and in which order.

use crate::spec::diagnostic::Diagnostic;

use super::limits;
use super::source_map::{Location, SourceMap};

/// The help for an empty spec: how a spec starts, and the smallest one that builds
/// something (one consumer with the default retry ladder), ready to copy.
const SMALLEST_SPEC_HELP: &str =
    "a spec is a map of keys that starts with `version: 1`; the smallest useful one:
  version: 1
  vhosts:
    shop:
      services:
        orders:
          consumers:
            email:
              routing_keys: [order.paid]
(docs/spec.md describes every key)";

/// How the diagnostic of a key too long for YAML starts ([`is_long_key`]).
const LONG_KEY: &str = "this key is";

/// Whether `diagnostic` is about a key longer than YAML reads as a key: the parser
/// read the line as something else, so what follows it cannot be read reliably.
pub(super) fn is_long_key(diagnostic: &Diagnostic) -> bool {
    diagnostic.message.starts_with(LONG_KEY) && diagnostic.message.contains("YAML reads keys")
}

/// The diagnostic for a spec file the YAML parser refused: what went wrong in the words
/// of a YAML author, where, and the spec path there (for a document within the limits),
/// with any secret in the quoted text hidden.
pub(super) fn parse_error_diagnostic(source: &str, err: &serde_saphyr::Error) -> Diagnostic {
    let mut diagnostic = yaml_error_diagnostic(err);
    if is_empty_document(source) {
        diagnostic = Diagnostic::error("empty-spec", "the spec is empty: it holds no YAML")
            .help_lines(SMALLEST_SPEC_HELP);
        diagnostic.location = Some(Location { line: 1, column: 1 });
        return diagnostic;
    }
    if diagnostic.message.starts_with("expected a map") {
        if points_at_list_item(source, diagnostic.location) {
            diagnostic.help =
                Some("this is a list item: write `name:` entries without the leading `- `".into());
        } else if let Some(length) = long_key_at(source, diagnostic.location) {
            diagnostic.message = format!(
                "{LONG_KEY} {} characters long; YAML reads keys of at most 1,024 characters without a `? ` before them",
                limits::grouped(length)
            );
            diagnostic.help = Some("shorten the key (RabbitMQ names are at most 255 bytes)".into());
        }
    }
    // Positions are mapped only for a document within the limits: mapping one
    // that is not would cost what the limits are there to prevent.
    if !is_limit(err) && !diagnostic.code.starts_with("spec-too") {
        let source_map = SourceMap::build(source);
        diagnostic.path = diagnostic
            .location
            .and_then(|location| source_map.path_at(location))
            .filter(|path| !path.is_root());
    }
    diagnostic.hide_secrets(source)
}

/// The error under the wrappers that add alias positions or a snippet.
fn original(mut err: &serde_saphyr::Error) -> &serde_saphyr::Error {
    use serde_saphyr::Error as E;
    while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = err {
        err = error;
    }
    err
}

/// Whether the error is one of the limits on size, nesting or aliases.
fn is_limit(err: &serde_saphyr::Error) -> bool {
    use serde_saphyr::Error as E;
    matches!(
        original(err),
        E::Budget { .. }
            | E::AliasReplayLimitExceeded { .. }
            | E::AliasExpansionLimitExceeded { .. }
            | E::AliasReplayStackDepthExceeded { .. }
            | E::AliasReplayCounterOverflow { .. }
    )
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
    let mut diagnostic = match original(err) {
        E::Budget { breach, .. } => limits::budget_breach(breach),
        E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => limits::alias_expansion(),
        E::MultipleDocuments { .. } => limits::multiple_documents(),
        E::InvalidScalar { ty, .. } => {
            Diagnostic::error("invalid-type", format!("expected {}", scalar_words(ty)))
        }
        E::NullIntoString { .. } => Diagnostic::error(
            "invalid-type",
            "expected text, found an empty value (`~` or nothing)",
        )
        .help("write the name or value out; quote it (`\"~\"`) if it is meant literally"),
        E::NonFiniteFloat { .. } => Diagnostic::error(
            "invalid-value",
            "`.inf` and `.nan` are not numbers RabbitMQ takes",
        )
        .help("write a whole number"),
        E::UnknownAnchor { .. } => Diagnostic::error(
            "unknown-anchor",
            "this `*alias` refers to no `&anchor` defined above it",
        )
        .help("define the anchor (`&name`) on a value before the alias, or write the value out"),
        E::RecursiveReferencesRequireWeakTypes { .. } => Diagnostic::error(
            "recursive-alias",
            "this `*alias` sits inside the value of its own `&anchor`: the value would never end",
        )
        .help("write the value out without referring to itself"),
        // The parser's own cap on nested flow collections (`[[[[…`).
        _ if raw.starts_with("recursion limit exceeded") => limits::too_deep(),
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
        _ if raw.starts_with("tabs disallowed") => Diagnostic::error("yaml-syntax", raw.clone())
            .help("indent with spaces: YAML does not allow tabs in indentation"),
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

/// Whether `source` holds nothing but blank lines and comments.
fn is_empty_document(source: &str) -> bool {
    source
        .lines()
        .map(|line| line.trim_start_matches('\u{feff}').trim())
        .all(|line| line.is_empty() || line.starts_with('#') || line == "---" || line == "...")
}

/// The length of a key longer than YAML's 1,024-character limit on plain keys that
/// starts at `location`, if there is one.
fn long_key_at(source: &str, location: Option<Location>) -> Option<usize> {
    let at = location?;
    let line = source.lines().nth(at.line.checked_sub(1)?)?;
    let rest: String = line.chars().skip(at.column.checked_sub(1)?).collect();
    let key = rest.split(": ").next()?.trim_end_matches(':');
    let length = key.chars().count();
    (length > 1024 && (rest.contains(": ") || rest.ends_with(':'))).then_some(length)
}

/// A Rust number or text type in the words of a YAML author.
fn scalar_words(ty: &str) -> String {
    match ty {
        "u8" => "a whole number from 0 to 255".into(),
        "u16" => "a whole number from 0 to 65,535".into(),
        "u32" => "a whole number from 0 to 4,294,967,295".into(),
        "u64" | "usize" => "a whole number ≥ 0".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "bool" | "boolean" => "`true` or `false`".into(),
        "char" => "a single character".into(),
        other => other.to_string(),
    }
}

/// Rewrites the parser's structural vocabulary in the words of a YAML author.
fn plain_words(expected: &str) -> String {
    match expected {
        "mapping start" | "a mapping" | "map" => "a map (`key: value` entries)".to_string(),
        "string scalar" | "a string" | "string" => "text (a string)".to_string(),
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
